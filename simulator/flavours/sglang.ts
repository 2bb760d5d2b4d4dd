/**
 * SGLang 0.5.23's OpenAI server, answer side (read from the released wheel; docs/engines.md):
 *
 * - Chat, not streamed (`serving_chat.py:2832-3051`, `protocol.py:1293-1351`): per choice
 *   `message.reasoning_content`, `matched_stop`, and with `return_token_ids` `prompt_token_ids`
 *   and `response_token_ids`; `metadata.weight_version`; `sglext` with the `*_in_sglext` flags;
 *   no `system_fingerprint`; the request's `model` echoed.
 * - Chat, streamed (`serving_chat.py:2441-2805`, `sse_utils.py`): `return_token_ids`,
 *   `return_prompt_token_ids` and `return_meta_info` are a 400 (`:1309-1325`); deltas always
 *   carry `reasoning_content`; each choice ends with a finish chunk after the generation; then
 *   one `sglext` chunk (`choices: []`, `usage: null`) with `input_ids` and `output_ids` when
 *   asked (a named `event: sglext_ids` with `x-sglext-ids-framed: 1`); then the usage chunk.
 * - Completions (`serving_completions.py`): per choice `token_ids` and `prompt_token_ids`
 *   (first chunk) with `return_token_ids`; `echo` prepends the prompt text.
 * - Errors (`serving_base.py:119-142`): flat `{"object": "error", "message", "type", "param", "code"}`.
 * - Usage (`usage_processor.py:96-131`): a top-level `reasoning_tokens` (the choices' counts
 *   summed, `:34-36`, `:72`) and `completion_tokens_details: {reasoning_tokens}` only when that
 *   is nonzero, else null; the count is the scheduler's (`sglangReasoningTokens`), read from
 *   the last output's `meta_info` (`serving_chat.py:2504`, `:3695`). Completions never ask for
 *   reasoning (no `require_reasoning`), so they keep 0. SGLang's `continuous_usage_stats` is
 *   not simulated.
 */
import { IM_END } from "../model.ts";
import { chatLogprobs, completionLogprobs, type CompletionTop } from "./logprob-blocks.ts";
import { chunkIds, decodeSteps, finalMessage, finishReasonOf } from "./steps.ts";
import { NamedEvent, type ChatAnswer, type CompletionAnswer, type EngineFlavour, type FlavourContext, type SampledChoice } from "./types.ts";

/**
 * SGLang's error body (flat) and status; `type` is "BadRequest" for a request it refuses.
 *
 * @example
 * sglangError(400, "bad").status // 400
 */
export function sglangError(status: number, message: string, param: string | null = null, type?: string): Response {
  const t = type ?? (status === 400 ? "BadRequest" : status === 404 ? "NotFound" : status === 503 ? "ServiceUnavailable" : "InternalServerError");
  return Response.json({ object: "error", message, type: t, param, code: status }, { status, headers: { "x-forge-simulator": "1" } });
}

/** `matched_stop`: the stop token id that ended generation, or the stop string; null for length. */
function matchedStop(c: SampledChoice): number | string | null {
  if (c.g.finishReason === "length") return null;
  if (c.g.stopReason !== null) return c.g.stopReason;
  return c.g.ids.at(-1) === IM_END ? IM_END : null;
}

/** Qwen3's `</think>`: the `qwen3` reasoning parser's think_end_token, one token (`scheduler.py:946-950`). */
const THINK_END = 151668;

/**
 * The reasoning tokens SGLang's scheduler counts for a request's output `ids`
 * (`Req.reasoning_tokens`, `schedule_batch.py:2240-2283`, asked per sampled token by
 * `batch_result_processor.py:1496-1522`). Only with a reasoning parser at server start
 * (`scheduler.py:940-955` sets `think_end_ids`) and a request that requires reasoning
 * (`require_reasoning`): every output token through the think end, all of them when it never
 * comes (a cut answer). Without `require_reasoning` it counts only reasoning the model opens
 * itself, and the `qwen3` parser has no self-opened start (`reasoning_parser.py:121-125`): 0.
 *
 * @example
 * sglangReasoningTokens([151667, 198, 151668, 271, 9707], true) // 3
 */
export function sglangReasoningTokens(ids: readonly number[], requireReasoning: boolean): number {
  if (!requireReasoning) return 0;
  const end = ids.indexOf(THINK_END);
  return end === -1 ? ids.length : end + 1;
}

/**
 * The chat route's `require_reasoning` (`serving_chat.py:1827`, `:1978`;
 * `_get_reasoning_from_request`, `:3518-3602`): none without a reasoning parser; for `qwen3`
 * (Qwen3's `enable_thinking` toggle, on by default, `reasoning_parser.py:483`) on unless
 * `chat_template_kwargs.enable_thinking` is false. `reasoning_effort` plays no part.
 */
function chatRequiresReasoning(a: ChatAnswer, ctx: FlavourContext): boolean {
  return ctx.thinks && a.body.chat_template_kwargs?.enable_thinking !== false;
}

/** The usage object (`calculate_token_usage`, `usage_processor.py:96-131`). */
function usageOf(u: { prompt_tokens: number; completion_tokens: number; total_tokens: number }, reasoning = 0) {
  return {
    prompt_tokens: u.prompt_tokens,
    total_tokens: u.total_tokens,
    completion_tokens: u.completion_tokens,
    prompt_tokens_details: null,
    reasoning_tokens: reasoning,
    completion_tokens_details: reasoning ? { reasoning_tokens: reasoning } : null,
  };
}

/** A chat answer's usage: its choices' reasoning tokens summed. */
function chatUsage(a: ChatAnswer, ctx: FlavourContext) {
  const require = chatRequiresReasoning(a, ctx);
  return usageOf(a.usage, a.choices.reduce((n, c) => n + sglangReasoningTokens(c.g.ids, require), 0));
}

function ids(c: SampledChoice, holey: boolean | undefined): number[] {
  return holey ? c.g.ids.slice(0, -1) : c.g.ids;
}

/** Whether the request (body or header) asks for the prompt or output ids in sglext. */
function sglextWanted(body: Record<string, any>, request: Request): { input: boolean; output: boolean } {
  return {
    input: body.return_input_ids_in_sglext === true || request.headers.get("x-sglext-return-input-ids") === "1",
    output: body.return_output_ids_in_sglext === true || request.headers.get("x-sglext-return-output-ids") === "1",
  };
}

export const sglangFlavour: EngineFlavour = {
  name: "sglang",
  error: (status, message, param) => sglangError(status, message, param),
  answerId: () => crypto.randomUUID().replaceAll("-", ""),

  checkChat(body, _request) {
    if (!body.stream) return undefined;
    if ((body as any).return_prompt_token_ids === true) {
      return sglangError(400, "return_prompt_token_ids is not supported with streaming. Please set stream=false when using return_prompt_token_ids=true.");
    }
    if (body.return_token_ids === true) {
      return sglangError(
        400,
        "return_token_ids is not supported with streaming on /v1/chat/completions. Please set stream=false when using return_token_ids=true.",
      );
    }
    if ((body as any).return_meta_info === true) return sglangError(400, "return_meta_info is not supported with streaming. Please set stream=false when using return_meta_info=true.");
    return undefined;
  },

  chatJson(a: ChatAnswer, ctx: FlavourContext) {
    const body = a.body as Record<string, any>;
    const returnIds = body.return_token_ids === true;
    const prompt = returnIds || body.return_prompt_token_ids === true;
    const ext = sglextWanted(body, a.request);
    const holey = ctx.engine.faults.holeyIds;
    return {
      id: this.answerId("chat"),
      object: "chat.completion",
      created: a.created,
      model: a.model,
      choices: a.choices.map((c) => {
        const message = finalMessage(c);
        const calls = message.toolCalls.map((call, i) => ({ id: c.callId(i), index: i, type: "function", function: { name: call.name, arguments: call.arguments } }));
        return {
          index: c.index,
          message: { role: "assistant", content: message.content, reasoning_content: message.reasoning ?? null, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
          logprobs: a.body.logprobs ? chatLogprobs(a.tokenizer, c.logprobs) : null,
          finish_reason: finishReasonOf(c),
          matched_stop: matchedStop(c),
          ...(prompt ? { prompt_token_ids: a.promptIds } : {}),
          ...(returnIds ? { response_token_ids: ids(c, holey) } : {}),
        };
      }),
      usage: chatUsage(a, ctx),
      metadata: { weight_version: ctx.engine.weightVersion },
      ...(ext.input || ext.output
        ? { sglext: { ...(ext.input ? { input_ids: a.promptIds } : {}), ...(ext.output ? { output_ids: a.choices.map((c) => ids(c, holey)) } : {}) } }
        : {}),
    };
  },

  async *chatStream(a: ChatAnswer, ctx: FlavourContext) {
    const body = a.body as Record<string, any>;
    const head = { id: this.answerId("chat"), object: "chat.completion.chunk", created: a.created, model: a.model };
    const chunk = (index: number, delta: Record<string, unknown>, logprobs: unknown = null, finish: string | null = null, matched: number | string | null = null) => ({
      ...head,
      choices: [{ index, delta: { reasoning_content: null, ...delta }, logprobs, finish_reason: finish, matched_stop: matched }],
    });
    for (const c of a.choices) yield chunk(c.index, { role: "assistant", content: "" });
    const holey = ctx.engine.faults.holeyIds;
    const streamed = a.choices.map(() => [] as number[]);
    for await (const { choice: c, delta: d, k } of decodeSteps(ctx, a.choices, a.request.signal)) {
      streamed[c.index]!.push(...chunkIds(c, d.start, d.end, k, holey));
      let logprobs: unknown = a.body.logprobs ? chatLogprobs(a.tokenizer, c.logprobs.slice(d.start, d.end)) : null;
      const take = () => {
        const l = logprobs;
        logprobs = null;
        return l;
      };
      // One chunk per kind of text, the step's logprobs on the first (serving_chat.py:957-1070).
      if (d.reasoning !== undefined) yield chunk(c.index, { reasoning_content: d.reasoning }, take());
      if (d.content !== undefined) yield chunk(c.index, { content: d.content }, take());
      if (d.toolCalls) {
        yield {
          ...head,
          choices: [
            {
              index: c.index,
              delta: { role: null, content: null, reasoning_content: null, tool_calls: d.toolCalls.map((t) => ({ id: t.id ?? null, index: t.index, type: "function", function: { name: t.function.name ?? null, arguments: t.function.arguments ?? "" } })) },
              logprobs: take(),
              finish_reason: null,
              matched_stop: null,
            },
          ],
          usage: null,
        };
      }
      // A parser is active (qwen3 reasoning, hermes tools): logprobs of a step with no text are flushed alone.
      if (logprobs !== null) yield chunk(c.index, {}, take());
    }
    if (a.request.signal.aborted) return;
    for (const c of a.choices) yield chunk(c.index, {}, null, finishReasonOf(c), matchedStop(c));
    const ext = sglextWanted(body, a.request);
    if (ext.input || ext.output) {
      const sglext = { ...(ext.input ? { input_ids: a.promptIds } : {}), ...(ext.output ? { output_ids: streamed } : {}) };
      const data = { ...head, choices: [], usage: null, sglext };
      yield a.request.headers.get("x-sglext-ids-framed") === "1" ? new NamedEvent("sglext_ids", data) : data;
    }
    if (body.stream_options?.include_usage === true) yield { ...head, choices: [], usage: chatUsage(a, ctx) };
  },

  completionJson(a: CompletionAnswer, ctx: FlavourContext) {
    const body = a.body;
    const returnIds = body.return_token_ids === true;
    const wantLogprobs = body.logprobs !== undefined && body.logprobs !== null;
    const top: CompletionTop = { engine: "sglang", k: body.logprobs ?? 0 };
    return {
      id: this.answerId("completion"),
      object: "text_completion",
      created: a.created,
      model: a.model,
      choices: a.choices.map((c) => ({
        index: c.index,
        text: (body.echo ? a.promptText : "") + c.text,
        logprobs: !wantLogprobs
          ? null
          : body.echo && body.logprobs! > 0
            ? completionLogprobs(a.tokenizer, [...a.promptLogprobs, ...c.logprobs], 0, top, [...a.promptIds, ...c.g.ids])
            : completionLogprobs(a.tokenizer, c.logprobs, 0, top),
        finish_reason: c.g.finishReason,
        matched_stop: matchedStop(c),
        ...(returnIds ? { token_ids: ids(c, ctx.engine.faults.holeyIds), prompt_token_ids: a.promptIds } : {}),
      })),
      usage: usageOf(a.usage),
      metadata: { weight_version: ctx.engine.weightVersion },
    };
  },

  async *completionStream(a: CompletionAnswer, ctx: FlavourContext) {
    const body = a.body;
    const returnIds = body.return_token_ids === true;
    const wantLogprobs = body.logprobs !== undefined && body.logprobs !== null;
    const top: CompletionTop = { engine: "sglang", k: body.logprobs ?? 0 };
    const head = { id: this.answerId("completion"), object: "text_completion", created: a.created, model: a.model };
    for await (const { choice: c, delta: d, k, last } of decodeSteps(ctx, a.choices, a.request.signal)) {
      const echo = k === 0 && body.echo === true;
      yield {
        ...head,
        choices: [
          {
            index: c.index,
            text: (echo ? a.promptText : "") + (d.content ?? ""),
            logprobs: !wantLogprobs
              ? null
              : echo && body.logprobs! > 0
                ? completionLogprobs(a.tokenizer, [...a.promptLogprobs, ...c.logprobs.slice(d.start, d.end)], 0, top, [...a.promptIds, ...c.g.ids.slice(d.start, d.end)])
                : completionLogprobs(a.tokenizer, c.logprobs.slice(d.start, d.end), 0, top),
            finish_reason: last ? c.g.finishReason : null,
            matched_stop: last ? matchedStop(c) : null,
            ...(returnIds ? { token_ids: chunkIds(c, d.start, d.end, k, ctx.engine.faults.holeyIds), ...(k === 0 ? { prompt_token_ids: a.promptIds } : {}) } : {}),
          },
        ],
        usage: null,
      };
    }
    if (body.stream_options?.include_usage === true) yield { ...head, choices: [], usage: usageOf(a.usage) };
  },
};
