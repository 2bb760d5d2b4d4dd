import { beforeAll, describe, expect, test } from "bun:test";
import { chatStreamDerenderer, loadModel, type Model } from "../../model/index.ts";
import { parseSseText } from "../../lib/testing.ts";
import { parseAnswer } from "../capture/answer-json.ts";
import { chunkSourceOf, type ChunkSource } from "../capture/chunk-source.ts";
import { captureAndStrip, emptyAfterStrip, newCapture, type HarnessWants, type TokenCapture } from "../capture/tokens.ts";
import { chatJsonAnswer, chatStreamResponse, type ChatAnswerContext } from "./chat-answer.ts";
import { engineAnswerReader } from "./engine-answer.ts";

let model: Model;
beforeAll(async () => {
  model = await loadModel();
});

const tools = [{ type: "function", function: { name: "read", parameters: { type: "object", properties: { path: { type: "string" } } } } }];
const PROMPT = Array.from({ length: 3000 }, (_, i) => 100 + i);

function context(prompt: readonly number[], logprobs: boolean, topLogprobs = 0): ChatAnswerContext {
  const promptText = JSON.stringify(prompt);
  const memo = { text: promptText, ids: Uint32Array.from(prompt), ends: new Uint32Array(0) } as never;
  return {
    model,
    options: { tools, promptTokenIds: prompt } as never,
    modelName: "qwen3",
    prompt,
    promptText,
    idsMemo: memo,
    logprobs,
    topLogprobs,
    reader: engineAnswerReader("vllm", { top: logprobs }),
    onAnswer: () => {},
  };
}

/**
 * How the engine gives the sampled ids: as token-in mode asks vLLM (`return_tokens_as_token_ids`:
 * `token_id:N` in the logprobs' tokens, no prompt echo), as `return_token_ids` would (`token_ids`,
 * the prompt echoed first), or as an engine that ignored the flag (the tokens' texts).
 */
type IdsFormat = "placeholders" | "token_ids" | "texts";

/** vLLM 0.33.0's /v1/completions stream for `ids`, `step` tokens per event, cut into reads of `cut` bytes. */
function engineStream(ids: number[], step: number, cut: number, frame: (text: string) => string = (t) => t, format: IdsFormat = "placeholders"): ReadableStream<Uint8Array> {
  let text = "";
  for (let i = 0; i < ids.length; i += step) {
    const last = i + step >= ids.length;
    const tokens = ids.slice(i, i + step);
    const names = tokens.map((id) => (format === "texts" ? model.tokenizer.decode([id]) : format === "placeholders" ? `token_id:${id}` : ""));
    const choice = { index: 0, text: "", logprobs: { token_logprobs: tokens.map((_, k) => (i + k === 2 ? null : -0.25 * k)), tokens: format === "token_ids" ? [] : names, text_offset: [], top_logprobs: null }, finish_reason: last ? "stop" : null, stop_reason: null, token_ids: format === "token_ids" ? tokens : null, ...(last ? { weight_versions: [{ version: "v3", start: 0, end: ids.length }] } : {}) };
    text += `data: ${JSON.stringify({ id: "cmpl-1", object: "text_completion", created: 1, model: "qwen3", choices: [choice], ...(i === 0 && format === "token_ids" ? { prompt_token_ids: PROMPT } : {}) })}\n\n`;
  }
  text += `data: ${JSON.stringify({ id: "cmpl-1", object: "text_completion", created: 1, model: "qwen3", choices: [], usage: { prompt_tokens: PROMPT.length, completion_tokens: ids.length, total_tokens: PROMPT.length + ids.length } })}\n\ndata: [DONE]\n\n`;
  const bytes = new TextEncoder().encode(frame(text));
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + cut));
      at += cut;
    },
  });
}

/** What the pipeline sends the harness for one event (proxy/doors/stream-answer.ts, passthrough). */
function harnessEvent(chunk: any, original: string | undefined, capture: TokenCapture, wants: HarnessWants): string {
  const changed = captureAndStrip("chat", chunk, capture, wants);
  if (!changed) return `data: ${original ?? JSON.stringify(chunk)}\n\n`;
  return emptyAfterStrip(chunk) ? "" : `data: ${JSON.stringify(chunk)}\n\n`;
}

/** What the pipeline sends the harness for a source's events (as objects), and what it captured. */
async function harnessSees(source: ChunkSource, wants: HarnessWants): Promise<{ text: string; capture: TokenCapture }> {
  const capture = newCapture();
  let text = "";
  for (let next = await source.read(); !next.done; next = await source.read()) {
    for (const item of next.value.items) text += item === "[DONE]" ? "[DONE]" : harnessEvent(item, undefined, capture, wants);
  }
  return { text, capture };
}

/** The Chat chunks (with choices) of what the harness was sent. */
const chunksOf = (text: string): any[] => parseSseText(text).flatMap(({ data }) => (data.startsWith("{") ? [JSON.parse(data)] : [])).filter((c) => c.choices?.length);

/** The answer a harness's chunks add up to: contents, reasoning, each tool call's name and arguments, the finish reason. */
function addedUp(text: string): { content: string; reasoning: string; toolCalls: { name: string; arguments: string }[]; finish: string | null } {
  const answer = { content: "", reasoning: "", toolCalls: [] as { name: string; arguments: string }[], finish: null as string | null };
  for (const choice of chunksOf(text).map((c) => c.choices[0])) {
    answer.content += choice.delta.content ?? "";
    answer.reasoning += choice.delta.reasoning ?? "";
    for (const t of choice.delta.tool_calls ?? []) {
      const call = (answer.toolCalls[t.index] ??= { name: "", arguments: "" });
      call.name += t.function?.name ?? "";
      call.arguments += t.function?.arguments ?? "";
    }
    answer.finish = choice.finish_reason ?? answer.finish;
  }
  return answer;
}

/** The ids and clock a stream draws for itself, which two streams never share. */
const unstable = (s: string) => s.replace(/chatcmpl-(tool-)?[0-9a-f]+/g, "ID").replace(/"created":\d+/g, '"created":T');

describe("chatStreamResponse: the chunk objects and the bytes are the same answer", () => {
  const answer = () => [...model.tokenizer.encode('<think>\nLet me read it.\n</think>\n\nReading.<tool_call>\n{"name": "read", "arguments": {"path": "stock.csv"}}\n</tool_call>'), 151645];
  for (const [step, cut, logprobs, format] of [
    [1, 4096, false, "placeholders"],
    [3, 97, true, "token_ids"],
    [8, 1, false, "placeholders"],
  ] as const) {
    test(`${step} tokens per engine event, reads of ${cut} bytes, logprobs ${logprobs}, the ids as ${format}`, async () => {
      const ids = answer();
      const wants: HarnessWants = { tokenIds: false, logprobs, usage: false };
      // The bytes, as a reader that is not the pipeline gets them, then parsed as the pipeline parses an engine's.
      const c1 = context(PROMPT, logprobs);
      const text = await chatStreamResponse(c1, engineStream(ids, step, cut, undefined, format)).text();
      const viaBytes = newCapture();
      let fromBytes = "";
      for (const { data } of parseSseText(text)) fromBytes += data === "[DONE]" ? "[DONE]" : harnessEvent(parseAnswer(data, wants, c1.idsMemo), data, viaBytes, wants);
      // The objects, as the pipeline takes them.
      const c2 = context(PROMPT, logprobs);
      const source = chunkSourceOf(chatStreamResponse(c2, engineStream(ids, step, cut, undefined, format)))!;
      expect(source).toBeDefined();
      const { text: fromObjects, capture: viaObjects } = await harnessSees(source, wants);
      // Each stream draws its own ids and reads the clock for `created`: under load the two can
      // fall in different seconds (CI failed on that once), so neither is compared.
      expect(unstable(fromObjects)).toBe(unstable(fromBytes));
      expect(fromObjects).toContain('"tool_calls"');
      expect(viaObjects.completionTokenIds).toEqual(ids);
      expect(viaObjects.completionTokenIds).toEqual(viaBytes.completionTokenIds);
      expect(viaObjects.completionLogprobs).toEqual(viaBytes.completionLogprobs);
      expect([...viaObjects.promptTokenIds!]).toEqual(PROMPT);
      expect([...viaBytes.promptTokenIds!]).toEqual(PROMPT);
      expect(viaObjects.finishReason).toBe(viaBytes.finishReason);
      expect(viaObjects.usage).toEqual(viaBytes.usage);
      expect(viaObjects.weightVersions).toEqual(["v3"]);
      expect(viaBytes.weightVersions).toEqual(["v3"]);
    });
  }

  test("the engine's SSE framing does not change the answer: CRLF line ends, `data:` without its space, comments and event names, non-ASCII text, no blank line at the end", async () => {
    /** What the harness gets, as the pipeline takes the objects: the answer its chunks add up to, and what was captured. */
    const harnessAnswer = async (stream: ReadableStream<Uint8Array>) => {
      const { text, capture } = await harnessSees(chunkSourceOf(chatStreamResponse(context(PROMPT, true), stream))!, { tokenIds: true, logprobs: true, usage: true });
      return { answer: addedUp(text), ids: capture.completionTokenIds, logprobs: capture.completionLogprobs, usage: capture.usage };
    };
    const ids = answer();
    const plain = await harnessAnswer(engineStream(ids, 2, 4096));
    expect(plain.ids).toEqual(ids);
    expect(plain.answer.toolCalls).toEqual([{ name: "read", arguments: '{"path": "stock.csv"}' }]);
    const framings: ((t: string) => string)[] = [
      (t) => t.replaceAll("\n", "\r\n"),
      (t) => t.replaceAll("data: ", ": keep-alive\nevent: message\ndata:"),
      (t) => t.replaceAll('"text":""', '"text":"é"').replace(/\n\n$/, ""),
    ];
    for (const frame of framings) {
      // The reads cut the events into steps differently (the events of a read are one step): the answer is the same.
      for (const cut of [1, 7, 4096]) expect(await harnessAnswer(engineStream(ids, 2, cut, frame))).toEqual(plain);
    }
  });

  test("the events of one read are one step, as vLLM merges the outputs its chat route has not taken yet: one chunk per read, every id and logprob in order", async () => {
    const ids = answer();
    /** The chunks vLLM's chat route sends for these steps: one per step with a delta, and the last. */
    const derendered = (steps: number[][]) => {
      const d = chatStreamDerenderer(model, { tools, promptTokenIds: PROMPT } as never);
      return steps.map((s, i) => d.push(s, i === steps.length - 1 ? { reason: "stop", stopToken: true } : undefined).delta).filter((delta, i) => delta !== null || i === steps.length - 1);
    };
    const wants: HarnessWants = { tokenIds: true, logprobs: true, usage: true };
    // The whole engine stream in one read: the answer's ids derendered as one step, one chunk after the role chunk.
    const whole = await harnessSees(chunkSourceOf(chatStreamResponse(context(PROMPT, true), engineStream(ids, 1, 1 << 20)))!, wants);
    const wholeDeltas = chunksOf(whole.text).slice(1).map((c) => c.choices[0].delta);
    expect(wholeDeltas.length).toBe(derendered([ids]).length);
    expect(wholeDeltas.length).toBe(1);
    expect(whole.capture.completionTokenIds).toEqual(ids);
    // A byte per read: each event is a step of its own, as before.
    const byByte = await harnessSees(chunkSourceOf(chatStreamResponse(context(PROMPT, true), engineStream(ids, 1, 1)))!, wants);
    expect(chunksOf(byByte.text).length - 1).toBe(derendered(ids.map((id) => [id])).length);
    expect(byByte.capture.completionTokenIds).toEqual(ids);
    expect(byByte.capture.completionLogprobs).toEqual(whole.capture.completionLogprobs);
    expect(addedUp(byByte.text)).toEqual(addedUp(whole.text));
  });

  test("an engine that ignored return_tokens_as_token_ids (the tokens' texts, no token_ids): the stream ends in an error naming it, nothing is captured as sampled", async () => {
    const { text, capture } = await harnessSees(chunkSourceOf(chatStreamResponse(context(PROMPT, false), engineStream(answer(), 2, 4096, undefined, "texts")))!, { tokenIds: true, logprobs: false, usage: true });
    const events = parseSseText(text).map((e) => JSON.parse(e.data));
    // The role chunk, then the error (as for an engine abort).
    expect(events).toHaveLength(2);
    expect(events[0].choices[0].delta).toEqual({ role: "assistant", content: "" });
    expect(events[1].error.code).toBe("upstream_bad_stream");
    expect(events[1].error.message).toContain('logprobs.tokens[0] is "<think>", not "token_id:N": the engine ignored return_tokens_as_token_ids');
    expect(capture.completionTokenIds).toEqual([]);
  });

  test("a Response whose bytes were read offers no objects; the bytes carry the prompt ids as JSON", async () => {
    const response = chatStreamResponse(context(PROMPT, false), engineStream(answer(), 4, 4096));
    const text = await response.text();
    expect(chunkSourceOf(response)).toBeUndefined();
    const first = JSON.parse(parseSseText(text)[0]!.data);
    expect(first.prompt_token_ids).toEqual(PROMPT);
  });
});

describe("chatJsonAnswer: a whole engine answer", () => {
  /** vLLM's non-streamed /v1/completions answer for `ids`, the tokens named as `names` writes them. */
  const engineJson = (ids: number[], names: (id: number) => string) =>
    JSON.stringify({ id: "cmpl-1", object: "text_completion", created: 1, model: "qwen3", choices: [{ index: 0, text: "", logprobs: { text_offset: ids.map(() => 0), token_logprobs: ids.map(() => -0.5), tokens: ids.map(names), top_logprobs: null }, finish_reason: "stop", stop_reason: null, token_ids: null, prompt_token_ids: null }], usage: { prompt_tokens: PROMPT.length, completion_tokens: ids.length, total_tokens: PROMPT.length + ids.length } });
  const ids = () => [...model.tokenizer.encode("<think>\nok\n</think>\n\nHello there."), 151645];

  test("the ids read from token_id:N are the answer's, the prompt is the proxy's own", () => {
    const answer = JSON.parse(chatJsonAnswer(context(PROMPT, false), engineJson(ids(), (id) => `token_id:${id}`)));
    expect(answer.choices[0].message.content).toBe("\n\nHello there.");
    expect(answer.choices[0].message.reasoning).toBe("\nok\n");
    expect(answer.choices[0].token_ids).toEqual(ids());
    expect(answer.prompt_token_ids).toEqual(PROMPT);
  });

  test("top_logprobs as vLLM's chat route cuts the candidates: the first top_logprobs of them (the completions route sends one more), none for 0, all for -1", () => {
    // Each position's candidates as vLLM's /v1/completions sends them for `logprobs: 2`: the sampled token, then the two most likely but it.
    const out = ids();
    const body = JSON.parse(engineJson(out, (id) => `token_id:${id}`));
    body.choices[0].logprobs.top_logprobs = out.map((id) => ({ [`token_id:${id}`]: -0.5, "token_id:0": -1, "token_id:30": -2 }));
    const tops = (topLogprobs: number) => JSON.parse(chatJsonAnswer(context(PROMPT, true, topLogprobs), JSON.stringify(body))).choices[0].logprobs.content.map((e: any) => e.top_logprobs.map((t: any) => t.token));
    expect(tops(2)).toEqual(out.map((id) => [model.tokenizer.decode([id]), "!"]));
    expect(tops(0)).toEqual(out.map(() => []));
    expect(tops(-1)).toEqual(out.map((id) => [model.tokenizer.decode([id]), "!", "?"]));
  });

  test("an engine that ignored return_tokens_as_token_ids: an error body naming it, not an empty answer", () => {
    const answer = JSON.parse(chatJsonAnswer(context(PROMPT, false), engineJson(ids(), (id) => model.tokenizer.decode([id]))));
    expect(answer.error.code).toBe("upstream_bad_body");
    expect(answer.error.message).toContain('logprobs.tokens[0] is "<think>", not "token_id:N"');
  });
});

describe("usage: vLLM 0.33.0's chat route's, with the reasoning-token count of a server started with --reasoning-parser qwen3", () => {
  const reasoning = () => model.tokenizer.encode("\nLet me read it.\n");
  const ids = () => [151667, ...reasoning(), ...model.tokenizer.encode("</think>\n\nReading."), 151645];
  const withOptions = (c: ChatAnswerContext, extra: Record<string, unknown>): ChatAnswerContext => ({ ...c, options: { ...c.options, ...extra } as never });
  const engineJson = (out: number[]) =>
    JSON.stringify({ id: "cmpl-1", object: "text_completion", created: 1, model: "qwen3", choices: [{ index: 0, text: "", logprobs: { text_offset: out.map(() => 0), token_logprobs: out.map(() => -0.5), tokens: out.map((id) => `token_id:${id}`), top_logprobs: null }, finish_reason: "stop", stop_reason: null, token_ids: null, prompt_token_ids: null }], usage: { prompt_tokens: PROMPT.length, completion_tokens: out.length, total_tokens: PROMPT.length + out.length } });
  /** The usage of every chunk a stream sends (continuous_usage_stats asked), and whether it had choices. */
  const streamUsages = async (c: ChatAnswerContext) => {
    const text = await chatStreamResponse({ ...c, continuousUsage: true }, engineStream(ids(), 2, 4096)).text();
    return parseSseText(text)
      .filter((e) => e.data !== "[DONE]")
      .map((e) => JSON.parse(e.data))
      .map((chunk) => ({ choices: chunk.choices.length, usage: chunk.usage }));
  };

  test("not streamed: every field (model_dump), completion_tokens_details.reasoning_tokens the think block's tokens", () => {
    const usage = JSON.parse(chatJsonAnswer(context(PROMPT, false), engineJson(ids()))).usage;
    expect(usage).toEqual({ prompt_tokens: PROMPT.length, total_tokens: PROMPT.length + ids().length, completion_tokens: ids().length, prompt_tokens_details: null, completion_tokens_details: { reasoning_tokens: reasoning().length } });
    expect(Object.keys(usage)).toEqual(["prompt_tokens", "total_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details"]);
    const off = JSON.parse(chatJsonAnswer(withOptions(context(PROMPT, false), { chat_template_kwargs: { enable_thinking: false } }), engineJson(ids()))).usage;
    expect(off.completion_tokens_details).toEqual({ reasoning_tokens: 0 });
  });

  test("not streamed, no reasoning parser: completion_tokens_details null", () => {
    const usage = JSON.parse(chatJsonAnswer(withOptions(context(PROMPT, false), { reasoningParser: null }), engineJson(ids()))).usage;
    expect(usage.completion_tokens_details).toBeNull();
  });

  test("streamed with continuous_usage_stats: 0 on the role chunk, then the count so far in each chunk; the usage chunk leaves out what is None", async () => {
    const usages = await streamUsages(context(PROMPT, false));
    expect(usages[0]!.usage).toEqual({ prompt_tokens: PROMPT.length, total_tokens: PROMPT.length, completion_tokens: 0, completion_tokens_details: { reasoning_tokens: 0 } });
    const perChunk = usages.filter((u) => u.choices > 0).map((u) => u.usage.completion_tokens_details.reasoning_tokens as number);
    expect(perChunk.every((n, i) => i === 0 || n >= perChunk[i - 1]!)).toBe(true);
    expect(perChunk.at(-1)).toBe(reasoning().length);
    const last = usages.at(-1)!;
    expect(last.choices).toBe(0);
    expect(last.usage).toEqual({ prompt_tokens: PROMPT.length, total_tokens: PROMPT.length + ids().length, completion_tokens: ids().length, completion_tokens_details: { reasoning_tokens: reasoning().length } });
  });

  test("streamed, no reasoning parser: null in each chunk, none in the usage chunk", async () => {
    const usages = await streamUsages(withOptions(context(PROMPT, false), { reasoningParser: null }));
    expect(usages.slice(0, -1).every((u) => u.usage.completion_tokens_details === null)).toBe(true);
    expect(Object.keys(usages.at(-1)!.usage)).toEqual(["prompt_tokens", "total_tokens", "completion_tokens"]);
  });
});
