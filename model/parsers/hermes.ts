/**
 * The `hermes` tool parser (also `qwen3_json`) of vLLM 0.33.0
 * (`vllm/tool_parsers/hermes_tool_parser.py`, `Hermes2ProToolParser`): tool calls as
 * `<tool_call>{"name": …, "arguments": …}</tool_call>`, the format of Qwen3's chat template.
 * Written from that source; behaviour, not code, is copied:
 *
 * - non-streaming: every `<tool_call>…</tool_call>` (or an unterminated last one) is read with
 *   `json.loads`; the arguments come back as `json.dumps(arguments, ensure_ascii=False)`;
 *   content is the text before the first `<tool_call>` (null when empty); if any call fails
 *   to parse (bad JSON, no name or arguments, a name that is not a string) nothing is a call
 *   and the whole output is content;
 * - streaming: the whole text so far is re-read on each delta; content up to a possible
 *   `<tool_call>` is sent, a call's name once `"name": "…"` is complete, then its arguments
 *   text as it grows (the closing `}` of the call held back until the call is complete).
 */
import { pyDumps, tryPyLoads } from "../pyjson.ts";
import { pyRstrip, pyStrip } from "../pystr.ts";
import type { DeltaMessage, DeltaToolCall, ExtractedToolCalls, ParserContext, StreamArgs, ToolCallParser } from "./types.ts";

const START = "<tool_call>";
const END = "</tool_call>";
const CALL = /<tool_call>([\s\S]*?)<\/tool_call>|<tool_call>([\s\S]*)/g;
const NAME = /"name"\s*:\s*"([^"]+)"/;
const ARGUMENTS = /"arguments"\s*:\s*/;

/** Length of the longest prefix of `tag` that ends `text` (a tag that may still be arriving). */
export function partialTagOverlap(text: string, tag: string): number {
  for (let k = Math.min(tag.length - 1, text.length); k > 0; k--) if (text.endsWith(tag.slice(0, k))) return k;
  return 0;
}

/**
 * @example
 * const p = hermesToolParser(ctx);
 * p.extractToolCalls('Sure.<tool_call>\n{"name": "ls", "arguments": {"path":"."}}\n</tool_call>', {});
 * // { toolsCalled: true, toolCalls: [{ id, name: "ls", arguments: '{"path": "."}' }], content: "Sure." }
 */
export function hermesToolParser(ctx: ParserContext): ToolCallParser {
  let sentContent = 0;
  const calls: { name?: string; arguments?: string }[] = [];
  const streamedArgs: string[] = [];

  const extractContent = (text: string): string | null => {
    const sendable = text.includes(START) ? text.indexOf(START) : text.length - partialTagOverlap(text, START);
    if (sendable > sentContent) {
      const content = text.slice(sentContent, sendable);
      sentContent = sendable;
      return content;
    }
    return null;
  };

  const callJsons = (text: string): [string, boolean][] => {
    const out: [string, boolean][] = [];
    let pos = 0;
    for (;;) {
      const start = text.indexOf(START, pos);
      if (start < 0) break;
      const jsonStart = start + START.length;
      const end = text.indexOf(END, jsonStart);
      if (end >= 0) {
        out.push([pyStrip(text.slice(jsonStart, end)), true]);
        pos = end + END.length;
      } else {
        let raw = text.slice(jsonStart);
        const overlap = partialTagOverlap(raw, END);
        if (overlap) raw = raw.slice(0, -overlap);
        const json = pyStrip(raw);
        out.push([json, json ? tryPyLoads(json) !== undefined : false]);
        break;
      }
    }
    return out;
  };

  const argsOf = (json: string, complete: boolean): string | null => {
    const m = ARGUMENTS.exec(json);
    if (!m) return null;
    let raw = json.slice(m.index + m[0].length);
    if (complete) {
      raw = pyRstrip(raw);
      if (raw.endsWith("}")) raw = pyRstrip(raw.slice(0, -1));
    }
    return raw;
  };

  return {
    engineBased: false,

    extractToolCalls(output) {
      if (!output.includes(START)) return { toolsCalled: false, toolCalls: [], content: output };
      const toolCalls = [];
      for (const m of output.matchAll(CALL)) {
        // Python's findall gives "" for an unmatched group; an empty first group falls to the second.
        const body = m[1] ? m[1] : (m[2] ?? "");
        const call = tryPyLoads(body);
        if (!(call instanceof Map) || !call.has("name") || !call.has("arguments")) return { toolsCalled: false, toolCalls: [], content: output };
        const name = call.get("name");
        if (typeof name !== "string") return { toolsCalled: false, toolCalls: [], content: output };
        toolCalls.push({ id: ctx.newToolCallId(), name, arguments: pyDumps(call.get("arguments")!) });
      }
      const content = output.slice(0, output.indexOf(START));
      return { toolsCalled: true, toolCalls, content: content || null };
    },

    extractToolCallsStreaming(args: StreamArgs): DeltaMessage | null {
      const text = args.currentText;
      const content = extractContent(text);
      const deltas: DeltaToolCall[] = [];
      callJsons(text).some(([json, complete], i) => {
        if (i >= calls.length) {
          calls.push({});
          streamedArgs.push("");
        }
        if (calls[i]!.name === undefined) {
          const name = NAME.exec(json)?.[1];
          // Tool i+1 waits until tool i has its name.
          if (!name) return true;
          calls[i]!.name = name;
          deltas.push({ index: i, type: "function", id: ctx.newToolCallId(), function: { name } });
        }
        const argsText = argsOf(json, complete);
        if (argsText !== null && argsText.length > streamedArgs[i]!.length) {
          const diff = argsText.slice(streamedArgs[i]!.length);
          streamedArgs[i] = argsText;
          calls[i]!.arguments = argsText;
          if (diff) deltas.push({ index: i, function: { arguments: diff } });
        }
        return false;
      });
      if (content || deltas.length > 0) return { content, toolCalls: deltas };
      return null;
    },

    remainingUnstreamedArgs() {
      if (calls.length === 0) return "";
      const i = calls.length - 1;
      const expected = calls[i]!.arguments ?? "{}";
      const actual = streamedArgs[i] ?? "";
      return expected.startsWith(actual) ? expected.slice(actual.length) : "";
    },
  };
}
