/**
 * SGLang 0.5.23's OpenAI server and native API, request side (docs/engines.md).
 *
 * - Chat, not streamed: `return_token_ids` gives each choice `prompt_token_ids` and
 *   `response_token_ids` (`serving_chat.py:2974-3016`).
 * - Chat, streamed: `return_token_ids` is a 400 (`serving_chat.py:1316-1321`); the ids come in a
 *   trailing chunk's `sglext` with `return_input_ids_in_sglext` / `return_output_ids_in_sglext`
 *   (`serving_chat.py:2715-2764`, since 0.5.20).
 * - Completions: `return_token_ids` gives each choice `prompt_token_ids` and `token_ids`, streamed
 *   and not (`serving_completions.py:133,335-347,621-628`); `logprobs: 0` is the sampled token's
 *   logprob (`return_logprob = logprobs is not None`, `:119`).
 */
import type { CaptureKind } from "../capture/tokens.ts";
import type { EngineAdapter } from "./adapter.ts";

/**
 * The SGLang adapter.
 *
 * @example
 * sglangAdapter.trainRequest("chat", { model: "m", messages: [] }).return_token_ids // true
 */
export const sglangAdapter: EngineAdapter = {
  kind: "sglang",
  blanksEchoedPrompt: false,
  trainRequest(capture: CaptureKind, body: Record<string, any>): Record<string, any> {
    const out: Record<string, any> = { ...body };
    const stream = body.stream === true;
    if (capture === "chat") {
      if (stream) {
        out.return_input_ids_in_sglext = true;
        out.return_output_ids_in_sglext = true;
      } else {
        out.return_token_ids = true;
      }
      if (body.logprobs !== true) out.logprobs = true;
    } else {
      out.return_token_ids = true;
      if (typeof body.logprobs !== "number") out.logprobs = 0;
    }
    if (stream && body.stream_options?.include_usage !== true) {
      out.stream_options = { ...(body.stream_options ?? {}), include_usage: true };
    }
    return out;
  },
  samplingDefaults(capture) {
    // Completions' defaults are the request model's (protocol.py CompletionRequest); chat takes
    // temperature, top_p, top_k, min_p and repetition_penalty from the model
    // (`--sampling-defaults model`) and its max_tokens from the context left.
    if (capture === "completions") {
      return {
        temperature: 1,
        top_p: 1,
        top_k: -1,
        min_p: 0,
        max_tokens: 16,
        presence_penalty: 0,
        frequency_penalty: 0,
        repetition_penalty: 1,
        min_tokens: 0,
        n: 1,
        ignore_eos: false,
      };
    }
    return { presence_penalty: 0, frequency_penalty: 0, min_tokens: 0, n: 1, ignore_eos: false };
  },
};

/**
 * A native `POST /generate` body with a token-id prompt (what token-in mode sends SGLang):
 * `input_ids` in, `output_ids` and `meta_info.output_token_logprobs` (`[logprob, id, text]`)
 * out. `echoPrompt` asks `return_prompt_token_ids`, which echoes the prompt ids it ran — in every
 * event of a stream (`tokenizer_manager.py` adds them to each output): only for a prompt the
 * engine changes (images expanded), not for ids it runs as sent. Sampling parameters use
 * SGLang's names (`max_new_tokens`, `sampling_seed`); an unknown one is a 400.
 *
 * @example
 * sglangGenerateRequest([151644, 872], { max_new_tokens: 64, temperature: 1 }).input_ids // [151644, 872]
 */
export function sglangGenerateRequest(
  inputIds: readonly number[],
  samplingParams: SglangSamplingParams = {},
  options: { stream?: boolean; topLogprobs?: number; rid?: string; echoPrompt?: boolean } = {},
): Record<string, unknown> {
  return {
    // The caller's ids as they are (a copy of a long prompt costs more than the rest of the body).
    input_ids: inputIds,
    sampling_params: { skip_special_tokens: false, ...samplingParams },
    return_logprob: true,
    top_logprobs_num: options.topLogprobs ?? 0,
    ...(options.echoPrompt ? { return_prompt_token_ids: true } : {}),
    stream: options.stream === true,
    ...(options.rid ? { rid: options.rid } : {}),
  };
}

/** The fields of SGLang's `SamplingParams` (`sglang/api/v1/api_types.py:177-216`) token-in mode uses. */
export interface SglangSamplingParams {
  max_new_tokens?: number;
  min_new_tokens?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  repetition_penalty?: number;
  stop?: string | string[];
  stop_token_ids?: number[];
  ignore_eos?: boolean;
  skip_special_tokens?: boolean;
  sampling_seed?: number;
  n?: number;
}
