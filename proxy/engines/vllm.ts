/**
 * vLLM 0.33.0's OpenAI server, request side (docs/engines.md). `return_token_ids` gives chat
 * the top-level `prompt_token_ids` (first chunk of a stream) and `choices[i].token_ids` (per
 * chunk), completions both per choice; `logprobs` the sampled tokens' logprobs;
 * `stream_options.include_usage` a final usage chunk. `include_reasoning: false` with a
 * reasoning or tool parser makes vLLM drop `token_ids` and `logprobs` (chat
 * `serving.py:1021-1024`, `stream_processor.py:48-50`), so it is never sent in train mode.
 */
import type { CaptureKind } from "../capture/tokens.ts";
import type { EngineAdapter } from "./adapter.ts";

/**
 * The vLLM adapter.
 *
 * @example
 * vllmAdapter.trainRequest("chat", { model: "m", messages: [] }).return_token_ids // true
 */
export const vllmAdapter: EngineAdapter = {
  kind: "vllm",
  blanksEchoedPrompt: true,
  trainRequest(capture: CaptureKind, body: Record<string, any>): Record<string, any> {
    const out: Record<string, any> = { ...body, return_token_ids: true };
    if (capture === "chat") {
      if (body.logprobs !== true) out.logprobs = true;
      // The harness's wish to get no reasoning is kept by the proxy (capture/tokens.ts strips it).
      if (body.include_reasoning === false) delete out.include_reasoning;
    } else if (typeof body.logprobs !== "number") {
      // Completions take the number of top alternatives; 0 gives the sampled token's logprob.
      out.logprobs = 0;
    }
    if (body.stream === true && body.stream_options?.include_usage !== true) {
      out.stream_options = { ...(body.stream_options ?? {}), include_usage: true };
    }
    return out;
  },
  samplingDefaults(capture) {
    // Chat and completions take temperature, top_p, top_k, min_p and the penalties from the
    // model's generation_config (`--generation-config auto`, protocol.py to_sampling_params);
    // chat's max_tokens is what the context leaves. Fixed: completions' 16 tokens, n = 1.
    return capture === "completions" ? { max_tokens: 16, n: 1, min_tokens: 0, ignore_eos: false } : { n: 1, min_tokens: 0, ignore_eos: false };
  },
};

/**
 * A `/v1/completions` body whose prompt is token ids (what token-in mode sends vLLM): the ids
 * go in unchanged (no BOS is added to an id prompt); `logprobs: 0` with
 * `return_tokens_as_token_ids` gives each sampled token as `token_id:N` in `logprobs.tokens`
 * beside its logprob. Not `return_token_ids`: it echoes the whole prompt on every call (the
 * proxy's own ids, tens of KB the engine writes and the proxy reads back for nothing).
 *
 * @example
 * vllmTokenCompletionRequest("m", [151644, 872], { max_tokens: 64, temperature: 1 }, { stream: true }).prompt // [151644, 872]
 */
export function vllmTokenCompletionRequest(
  model: string,
  promptIds: readonly number[],
  sampling: Record<string, unknown> = {},
  options: { stream?: boolean; logprobs?: number } = {},
): Record<string, unknown> {
  return {
    model,
    // The caller's ids as they are (a copy of a long prompt costs more than the rest of the body).
    prompt: promptIds,
    ...sampling,
    logprobs: options.logprobs ?? 0,
    return_tokens_as_token_ids: true,
    // Special tokens (<tool_call>, <think>) stay in the text the proxy parses.
    skip_special_tokens: false,
    ...(options.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
}
