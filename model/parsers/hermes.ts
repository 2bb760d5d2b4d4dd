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
import { isPySpace } from "../pystr.ts";
import type { DeltaMessage, DeltaToolCall, ExtractedToolCalls, ParserContext, StreamArgs, ToolCallParser } from "./types.ts";

const START = "<tool_call>";
const END = "</tool_call>";
const CALL = /<tool_call>([\s\S]*?)<\/tool_call>|<tool_call>([\s\S]*)/g;
const NAME_G = /"name"\s*:\s*"([^"]+)"/g;
const ARGUMENTS_G = /"arguments"\s*:\s*/g;

/** The first match of a global regex within text[start, end) (Python's search on that slice). */
function searchIn(re: RegExp, text: string, start: number, end: number): RegExpExecArray | undefined {
  re.lastIndex = start;
  const m = re.exec(text);
  return m && m.index + m[0].length <= end ? m : undefined;
}

/** Python's `str.isspace()` for the character at `i` (ASCII answered without the regex: streaming asks per character per delta). */
function isSpaceAt(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  if (c < 0x80) return c === 0x20 || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
  return isPySpace(text[i]!);
}

/** The bounds of text[start, end) without Python whitespace at its ends. */
function stripBounds(text: string, start: number, end: number, side: "both" | "end" = "both"): [number, number] {
  if (side === "both") while (start < end && isSpaceAt(text, start)) start++;
  while (end > start && isSpaceAt(text, end - 1)) end--;
  return [start, end];
}

/** Length of the longest prefix of `tag` that ends `text` (a tag that may still be arriving). */
export function partialTagOverlap(text: string, tag: string): number {
  return overlapFrom(text, 0, tag);
}

/** `partialTagOverlap(text.slice(from), tag)`, compared in place (no slices: it runs on every delta). */
function overlapFrom(text: string, from: number, tag: string): number {
  const n = text.length;
  for (let k = Math.min(tag.length - 1, n - from); k > 0; k--) {
    const at = n - k;
    let j = 0;
    while (j < k && text.charCodeAt(at + j) === tag.charCodeAt(j)) j++;
    if (j === k) return k;
  }
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
  // Per call: its name once streamed, and the length of the arguments text streamed so far
  // (vLLM keeps the text itself; only its length and whether any was streamed matter).
  // `argsAt`: where its arguments text starts, once that cannot move (see settled).
  const calls: { name?: string; streamed: number; argsSet: boolean; argsAt?: number }[] = [];
  // The text of the last delta: positions found in it hold while each text extends it.
  let lastText = "";
  // The last unterminated call json.loads read whole: the same bounds in a text that extends it are the same text.
  const completeSeen: CompleteSeen = { start: -1, end: -1 };

  // Where `<tool_call>` first starts in the texts since the last reset (-1: not yet), and the
  // length of the last text searched: a text that extends it can only have a first start
  // where the last one had none, so the search goes on from there instead of the whole text.
  let startAt = -1;
  let searched = 0;
  const extractContent = (text: string): string | null => {
    if (startAt < 0) {
      startAt = text.indexOf(START, Math.max(0, searched - START.length + 1));
      searched = text.length;
    }
    const at = startAt;
    const sendable = at >= 0 ? at : text.length - partialTagOverlap(text, START);
    if (sendable > sentContent) {
      const content = text.slice(sentContent, sendable);
      sentContent = sendable;
      return content;
    }
    return null;
  };

  return {
    engineBased: false,

    extractToolCalls: (output) => extractHermesToolCalls(output, ctx),

    extractToolCallsStreaming(args: StreamArgs): DeltaMessage | null {
      const text = args.currentText;
      // vLLM's current text is the previous one and the delta: the same string as the last
      // delta's text says so without comparing them character by character.
      if (args.previousText !== lastText && !text.startsWith(lastText)) {
        for (const call of calls) call.argsAt = undefined;
        completeSeen.start = completeSeen.end = -1;
        startAt = -1;
        searched = 0;
      }
      lastText = text;
      const content = extractContent(text);
      const deltas: DeltaToolCall[] = [];
      callJsons(text, completeSeen).some(({ start, end, complete }, i) => {
        if (i >= calls.length) calls.push({ streamed: 0, argsSet: false });
        const call = calls[i]!;
        if (call.name === undefined) {
          const name = searchIn(NAME_G, text, start, end)?.[1];
          // Tool i+1 waits until tool i has its name.
          if (!name) return true;
          call.name = name;
          deltas.push({ index: i, type: "function", id: ctx.newToolCallId(), function: { name } });
        }
        let a = call.argsAt;
        if (a === undefined) {
          a = searchArgs(text, start, end);
          if (settled(text, a, end)) call.argsAt = a;
        }
        const bounds = argsBounds(text, a, end, complete);
        if (bounds && bounds[1] - bounds[0] > call.streamed) {
          const diff = text.slice(bounds[0] + call.streamed, bounds[1]);
          call.streamed = bounds[1] - bounds[0];
          call.argsSet = true;
          if (diff) deltas.push({ index: i, function: { arguments: diff } });
        }
        return false;
      });
      if (content || deltas.length > 0) return { content, toolCalls: deltas };
      return null;
    },

    remainingUnstreamedArgs() {
      // vLLM compares the last call's arguments with what it streamed of them: the same text
      // once any was streamed, else json.dumps({}) against "".
      if (calls.length === 0) return "";
      return calls.at(-1)!.argsSet ? "" : "{}";
    },
  };
}

/** Bounds of an unterminated call's text that json.loads read whole (-1: none yet). */
type CompleteSeen = { start: number; end: number };

/**
 * Each `<tool_call>` region of the text as bounds [start, end) of its stripped JSON, and
 * whether it is complete. Bounds rather than copies: a long call is re-read on every delta.
 * `seen`: the parser's last complete read, valid for a text that extends the one it was made in.
 */
function callJsons(text: string, seen?: CompleteSeen): { start: number; end: number; complete: boolean }[] {
  const out: { start: number; end: number; complete: boolean }[] = [];
  let pos = 0;
  for (;;) {
    const start = text.indexOf(START, pos);
    if (start < 0) break;
    const jsonStart = start + START.length;
    const end = text.indexOf(END, jsonStart);
    if (end >= 0) {
      const [a, b] = stripBounds(text, jsonStart, end);
      out.push({ start: a, end: b, complete: true });
      pos = end + END.length;
    } else {
      const overlap = overlapFrom(text, Math.max(jsonStart, text.length - END.length), END);
      const [a, b] = stripBounds(text, jsonStart, text.length - overlap);
      let complete = seen !== undefined && seen.start === a && seen.end === b;
      if (!complete && (complete = isCompleteJson(text, a, b)) && seen) {
        seen.start = a;
        seen.end = b;
      }
      out.push({ start: a, end: b, complete });
      break;
    }
  }
  return out;
}

/** Where the arguments text of the call's JSON text[start, end) starts (after `"arguments":`), or undefined. */
function searchArgs(text: string, start: number, end: number): number | undefined {
  const m = searchIn(ARGUMENTS_G, text, start, end);
  return m ? m.index + m[0].length : undefined;
}

/**
 * Whether `searchArgs`'s answer `a` cannot change while the text grows (the call's start stays):
 * the match is followed by a character that is not whitespace inside the call, so its greedy
 * `\s*` is over, and the text up to there stays as it is. Until then it is searched per delta.
 */
function settled(text: string, a: number | undefined, end: number): boolean {
  return a !== undefined && a < end && !JS_SPACE.test(text[a]!);
}
const JS_SPACE = /\s/;

/** The bounds of the arguments text of a call's JSON (from `a`, where `searchArgs` found it), or undefined. */
function argsBounds(text: string, a: number | undefined, end: number, complete: boolean): [number, number] | undefined {
  if (a === undefined) return undefined;
  let b = end;
  if (complete) {
    b = stripBounds(text, a, b, "end")[1];
    if (b > a && text[b - 1] === "}") b = stripBounds(text, a, b - 1, "end")[1];
  }
  return [a, b];
}

/** The non-streaming extraction: every call read with json.loads, or none at all (the whole output is content). */
function extractHermesToolCalls(output: string, ctx: ParserContext): ExtractedToolCalls {
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
}

/**
 * `is_complete_json` of text[start, end): whether json.loads reads it. Streaming asks it on
 * every delta of an unterminated call; a text that opens an object can only be complete when it
 * ends with "}", so most deltas are answered without parsing the whole call again.
 */
function isCompleteJson(text: string, start: number, end: number): boolean {
  if (end <= start) return false;
  if (text[start] === "{" && (text[end - 1] !== "}" || !closesAtEnd(text, start, end))) return false;
  return tryPyLoads(text.slice(start, end)) !== undefined;
}

/**
 * Whether the braces and brackets of text[start, end), outside strings, close exactly at its last
 * character, as they do in any JSON text that opens an object (strings are tracked exactly for
 * valid JSON: a backslash escapes the next character). A necessary condition only: a text that
 * fails it is not JSON and is not handed to json.loads (whose failure throws, on most deltas of
 * an arguments object that ends in "}" before the call does); one that passes is still read.
 */
function closesAtEnd(text: string, start: number, end: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if ((c === 0x7d || c === 0x5d) && --depth === 0) return i === end - 1;
  }
  return false;
}
