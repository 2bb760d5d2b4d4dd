/**
 * What a recorded call sent upstream, rebuilt from its record: the translated body when one
 * was stored, else the harness's body with the train-mode patch applied, else the harness's
 * body as is.
 */
import type { ModelCall } from "../schemas/index.ts";
import { requestBodyOf, upstreamRequestBodyOf, type ContentStore } from "./content-store.ts";

const decoder = new TextDecoder();

/**
 * The upstream request body of `call` as JSON. Bodies stored as references are rebuilt
 * through `store` (see `requestBodyOf`).
 *
 * @example
 * upstreamRequestOf(call, store).return_token_ids // true for a train-mode chat call
 */
export function upstreamRequestOf(call: ModelCall, store: ContentStore): Record<string, unknown> {
  const translated = upstreamRequestBodyOf(call, store);
  if (translated.length > 0) return JSON.parse(decoder.decode(translated));
  const body = JSON.parse(decoder.decode(requestBodyOf(call, store))) as Record<string, unknown>;
  if (call.upstreamRequestPatch.length === 0) return body;
  return { ...body, ...(JSON.parse(decoder.decode(call.upstreamRequestPatch)) as Record<string, unknown>) };
}
