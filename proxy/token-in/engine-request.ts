/**
 * The engine request of a token-in call: the prompt ids and the Chat request's sampling, as
 * vLLM 0.33.0's `/v1/completions` (a token-id `prompt`) or SGLang 0.5.23's native `/generate`
 * (`input_ids`) takes them (docs/engines.md, "Token-id prompts"). A prompt with images goes to
 * SGLang's `/generate` with `image_data` (every image so far, in placeholder order) or to vLLM's
 * `/inference/v1/generate` (`token_ids` + `content_parts`, `return_token_ids`: vLLM's
 * `GenerateRequest`, `entrypoints/scale_out/token_in_token_out/protocol.py`), since vLLM's
 * `/v1/completions` takes no images. Only fields the engine reads
 * are sent: the Chat-only ones (messages, tools, tool_choice, chat_template_kwargs, …) were
 * used to render the prompt and to parse the answer.
 */
import { sglangGenerateRequest, type SglangSamplingParams } from "../engines/sglang.ts";
import { vllmTokenCompletionRequest } from "../engines/vllm.ts";
import type { EngineKind } from "../engines/kinds.ts";
import { idsFrom, type TokenIds } from "../../records/index.ts";

/** Chat request fields vLLM's CompletionRequest takes under the same name. */
const VLLM_SAMPLING = [
  "temperature",
  "top_p",
  "top_k",
  "min_p",
  "presence_penalty",
  "frequency_penalty",
  "repetition_penalty",
  "seed",
  "stop",
  "stop_token_ids",
  "min_tokens",
  "ignore_eos",
  "logit_bias",
  "include_stop_str_in_output",
  "bad_words",
  "allowed_token_ids",
  "structured_outputs",
  "response_format",
  "length_penalty",
  "priority",
  "spaces_between_special_tokens",
  "truncate_prompt_tokens",
  "cache_salt",
] as const;

/** vLLM's `/inference/v1/generate`: token ids with images (served with `--enable-scale-out`). */
export const VLLM_GENERATE_PATH = "/inference/v1/generate";

/** CompletionRequest fields that are not SamplingParams fields (vllm/sampling_params.py): the generate route has no place for them. */
const COMPLETION_REQUEST_ONLY: ReadonlySet<string> = new Set(["response_format", "length_penalty", "priority", "truncate_prompt_tokens", "cache_salt"]);

/** SamplingParams fields a Chat request sets under the same name. */
const VLLM_GENERATE_SAMPLING = VLLM_SAMPLING.filter((k) => !COMPLETION_REQUEST_ONLY.has(k));

/**
 * Where a vLLM engine gets token-in calls: "completions" (`/v1/completions`, every vLLM server;
 * calls with images go to the generate route), or "generate" (`/inference/v1/generate`, served
 * with `--enable-scale-out`: lighter events, no text, and the engine decodes nothing).
 */
export type TokenInRoute = "completions" | "generate";

export interface EngineRequest {
  /** "/v1/completions" (vLLM, and servers not identified), "/generate" (SGLang), or VLLM_GENERATE_PATH (vLLM, a prompt with images, or the generate route). */
  path: string;
  /** The body, its prompt included. */
  body: Record<string, unknown>;
  /** The body with the prompt and images left out (what the record keeps: the prompt is the call's token view, the images are the request's). */
  recorded: Record<string, unknown>;
  /** The body's key the prompt ids go under. */
  promptKey: "prompt" | "input_ids" | "token_ids";
  /** max_tokens as sent (the harness's, or what the context leaves, as the chat route defaults it). */
  maxTokens: number;
}

/**
 * Token ids as a plain array (what JSON bodies take): a Uint32Array copied by index
 * (records' `idsFrom`), an array returned as it is.
 *
 * @example
 * idArray(new Uint32Array([1, 2])) // [1, 2]
 */
export function idArray(ids: TokenIds): readonly number[] {
  return Array.isArray(ids) ? ids : idsFrom(ids, 0);
}

/**
 * The engine body for `prompt` and the Chat request `chat`. The body holds `prompt` as given: a
 * Uint32Array is for a caller that writes the ids into the JSON itself (call.ts: `withIdsText`,
 * under `promptKey`), as JSON.stringify would write it as an object.
 *
 * @example
 * engineRequest("sglang", { model: "m", messages, temperature: 0.6, max_tokens: 64 }, ids, { maxModelLen: 32768, topLogprobs: 0 }).path // "/generate"
 */
export function engineRequest(kind: EngineKind, chat: Record<string, any>, prompt: TokenIds, o: { maxModelLen: number; topLogprobs: number; images?: readonly string[]; expandedLength?: number; route?: TokenInRoute }): EngineRequest {
  const stream = chat.stream === true;
  // The chat route's default: what the context leaves (vLLM and SGLang alike).
  const asked = chat.max_completion_tokens ?? chat.max_tokens;
  // The context the engine sees holds the images' tokens: what it leaves is after their expansion.
  const maxTokens = typeof asked === "number" ? asked : Math.max(1, o.maxModelLen - (o.expandedLength ?? prompt.length));
  const images = o.images && o.images.length > 0 ? o.images : undefined;
  const ids = prompt as number[];
  if (kind === "sglang") {
    const sp: SglangSamplingParams & Record<string, unknown> = { max_new_tokens: maxTokens };
    for (const k of ["temperature", "top_p", "top_k", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "stop", "stop_token_ids", "ignore_eos"] as const) {
      if (chat[k] !== undefined && chat[k] !== null) (sp as Record<string, unknown>)[k] = chat[k];
    }
    if (typeof chat.min_tokens === "number") sp.min_new_tokens = chat.min_tokens;
    if (typeof chat.seed === "number") sp.sampling_seed = chat.seed;
    if (chat.logit_bias && typeof chat.logit_bias === "object") sp.logit_bias = chat.logit_bias;
    const schema = chat.response_format?.type === "json_schema" ? chat.response_format.json_schema?.schema : undefined;
    if (schema !== undefined) sp.json_schema = JSON.stringify(schema);
    // The prompt echoed only where SGLang expands it (images): ids it runs as sent are the proxy's own.
    const body = sglangGenerateRequest(ids, sp, { stream, topLogprobs: o.topLogprobs, echoPrompt: images !== undefined });
    if (images) body.image_data = [...images];
    const { input_ids: _ids, image_data: _images, ...recorded } = body;
    return { path: "/generate", body, recorded, maxTokens, promptKey: "input_ids" };
  }
  if (images || o.route === "generate") return vllmGenerateRequest(chat, ids, images ?? [], maxTokens, o.topLogprobs);
  const sampling: Record<string, unknown> = { max_tokens: maxTokens };
  for (const k of VLLM_SAMPLING) if (chat[k] !== undefined && chat[k] !== null) sampling[k] = chat[k];
  const body = vllmTokenCompletionRequest(String(chat.model ?? ""), ids, sampling, { stream, logprobs: o.topLogprobs });
  const { prompt: _p, ...recorded } = body;
  return { path: "/v1/completions", body, recorded, maxTokens, promptKey: "prompt" };
}

/**
 * vLLM 0.33.0's `GenerateRequest` for a prompt with images, or for any prompt on the generate
 * route (`TokenInRoute`): `token_ids` (one pad per image; vLLM's processor expands them),
 * `content_parts` (`{type: "image_url", url}` per image, in order: `serving.py` resolves them as
 * a chat request's images), `sampling_params` (vLLM's SamplingParams: `logprobs` 0 for the
 * sampled tokens' own, `skip_special_tokens` false, `detokenize` false unless stop strings need
 * the text: the proxy derenders the ids itself, and vLLM's output processor then decodes nothing),
 * `return_token_ids` with images (the prompt it ran, expanded; a text prompt is run as sent),
 * `output_mode` tokens.
 */
function vllmGenerateRequest(chat: Record<string, any>, ids: number[], images: readonly string[], maxTokens: number, topLogprobs: number): EngineRequest {
  const sampling: Record<string, unknown> = { max_tokens: maxTokens };
  for (const k of VLLM_GENERATE_SAMPLING) if (chat[k] !== undefined && chat[k] !== null) sampling[k] = chat[k];
  const schema = chat.response_format?.type === "json_schema" ? chat.response_format.json_schema?.schema : undefined;
  if (schema !== undefined && sampling.structured_outputs === undefined) sampling.structured_outputs = { json: schema };
  sampling.logprobs = topLogprobs;
  sampling.skip_special_tokens = false;
  // SamplingParams refuses stop strings without detokenize (`_verify_args`).
  const stops = typeof sampling.stop === "string" ? [sampling.stop] : Array.isArray(sampling.stop) ? sampling.stop : [];
  if (stops.length === 0) sampling.detokenize = false;
  const stream = chat.stream === true;
  // Built field by field (no spread of optional parts: this runs on every call), in vLLM's order;
  // what is recorded is the same without the ids and the images.
  const body: Record<string, unknown> = {};
  const recorded: Record<string, unknown> = {};
  if (chat.model) body.model = recorded.model = String(chat.model);
  body.token_ids = ids;
  if (images.length > 0) body.content_parts = images.map((url) => ({ type: "image_url", url }));
  body.sampling_params = recorded.sampling_params = sampling;
  if (images.length > 0) body.return_token_ids = recorded.return_token_ids = true;
  body.output_mode = recorded.output_mode = "tokens";
  body.stream = recorded.stream = stream;
  if (stream) body.stream_options = recorded.stream_options = { include_usage: true };
  if (typeof chat.priority === "number") body.priority = recorded.priority = chat.priority;
  if (typeof chat.cache_salt === "string") body.cache_salt = recorded.cache_salt = chat.cache_salt;
  return { path: VLLM_GENERATE_PATH, body, recorded, maxTokens, promptKey: "token_ids" };
}
