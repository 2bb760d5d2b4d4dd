/**
 * What a recorded call sent upstream, rebuilt from its record: the translated body when one
 * was stored, else the harness's body with the train-mode patch applied, else the harness's
 * body as is.
 */
import type { ModelCall } from "../schemas/index.ts";

const decoder = new TextDecoder();

/**
 * The upstream request body of `call` as JSON.
 *
 * @example
 * upstreamRequestOf(call).return_token_ids // true for a train-mode chat call
 */
export function upstreamRequestOf(call: ModelCall): Record<string, unknown> {
  if (call.upstreamRequestBody.length > 0) return JSON.parse(decoder.decode(call.upstreamRequestBody));
  const body = JSON.parse(decoder.decode(call.requestBody)) as Record<string, unknown>;
  if (call.upstreamRequestPatch.length === 0) return body;
  return { ...body, ...(JSON.parse(decoder.decode(call.upstreamRequestPatch)) as Record<string, unknown>) };
}
