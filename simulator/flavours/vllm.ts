/**
 * vLLM 0.33.0's OpenAI server, answer side (read from the released wheel; docs/engines.md):
 *
 * - Chat, not streamed (`chat_completion/protocol.py:76-165`, `serving.py:1059-1154`, sent as
 *   `model_dump()`): every field present, unset ones null; `message.reasoning` (not
 *   `reasoning_content`); `tool_calls` only when there are some; `choices[i].token_ids` and the
 *   top-level `prompt_token_ids` null unless `return_token_ids`.
 * - Chat, streamed (`serving.py:480-913`, chunks `exclude_unset`): a role chunk per choice
 *   carrying `prompt_token_ids` (null unless asked) and `prompt_text`; delta chunks with
 *   `token_ids` (null unless asked) and `kv_transfer_params`; the last one with `stop_reason`
 *   and `weight_versions`, and `system_fingerprint` when no usage chunk follows; the usage chunk
 *   (`exclude_none`) with `choices: []`; `data: [DONE]`.
 * - Completions (`completion/serving.py:298-712`): per choice `prompt_token_ids` (first chunk)
 *   and `token_ids`; `echo` repeats the prompt text, "" when `return_token_ids` is set, and puts
 *   the prompt's logprobs first; `return_tokens_as_token_ids` writes the logprobs' tokens (and
 *   top keys) as `token_id:N` (`_create_completion_logprobs`, text offsets advancing by them).
 * - Usage (`UsageInfo`, `serve/engine/protocol.py:135-140`): `completion_tokens_details` is
 *   `{reasoning_tokens}` on a server with a reasoning parser (the simulated Qwen3's `qwen3`;
 *   `serving.py:165`, `_include_reasoning_tokens_details`), else null: the count the model's
 *   parser gives (model/'s port of `count_reasoning_tokens`), summed over the choices; with
 *   `continuous_usage_stats` each chunk's is its choice's count so far, the role chunk's 0.
 * - Errors (`serve/engine/protocol.py:79-87`): `{"error": {"message", "type", "param", "code"}}`.
 */
import { chatLogprobs, completionLogprobs, type CompletionTop } from "./logprob-blocks.ts";
import { chunkIds, decodeSteps, finalMessage, finishReasonOf } from "./steps.ts";
import type { ChatAnswer, CompletionAnswer, EngineFlavour, FlavourContext, SampledChoice } from "./types.ts";

const FINGERPRINT = "forge-policy-simulator";

/**
 * vLLM's error body and status.
 *
 * @example
 * vllmError(400, "bad").status // 400
 */
export function vllmError(status: number, message: string, param: string | null = null): Response {
  const type =
    status === 404 ? "NotFoundError" : status === 400 ? "BadRequestError" : status === 503 ? "ServiceUnavailableError" : status === 501 ? "NotImplementedError" : "InternalServerError";
  return Response.json({ error: { message, type, param, code: status } }, { status, headers: { "x-forge-simulator": "1" } });
}

function toolCalls(c: SampledChoice) {
  return finalMessage(c).toolCalls.map((call, i) => ({ id: c.callId(i), type: "function", function: { name: call.name, arguments: call.arguments } }));
}

function allIds(c: SampledChoice, holey: boolean | undefined): number[] {
  return holey ? c.g.ids.slice(0, -1) : c.g.ids;
}

/**
 * `weight_versions` with `return_weight_versions`: the label of the weights that sampled the
 * choice's output tokens `[start, end)` (`outputs.py` WeightVersionSpan; vLLM's engine labels
 * every step with its current version, "default" until one is set), else null. The simulator's
 * weights do not change during an answer: one span.
 */
function weightVersions(body: { [key: string]: unknown }, c: SampledChoice, ctx: FlavourContext) {
  if (body.return_weight_versions !== true) return null;
  return weightVersionSpans(ctx, c.g.ids.length);
}

/** A finished output's `weight_versions`: its `tokens` sampled by the weights the engine is labelled with (one span: the simulator's weights change only between requests). */
export function weightVersionSpans(ctx: FlavourContext, tokens: number) {
  return [{ version: ctx.engine.weightVersion, start: 0, end: tokens }];
}

/** `completion_tokens_details` for a reasoning-token count (null: the server has no reasoning parser). */
const details = (reasoning: number | null) => (reasoning === null ? null : { reasoning_tokens: reasoning });

/** A stream chunk's usage with `continuous_usage_stats` (UsageInfo dumped `exclude_unset`: the four fields the route sets). */
function continuousUsage(prompt: number, completion: number, reasoning: number | null) {
  return { prompt_tokens: prompt, total_tokens: prompt + completion, completion_tokens: completion, completion_tokens_details: details(reasoning) };
}

/** The choices' reasoning tokens together (`sum(previous_reasoning_tokens)`), null without a reasoning parser. */
function totalReasoning(counts: (number | null)[]): number | null {
  return counts.some((n) => n === null) ? null : counts.reduce<number>((sum, n) => sum + n!, 0);
}

/** Whether the choices' parsers count reasoning tokens (the server has a reasoning parser): their count of nothing, 0, else null. */
const reasoningBefore = (choices: SampledChoice[]) => totalReasoning(choices.map((c) => c.parser?.reasoningTokens([]) ?? null));

export const vllmFlavour: EngineFlavour = {
  name: "vllm",
  error: vllmError,
  checkChat: () => undefined,
  answerId: (kind) => `${kind === "chat" ? "chatcmpl" : "cmpl"}-${crypto.randomUUID().replaceAll("-", "")}`,

  chatJson(a: ChatAnswer, ctx: FlavourContext) {
    const ids = a.body.return_token_ids === true;
    // Asked after each choice's parse (finalMessage), over all its ids, as the route asks it.
    const reasoning = () => totalReasoning(a.choices.map((c) => (finalMessage(c), c.parser?.reasoningTokens(c.g.ids) ?? null)));
    return {
      id: this.answerId("chat"),
      object: "chat.completion",
      created: a.created,
      model: a.model,
      choices: a.choices.map((c) => {
        const message = finalMessage(c);
        const calls = toolCalls(c);
        return {
          index: c.index,
          message: {
            role: "assistant",
            content: message.content === "" && calls.length > 0 ? null : message.content,
            refusal: null,
            annotations: null,
            audio: null,
            function_call: null,
            ...(calls.length > 0 ? { tool_calls: calls } : {}),
            reasoning: message.reasoning ?? null,
          },
          logprobs: a.body.logprobs ? chatLogprobs(a.tokenizer, c.logprobs) : null,
          finish_reason: finishReasonOf(c),
          stop_reason: c.g.stopReason,
          token_ids: ids ? allIds(c, ctx.engine.faults.holeyIds) : null,
          routed_experts: null,
          weight_versions: weightVersions(a.body, c, ctx),
        };
      }),
      service_tier: null,
      system_fingerprint: FINGERPRINT,
      usage: { ...a.usage, prompt_tokens_details: null, completion_tokens_details: details(reasoning()) },
      prompt_logprobs: null,
      prompt_token_ids: ids ? a.promptIds : null,
      prompt_text: null,
      kv_transfer_params: null,
      ec_transfer_params: null,
      metrics: null,
    };
  },

  async *chatStream(a: ChatAnswer, ctx: FlavourContext) {
    const body = a.body;
    const ids = body.return_token_ids === true;
    const includeUsage = body.stream_options?.include_usage === true;
    const continuous = includeUsage && body.stream_options?.continuous_usage_stats === true;
    const id = this.answerId("chat");
    const head = { id, object: "chat.completion.chunk", created: a.created };
    const promptTokens = a.usage.prompt_tokens;
    const noReasoningYet = reasoningBefore(a.choices);
    for (const c of a.choices) {
      yield {
        ...head,
        choices: [{ index: c.index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }],
        model: a.model,
        prompt_token_ids: ids ? a.promptIds : null,
        prompt_text: null,
        ...(continuous ? { usage: continuousUsage(promptTokens, 0, noReasoningYet) } : {}),
      };
    }
    const generated = a.choices.map(() => 0);
    const reasoning = a.choices.map(() => noReasoningYet);
    for await (const { choice: c, delta: d, k, last } of decodeSteps(ctx, a.choices, a.request.signal)) {
      generated[c.index] = d.end;
      reasoning[c.index] = d.reasoningTokens;
      const delta: Record<string, unknown> = {};
      if (d.reasoning !== undefined) delta.reasoning = d.reasoning;
      if (d.content !== undefined) delta.content = d.content;
      if (d.toolCalls) delta.tool_calls = d.toolCalls;
      const choice: Record<string, unknown> = {
        index: c.index,
        delta,
        logprobs: body.logprobs ? chatLogprobs(a.tokenizer, c.logprobs.slice(d.start, d.end)) : null,
        finish_reason: last ? (d.finishReason ?? finishReasonOf(c)) : null,
        ...(last ? { stop_reason: c.g.stopReason } : {}),
        token_ids: ids ? chunkIds(c, d.start, d.end, k, ctx.engine.faults.holeyIds) : null,
        ...(last ? { weight_versions: weightVersions(body, c, ctx) } : {}),
      };
      yield {
        ...head,
        choices: [choice],
        model: a.model,
        kv_transfer_params: null,
        ...(last && !includeUsage ? { system_fingerprint: FINGERPRINT } : {}),
        // The choice's own count (vLLM's processor.num_output_tokens per choice).
        ...(continuous ? { usage: continuousUsage(promptTokens, generated[c.index]!, d.reasoningTokens) } : {}),
      };
    }
    // The usage chunk is dumped exclude_none: completion_tokens_details only with a reasoning parser.
    const total = totalReasoning(reasoning);
    if (includeUsage) yield { ...head, model: a.model, choices: [], usage: total === null ? a.usage : { ...a.usage, completion_tokens_details: details(total) }, system_fingerprint: FINGERPRINT };
  },

  completionJson(a: CompletionAnswer, ctx: FlavourContext) {
    const body = a.body;
    const ids = body.return_token_ids === true;
    const asTokenIds = body.return_tokens_as_token_ids === true;
    const top: CompletionTop = { engine: "vllm", k: body.logprobs ?? 0 };
    // With return_token_ids vLLM does not detokenize the prompt, so an echo repeats "" (serving.py:590-592).
    const echoText = body.echo ? (ids ? "" : a.promptText) : "";
    return {
      id: this.answerId("completion"),
      object: "text_completion",
      created: a.created,
      model: a.model,
      choices: a.choices.map((c) => ({
        index: c.index,
        text: echoText + c.text,
        logprobs:
          body.logprobs === undefined || body.logprobs === null
            ? null
            : body.echo
              ? completionLogprobs(a.tokenizer, [...a.promptLogprobs, ...c.logprobs], 0, top, [...a.promptIds, ...c.g.ids], asTokenIds)
              : completionLogprobs(a.tokenizer, c.logprobs, 0, top, undefined, asTokenIds),
        finish_reason: c.g.finishReason,
        stop_reason: c.g.stopReason,
        token_ids: ids ? allIds(c, ctx.engine.faults.holeyIds) : null,
        prompt_logprobs: null,
        prompt_token_ids: ids ? a.promptIds : null,
        routed_experts: null,
        weight_versions: weightVersions(body, c, ctx),
      })),
      service_tier: null,
      system_fingerprint: FINGERPRINT,
      usage: { ...a.usage, prompt_tokens_details: null, completion_tokens_details: null },
      kv_transfer_params: null,
      ec_transfer_params: null,
      metrics: null,
    };
  },

  async *completionStream(a: CompletionAnswer, ctx: FlavourContext) {
    const body = a.body;
    const ids = body.return_token_ids === true;
    const asTokenIds = body.return_tokens_as_token_ids === true;
    const top: CompletionTop = { engine: "vllm", k: body.logprobs ?? 0 };
    const id = this.answerId("completion");
    const head = { id, object: "text_completion", created: a.created, model: a.model };
    const offsets = a.choices.map(() => 0);
    for await (const { choice: c, delta: d, k, last } of decodeSteps(ctx, a.choices, a.request.signal)) {
      const echo = k === 0 && body.echo === true;
      const prefix = echo ? (ids ? "" : a.promptText) : "";
      const text = prefix + (d.content ?? "");
      const wantLogprobs = body.logprobs !== undefined && body.logprobs !== null;
      const logprobs = !wantLogprobs
        ? null
        : echo
          ? completionLogprobs(a.tokenizer, [...a.promptLogprobs, ...c.logprobs.slice(d.start, d.end)], offsets[c.index]!, top, [...a.promptIds, ...c.g.ids.slice(d.start, d.end)], asTokenIds)
          : completionLogprobs(a.tokenizer, c.logprobs.slice(d.start, d.end), offsets[c.index]!, top, undefined, asTokenIds);
      yield {
        ...head,
        choices: [
          {
            index: c.index,
            text,
            logprobs,
            finish_reason: last ? c.g.finishReason : null,
            stop_reason: last ? c.g.stopReason : null,
            prompt_token_ids: ids && k === 0 ? a.promptIds : null,
            token_ids: ids ? chunkIds(c, d.start, d.end, k, ctx.engine.faults.holeyIds) : null,
            weight_versions: last ? weightVersions(body, c, ctx) : null,
          },
        ],
      };
      // vLLM advances by the tokens just reported, not by the text (held back for stop strings it lags).
      if (logprobs && logprobs.tokens.length > 0) offsets[c.index] = logprobs.text_offset.at(-1)! + logprobs.tokens.at(-1)!.length;
    }
    if (body.stream_options?.include_usage === true) yield { ...head, choices: [], usage: a.usage };
  },
};
