/**
 * The front doors the proxy serves: one module per protocol (`chat.ts`, `completions.ts`,
 * `anthropic/`, `responses/`), passing through or translating, all driven by the shared
 * pipeline (`pipeline.ts`). A new protocol is one more door in this list.
 */
import { chatFrontDoor } from "./chat.ts";
import { completionsFrontDoor } from "./completions.ts";
import type { FrontDoor, UpstreamProtocol, VendorOptions } from "./types.ts";
import { createAnthropicMessagesDoor } from "./anthropic/door.ts";
import { createResponsesDoor } from "./responses/door.ts";

export const DEFAULT_FRONT_DOORS: readonly FrontDoor[] = [chatFrontDoor, completionsFrontDoor, createAnthropicMessagesDoor(), createResponsesDoor()];

/**
 * Every front door for an upstream protocol: Chat Completions upstreams (vLLM, SGLang) get the
 * translating doors; a vendor upstream (`--upstream-protocol anthropic|responses`, eval-only)
 * gets its own protocol passed through unchanged.
 *
 * @example
 * frontDoorsFor("anthropic", { apiKey: "sk-ant-..." }).map((d) => d.name)
 * // ["chat", "completions", "anthropic_messages", "responses"]
 */
export function frontDoorsFor(upstream: UpstreamProtocol, vendor: VendorOptions = {}): FrontDoor[] {
  if (upstream === "chat") return [...DEFAULT_FRONT_DOORS];
  return [chatFrontDoor, completionsFrontDoor, createAnthropicMessagesDoor(upstream, vendor), createResponsesDoor(upstream)];
}

export { chatFrontDoor, completionsFrontDoor };
export type { DoorRoute, DoorRouteEnv, FrontDoor, PipelineContext, PreparedCall, StreamTranslator, UpstreamProtocol, VendorOptions } from "./types.ts";
export { translatedFrontDoor, type TranslatedCall } from "./translated.ts";
export { runModelCall } from "./pipeline.ts";
