/**
 * Parsing suite: every output of the corpus (tests/reference/parsing-corpus.ts), with the tool
 * parsers hermes and qwen3_coder and thinking on and off, parsed by model/ and by vLLM 0.33.0
 * (the Python oracle): the chat server's non-streamed answer (reasoning, content, tool calls,
 * finish_reason), its stream in chunks of 1, 2, 3, 5 and 8 tokens (every delta, and their sum),
 * and the parsers on their own (`extract_tool_calls`, `extract_reasoning`). Where vLLM's stream
 * adds up to its non-streamed answer, model/'s does too; the suite prints how many outputs vLLM
 * itself answers differently when streaming (model/ follows vLLM there as well).
 *
 * Needs .venv/reference (bash python/build-env.sh); a missing venv fails, never skips.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadModel, type DeltaMessage, type Model } from "../../model/index.ts";
import { completeUtf8, reasoningParserFactory, toolCallParserFactory, type ParserContext } from "../../model/testing.ts";
import { startOracle, type Oracle } from "./oracle.ts";
import { OUTPUTS, TOOLS } from "./parsing-corpus.ts";
import { normalizeDelta, type Answer, type Delta } from "./deltas.ts";

const SLOW = 600_000;
const CHUNKS = [1, 2, 3, 5, 8];
const TOOL_PARSERS = ["hermes", "qwen3_coder"];
let oracle: Oracle;
let model: Model;
const checked = { answers: 0, streams: 0, deltas: 0, toolParsers: 0, reasoningParsers: 0, vllmStreamDiffers: 0 };

beforeAll(async () => {
  [oracle, model] = await Promise.all([startOracle(), loadModel()]);
}, SLOW);
afterAll(async () => {
  await oracle?.close();
  console.log(
    `parsing suite: ${OUTPUTS.length} outputs; ${checked.answers} chat answers, ${checked.streams} streams (${checked.deltas} deltas), ` +
      `${checked.toolParsers} tool-parser and ${checked.reasoningParsers} reasoning-parser results equal vLLM 0.33.0's; ` +
      `${checked.vllmStreamDiffers} streams where vLLM's own stream differs from its non-streamed answer (model/ follows vLLM)`,
  );
});


function merge(deltas: Delta[]): Answer {
  const out: Answer = { reasoning: null, content: null, tool_calls: [] };
  for (const d of deltas) {
    if (d.content) out.content = (out.content ?? "") + d.content;
    if (d.reasoning) out.reasoning = (out.reasoning ?? "") + d.reasoning;
    for (const c of d.tool_calls ?? []) {
      out.tool_calls[c.index] ??= { name: "", arguments: "" };
      out.tool_calls[c.index]!.name += c.name ?? "";
      out.tool_calls[c.index]!.arguments += c.arguments ?? "";
    }
  }
  return out;
}

/**
 * Chunks of n ids with the text vLLM's incremental detokenizer gives them: a token that ends
 * inside a UTF-8 character is held back, whole, until the character completes.
 */
function chunks(ids: number[], n: number): { ids: number[]; text: string }[] {
  const decoder = new TextDecoder();
  const out = [];
  let held: number[] = [];
  for (let i = 0; i < ids.length; i += n) {
    const part = ids.slice(i, i + n);
    let text = "";
    for (const id of part) {
      held.push(...model.tokenizer.tokenBytes(id));
      if (completeUtf8(held)) {
        text += decoder.decode(new Uint8Array(held));
        held = [];
      }
    }
    out.push({ ids: part, text });
  }
  return out;
}

const ctx = (): ParserContext => {
  let n = 0;
  return { tokenId: model.tokenizer.tokenId, specialTokens: model.tokenizer.specialTokens, decodeToken: (id) => model.tokenizer.decode([id]), decode: (ids) => model.tokenizer.decode([...ids]), newToolCallId: () => `call_${n++}` };
};

test("the corpus covers what the issue lists", () => {
  expect(OUTPUTS.length).toBeGreaterThanOrEqual(40);
  for (const word of ["one call", "two calls", "text then a call", "text after", "unterminated", "invalid JSON", "no think block", "XML"]) {
    expect(OUTPUTS.some((o) => o.name.includes(word))).toBe(true);
  }
});

for (const output of OUTPUTS) {
  describe(output.name, () => {
    for (const toolParser of TOOL_PARSERS) {
      for (const thinking of [true, false]) {
        test(
          `${toolParser}, thinking ${thinking ? "on" : "off"}`,
          async () => {
            const request = { messages: [{ role: "user", content: "q" }], tools: TOOLS, chat_template_kwargs: { enable_thinking: thinking } };
            const promptIds = model.renderChatIds(request);
            const ids = model.tokenizer.encode(output.text);
            const hfIds = await oracle.call({ op: "encode", text: output.text });
            expect(ids).toEqual(hfIds.ids);

            // The non-streamed answer.
            const ref = await oracle.call({ op: "vllm_derender", request, ids, prompt_ids: promptIds, tool_parser: toolParser });
            expect(ref.error).toBeUndefined();
            const parser = model.outputParser({ ...request, toolParser, promptTokenIds: promptIds });
            const ours = parser.parse(output.text);
            const want: Answer = {
              reasoning: ref.message.reasoning ?? null,
              content: ref.message.content ?? null,
              tool_calls: (ref.message.tool_calls ?? []).map((t: any) => ({ name: t.function.name, arguments: t.function.arguments })),
            };
            const got: Answer = { reasoning: ours.reasoning, content: ours.content, tool_calls: ours.toolCalls.map((t) => ({ name: t.name, arguments: t.arguments })) };
            expect(got).toEqual(want);
            expect(parser.finishReason("stop", ours.toolCalls.length > 0)).toBe(ref.finish_reason);
            checked.answers++;

            // Streamed: every delta, and what they add up to.
            for (const n of CHUNKS) {
              const refStream = await oracle.call({ op: "vllm_derender", request, ids, prompt_ids: promptIds, tool_parser: toolParser, stream: n });
              expect(refStream.error).toBeUndefined();
              const streamParser = model.outputParser({ ...request, toolParser, promptTokenIds: promptIds });
              const parts = chunks(ids, n);
              const deltas = parts.map((c, i) => normalizeDelta(streamParser.parseDelta(c.text, c.ids, i === parts.length - 1) as DeltaMessage | null));
              const refDeltas = (refStream.deltas as { delta: any }[]).map((d) => normalizeDelta(d.delta));
              expect(deltas).toEqual(refDeltas);
              expect(merge(deltas)).toEqual({ reasoning: refStream.merged.reasoning, content: refStream.merged.content, tool_calls: refStream.merged.tool_calls });
              if (Bun.deepEquals(merge(refDeltas), want)) expect(merge(deltas)).toEqual(got);
              else checked.vllmStreamDiffers++;
              checked.streams++;
              checked.deltas += deltas.length;
            }

            // The parsers on their own.
            if (thinking) {
              const tp = await oracle.call({ op: "parse_tool_calls", parser: toolParser, text: output.text, tools: TOOLS });
              expect(tp.error).toBeUndefined();
              const mine = toolCallParserFactory(toolParser)(ctx(), { tools: TOOLS }).extractToolCalls(output.text, { tools: TOOLS });
              expect({ called: mine.toolsCalled, calls: mine.toolCalls.map((t) => [t.name, t.arguments]), content: mine.content }).toEqual({
                called: tp.tools_called,
                calls: tp.tool_calls.map((t: any) => [t.name, t.arguments]),
                content: tp.content,
              });
              checked.toolParsers++;
            }
            if (toolParser === "hermes") {
              const rp = await oracle.call({ op: "parse_reasoning", parser: "qwen3", text: output.text, enable_thinking: thinking });
              expect(rp.error).toBeUndefined();
              const mine = reasoningParserFactory("qwen3")(ctx(), { chatTemplateKwargs: { enable_thinking: thinking } }).extractReasoning(output.text, {});
              expect(mine).toEqual([rp.reasoning, rp.content]);
              checked.reasoningParsers++;
            }
          },
          SLOW,
        );
      }
    }
  });
}
