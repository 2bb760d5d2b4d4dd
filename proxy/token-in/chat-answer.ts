/**
 * A token-in call's answer as a Chat Completions answer: the engine's sampled ids derendered
 * by model/ (`derenderChat`, `chatStreamDerenderer`: vLLM 0.33.0's detokenizer and parsers),
 * written in vLLM 0.33.0's chat shape (`message.reasoning`, `tool_calls` only when there are
 * some, the stream's role chunk, deltas, finish chunk and usage chunk) with the ids vLLM's chat
 * route gives on `return_token_ids` (`prompt_token_ids`, `choices[0].token_ids`), the
 * logprobs (`choices[0].logprobs.content`) and the usage with its reasoning-token count
 * (`completion_tokens_details`, usage.ts). The pipeline then treats it as any engine's Chat
 * answer: captures the ids, strips what the harness did not ask for, translates it for the
 * Messages and Responses doors, records it (a stream's chunks handed to it as objects,
 * capture/chunk-source.ts).
 */
import { chatStreamDerenderer, derenderChat, type DerenderOptions, type DeltaMessage, type Model } from "../../model/index.ts";
import { createSseDecoder } from "../../lib/index.ts";
import { StepCollector, type EngineAnswerReader, type EngineStep } from "./engine-answer.ts";
import { IDS_PLACEHOLDER, withIdsText } from "./ids-text.ts";
import { idArray } from "./engine-request.ts";
import { contextAfter, logprobTokenText } from "./logprob-tokens.ts";
import { parseAnswer, type IdsMemo } from "../capture/answer-json.ts";
import type { TokenIds } from "../../records/index.ts";
import { chunkSourceResponse, withChunkSource, type ChunkBatch, type ChunkItem, type ChunkSource } from "../capture/chunk-source.ts";
import { answerUsage, continuousUsage, streamUsage } from "./usage.ts";

/** The assistant message the harness was sent (accumulated from a stream's deltas). */
export interface SentAnswer {
  content: string | null;
  reasoning: string | null;
  toolCalls: { name: string; arguments: string }[];
}

export interface ChatAnswerContext {
  model: Model;
  /** The parser options: the Chat request's tools, tool_choice, kwargs, and the prompt ids. */
  options: DerenderOptions;
  /** The model name the answer carries (the request's). */
  modelName: string;
  /** The prompt's ids (the plan's Uint32Array as it is: read by index). */
  prompt: TokenIds;
  /** `prompt` as JSON text, written once per call (the answer carries it as prompt_token_ids). */
  promptText?: string;
  /** The rollout's id memo, holding `promptText` and the prompt's Uint32Array (call.ts): the engine's echo of the prompt is read against it. */
  idsMemo?: IdsMemo;
  /** Whether the harness asked for logprobs (then the entries are full: token, bytes, top_logprobs). */
  logprobs: boolean;
  /**
   * The harness's `top_logprobs` (-1: all): vLLM's chat route gives the first that many of a
   * position's candidates in the engine's order, the sampled token first
   * (`chat_top_logprobs_limit`), where its completions route gives one more
   * (`completion_top_logprobs_limit`) and its generate route all of them.
   */
  topLogprobs: number;
  /**
   * Whether the harness asked `stream_options: {include_usage, continuous_usage_stats}`: vLLM's
   * chat route then puts the usage so far in every chunk (`include_continuous_usage`).
   */
  continuousUsage?: boolean;
  reader: EngineAnswerReader;
  /** Called with what the harness was sent, once the answer is complete. */
  onAnswer(answer: SentAnswer): void;
}

const encoder = new TextEncoder();
const FINGERPRINT = "forge-token-in";
const CHUNK = "chat.completion.chunk";
const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8" };

/**
 * The answer's prompt_token_ids in `json` (written with `promptIdsOf` where they go): the
 * engine's, which are the prompt the proxy sent; then as the text written once for the call
 * (ids-text.ts), which the rollout's id memo holds too, so the pipeline takes the ids from it
 * without parsing them (proxy/token-in/call.ts, chatResponse).
 */
function promptIdsOf(c: ChatAnswerContext, engine: readonly number[] | Uint32Array | undefined): unknown {
  // A plain copy only where the engine's own ids are written (the memo's array, the common case, is not copied).
  const plain = () => (engine instanceof Uint32Array ? idArray(engine) : engine);
  if (c.promptText === undefined) return plain() ?? idArray(c.prompt);
  if (engine === undefined || (c.idsMemo?.ids !== undefined && engine === c.idsMemo.ids)) return IDS_PLACEHOLDER;
  if (engine.length !== c.prompt.length) return plain();
  for (let i = 0; i < engine.length; i++) if (engine[i] !== c.prompt[i]) return plain();
  return IDS_PLACEHOLDER;
}

/** JSON.stringify of an answer object with its prompt ids' text in place. */
function stringifyAnswer(c: ChatAnswerContext, value: Record<string, unknown>): string {
  const json = JSON.stringify(value);
  return value.prompt_token_ids === IDS_PLACEHOLDER ? withIdsText(json, c.promptText!) : json;
}

/**
 * The Chat logprob entries of sampled `ids`, `before` the answer's sampled ids before them (the
 * last few: a token that cuts a UTF-8 character is written as vLLM's engine decodes it,
 * logprob-tokens.ts).
 */
function logprobEntries(c: ChatAnswerContext, ids: readonly number[], logprobs: readonly number[], top: EngineStep["top"] | undefined, before: readonly number[]): Record<string, unknown>[] {
  // What the pipeline records when the harness did not ask for logprobs (the common case, per chunk): the values alone.
  // A logprob the engine did not send (NaN) is written null.
  const logprobAt = (i: number) => (Number.isNaN(logprobs[i]!) ? null : logprobs[i]!);
  if (!c.logprobs) {
    const entries = new Array<{ logprob: number | null }>(ids.length);
    for (let i = 0; i < ids.length; i++) entries[i] = { logprob: logprobAt(i) };
    return entries;
  }
  const decode = (list: number[]) => c.model.tokenizer.decode(list);
  return ids.map((id, i) => {
    const logprob = logprobAt(i);
    const context = contextAfter(before, ids.slice(0, i));
    const token = logprobTokenText(decode, id, context);
    return {
      token,
      logprob,
      bytes: [...encoder.encode(token)],
      top_logprobs: chatCandidates(c, top?.[i]).map((t) => {
        const text = typeof t.token === "number" ? logprobTokenText(decode, t.token, context) : t.token;
        return { token: text, logprob: t.logprob, bytes: [...encoder.encode(text)] };
      }),
    };
  });
}

/** A position's candidates as vLLM's chat route cuts them (the first `topLogprobs`; all for -1). */
function chatCandidates(c: ChatAnswerContext, candidates: NonNullable<EngineStep["top"]>[number] | undefined): NonNullable<EngineStep["top"]>[number] {
  if (!candidates) return [];
  return c.topLogprobs >= 0 && candidates.length > c.topLogprobs ? candidates.slice(0, c.topLogprobs) : candidates;
}

/** The answer's prompt and completion token counts: the engine's usage where it gave one. */
function tokenCounts(c: ChatAnswerContext, completion: number): { prompt: number; completion: number } {
  const u = c.reader.usage();
  return { prompt: u?.prompt_tokens ?? c.prompt.length, completion: u?.completion_tokens ?? completion };
}

/**
 * The Chat answer for a whole engine answer (JSON text in, JSON text out). An engine body that
 * is not JSON or holds an error is returned as it came (the pipeline reports it).
 *
 * @example
 * chatJsonAnswer(ctx, '{"choices":[{"token_ids":[9707,151645],"prompt_token_ids":[…],"finish_reason":"stop","stop_reason":null}]}')
 * // '{"id":"chatcmpl-…","object":"chat.completion",…,"choices":[{"message":{"role":"assistant","content":"Hello",…},"finish_reason":"stop","token_ids":[9707,151645]}],…}'
 */
export function chatJsonAnswer(c: ChatAnswerContext, engineText: string): string {
  let body: any;
  try {
    body = parseAnswer(engineText, undefined, c.idsMemo);
  } catch {
    return engineText;
  }
  if (body?.error !== undefined) return engineText;
  const step = c.reader.read(body);
  if (!step) return JSON.stringify({ error: { message: `the engine's answer has no sampled tokens: ${engineText.slice(0, 200)}`, type: "upstream_error", param: null, code: "upstream_bad_body" } });
  const failed = stepFailure(step, "upstream_bad_body");
  if (failed) return JSON.stringify(failed);
  const finish = step.finish ?? { reason: "stop", stopToken: false, stopReason: null };
  const d = derenderChat(c.model, c.options, step.ids, finish);
  const calls = d.message.toolCalls.map((t) => ({ id: t.id, type: "function", function: { name: t.name, arguments: t.arguments } }));
  c.onAnswer({ content: d.message.content, reasoning: d.message.reasoning, toolCalls: d.message.toolCalls.map((t) => ({ name: t.name, arguments: t.arguments })) });
  return stringifyAnswer(c, {
    id: `chatcmpl-${crypto.randomUUID().replaceAll("-", "")}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: c.modelName,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: d.message.content === "" && calls.length > 0 ? null : d.message.content,
          refusal: null,
          annotations: null,
          audio: null,
          function_call: null,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
          reasoning: d.message.reasoning,
        },
        logprobs: { content: logprobEntries(c, step.ids, step.logprobs, step.top, []) },
        finish_reason: d.finishReason,
        stop_reason: d.stopString ?? (typeof finish.stopReason === "number" ? finish.stopReason : null),
        token_ids: step.ids,
        ...(step.weightVersions ? { weight_versions: step.weightVersions } : {}),
      },
    ],
    system_fingerprint: FINGERPRINT,
    usage: answerUsage(tokenCounts(c, step.ids.length), d.reasoningTokens),
    prompt_token_ids: promptIdsOf(c, step.promptIds),
  });
}

/** The error a step fails the call with: an answer the reader could not read (with `unreadableCode`), or an engine abort. */
function stepFailure(step: EngineStep, unreadableCode: "upstream_bad_stream" | "upstream_bad_body"): { error: Record<string, unknown> } | undefined {
  if (step.unreadable) return { error: { message: step.unreadable, type: "upstream_error", param: null, code: unreadableCode } };
  if (step.finish?.aborted) return { error: { message: step.finish.aborted, type: "upstream_error", param: null, code: "engine_abort" } };
  return undefined;
}

/** Adds a streamed delta to what the harness was sent (the chain's answer, token-in/call.ts). */
function noteSent(sent: SentAnswer, delta: DeltaMessage): void {
  if (delta.content) sent.content = (sent.content ?? "") + delta.content;
  if (delta.reasoning) sent.reasoning = (sent.reasoning ?? "") + delta.reasoning;
  if (!delta.toolCalls) return;
  for (const t of delta.toolCalls) {
    const call = (sent.toolCalls[t.index] ??= { name: "", arguments: "" });
    call.name += t.function?.name ?? "";
    call.arguments += t.function?.arguments ?? "";
  }
}

/** A derendered delta as a Chat chunk's `delta`, as vLLM's chat route streams it. */
function chunkDelta(d: DeltaMessage): Record<string, unknown> {
  const delta: Record<string, unknown> = {};
  if (d.reasoning != null) delta.reasoning = d.reasoning;
  if (d.content != null) delta.content = d.content;
  if (d.toolCalls?.length) {
    delta.tool_calls = d.toolCalls.map((t) => {
      const call: Record<string, unknown> = { index: t.index };
      if (t.id !== undefined) {
        call.id = t.id;
        call.type = "function";
      }
      call.function = { ...t.function };
      return call;
    });
  }
  return delta;
}

/**
 * The Chat stream for an engine stream, as a Response: the pipeline takes its chunk objects
 * (capture/chunk-source.ts: captured, stripped and serialised once there), any other reader
 * gets Chat SSE bytes (`objectsOnly`: the caller takes the objects, and the Response has no
 * body). The engine events of one read are one step (`StepCollector`: vLLM merges the outputs
 * its chat route has not taken yet the same way), derendered as vLLM's chat route streams it; a
 * step whose delta is not sent yet (a tool call's opening tokens) carries its ids and logprobs
 * into the next chunk, so every sampled id is in exactly one chunk. An engine error event is passed
 * on as vLLM writes one (`data: {"error"}`); an engine stream that ends without its last step
 * ends the Chat stream without a finish reason (the pipeline records it as cut).
 *
 * @example
 * return chatStreamResponse(ctx, engineResponse.body!);
 */
export function chatStreamResponse(c: ChatAnswerContext, engine: ReadableStream<Uint8Array>, objectsOnly = false): Response {
  const source = new ChatStreamSource(c, engine);
  if (objectsOnly) return chunkSourceResponse(source, SSE_HEADERS);
  // As bytes, the first chunk's prompt ids are the text written once for the call (ids-text.ts).
  const serialise = (item: ChunkItem) => `data: ${typeof item === "string" ? item : item.prompt_token_ids === promptIdsObject(c) ? stringifyWithPromptText(c, item) : JSON.stringify(item)}\n\n`;
  return withChunkSource(source, serialise, SSE_HEADERS);
}

/** The prompt ids a chunk object carries when they are the call's prompt: the memo's array (the pipeline captures it as is). */
function promptIdsObject(c: ChatAnswerContext): readonly number[] | Uint32Array {
  return c.idsMemo?.ids ?? c.prompt;
}

function stringifyWithPromptText(c: ChatAnswerContext, item: Record<string, unknown>): string {
  if (c.promptText === undefined) {
    const ids = item.prompt_token_ids as readonly number[] | Uint32Array;
    return JSON.stringify({ ...item, prompt_token_ids: ids instanceof Uint32Array ? idArray(ids) : ids });
  }
  return stringifyAnswer(c, { ...item, prompt_token_ids: IDS_PLACEHOLDER });
}

/** One engine event's JSON, or what ends the stream instead: its text when it is no JSON (the pipeline reports it), or its error. */
function engineEvent(c: ChatAnswerContext, data: string): { event: any } | { end: ChunkItem } {
  let event: any;
  try {
    // An engine that echoes the prompt's ids (SGLang's /generate) has them read against the memo, not parsed again.
    event = c.idsMemo ? parseAnswer(data, undefined, c.idsMemo) : JSON.parse(data);
  } catch {
    return { end: data };
  }
  if (event?.error !== undefined && event.error !== null) {
    return { end: { error: typeof event.error === "object" ? event.error : { message: String(event.error), type: "upstream_error", param: null, code: null } } };
  }
  return { event };
}

/**
 * A stream chunk's choice for the steps held until a delta was sent (`before`: the answer's
 * sampled ids written before them), its fields in vLLM's order: the harness gets them
 * serialised as built.
 */
function streamChoice(c: ChatAnswerContext, result: DerenderedStep, step: EngineStep, held: EngineStep, before: readonly number[]): Record<string, unknown> {
  const last = step.finish !== undefined;
  const choice: Record<string, unknown> = {
    index: 0,
    delta: result.delta ? chunkDelta(result.delta) : {},
    logprobs: { content: logprobEntries(c, held.ids, held.logprobs, held.top?.length ? held.top : undefined, before) },
    finish_reason: last ? result.finishReason : null,
  };
  if (last) choice.stop_reason = result.stopString ?? (typeof step.finish!.stopReason === "number" ? step.finish!.stopReason : null);
  choice.token_ids = held.ids;
  if (last && step.weightVersions) choice.weight_versions = step.weightVersions;
  return choice;
}

type DerenderedStep = ReturnType<ReturnType<typeof chatStreamDerenderer>["push"]>;

const readerOf = (engine: ReadableStream<Uint8Array>) => engine.getReader();

/**
 * The Chat chunks of one engine stream, read by read: each read's engine events are read into
 * steps that wait in `pending` and are derendered as one at the read's end (one Chat chunk).
 */
class ChatStreamSource implements ChunkSource {
  // Made at their first use (the first read, the first step), beside the code that uses them at once.
  private reader: ReturnType<typeof readerOf> | undefined;
  private derender: ReturnType<typeof chatStreamDerenderer> | undefined;
  private readonly sse = createSseDecoder();
  private readonly decoderText = new TextDecoder();
  private readonly id = `chatcmpl-${crypto.randomUUID().replaceAll("-", "")}`;
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly sent: SentAnswer = { content: null, reasoning: null, toolCalls: [] };
  // The steps of the events read but not derendered yet, derendered as one at the read's end.
  private readonly pending = new StepCollector();
  private started = false;
  private finished = false;
  private ended = false;
  private drained = false;
  private completion = 0;
  // What a step whose delta is not sent yet (a tool call's opening tokens) carries into the next chunk.
  private readonly held = new StepCollector();
  // The answer's last sampled ids written in a chunk: the context of the next chunk's logprob tokens.
  private recent: number[] = [];

  constructor(
    private readonly c: ChatAnswerContext,
    private readonly engine: ReadableStream<Uint8Array>,
  ) {}

  async read(): Promise<{ done: true } | { done: false; value: ChunkBatch }> {
    let bytes = 0;
    for (;;) {
      if (this.drained) return { done: true };
      const next = await (this.reader ??= readerOf(this.engine)).read();
      const items: ChunkItem[] = [];
      if (next.done) {
        this.drained = true;
        for (const m of [...this.sse.push(this.decoderText.decode()), ...this.sse.flush()]) this.onEvent(m.data, items);
        this.onStep(items);
        // A complete answer whose engine stream ended without [DONE] still ends as a Chat stream does.
        if (this.finished && !this.ended) this.onEvent("[DONE]", items);
        return items.length > 0 ? { done: false, value: { items, bytes } } : { done: true };
      }
      bytes += next.value.byteLength;
      for (const m of this.sse.push(this.decoderText.decode(next.value, { stream: true }))) this.onEvent(m.data, items);
      this.onStep(items);
      // A read that completes no Chat event (a tool call's opening tokens) is not handed on: the next read follows.
      if (items.length > 0) return { done: false, value: { items, bytes } };
    }
  }

  cancel(reason?: unknown): void {
    void (this.reader ?? this.engine).cancel(reason).catch(() => {});
  }

  /** The Chat events for one engine event, appended to `out` (a step waits in `pending` for the read's end). */
  private onEvent(data: string, out: ChunkItem[]): void {
    if (this.ended) return;
    if (data === "[DONE]") {
      this.onStep(out);
      this.ended = true;
      if (this.finished) out.push({ id: this.id, object: CHUNK, created: this.created, model: this.c.modelName, choices: [], usage: streamUsage(tokenCounts(this.c, this.completion), this.derender!.reasoningTokens()), system_fingerprint: FINGERPRINT }, "[DONE]");
      return;
    }
    const parsed = engineEvent(this.c, data);
    if ("end" in parsed) {
      this.onStep(out);
      this.ended = true;
      out.push(parsed.end);
      return;
    }
    const step = this.c.reader.read(parsed.event);
    if (!step || this.finished || this.pending.finished) return;
    if (step.unreadable !== undefined || step.finish?.aborted !== undefined) {
      // A failure ends the stream after what came before it.
      this.onStep(out);
      this.pending.add(step);
      this.onStep(out);
      return;
    }
    this.pending.add(step);
  }

  /** The Chat events for the pending step, appended to `out`. */
  private onStep(out: ChunkItem[]): void {
    const step = this.pending.take();
    if (!step || this.ended) return;
    const c = this.c;
    const d = (this.derender ??= chatStreamDerenderer(c.model, c.options));
    if (!this.started) {
      this.started = true;
      const prompt = promptIdsOf(c, step.promptIds);
      const usage = c.continuousUsage ? { usage: continuousUsage(c.prompt.length, 0, d.reasoningTokens()) } : {};
      out.push({ id: this.id, object: CHUNK, created: this.created, model: c.modelName, choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }], ...usage, prompt_token_ids: prompt === IDS_PLACEHOLDER ? promptIdsObject(c) : prompt });
    }
    const failed = stepFailure(step, "upstream_bad_stream");
    if (failed) {
      this.ended = true;
      out.push(failed);
      return;
    }
    this.completion += step.ids.length;
    const result = d.push(step.ids, step.finish);
    // A step sent at once (the common case) is taken back as it came; held steps are joined.
    this.held.add(step);
    const last = step.finish !== undefined;
    if (!result.delta && !last) return;
    if (result.delta) noteSent(this.sent, result.delta);
    const held = this.held.take()!;
    const choice = streamChoice(c, result, step, held, this.recent);
    if (c.logprobs) this.recent = contextAfter(this.recent, held.ids);
    if (last) {
      this.finished = true;
      c.onAnswer(this.sent);
    }
    const chunk: Record<string, unknown> = { id: this.id, object: CHUNK, created: this.created, model: c.modelName, choices: [choice] };
    if (c.continuousUsage) chunk.usage = continuousUsage(c.prompt.length, this.completion, d.reasoningTokens());
    out.push(chunk);
  }
}
