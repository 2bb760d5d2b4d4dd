/** The adapter of each engine (adapter.ts says what an adapter is). */
import type { EngineAdapter } from "./adapter.ts";
import type { EngineKind } from "./kinds.ts";
import { sglangAdapter } from "./sglang.ts";
import { vllmAdapter } from "./vllm.ts";

/**
 * The adapter of an engine; an unidentified server is asked the vLLM way (the de facto
 * contract of OpenAI-compatible servers that return ids).
 *
 * @example
 * adapterFor("sglang").trainRequest("chat", { model: "m", messages: [], stream: true }).return_output_ids_in_sglext // true
 */
export function adapterFor(kind: EngineKind): EngineAdapter {
  if (kind === "sglang") return sglangAdapter;
  if (kind === "vllm") return vllmAdapter;
  return { ...vllmAdapter, kind: "other", blanksEchoedPrompt: false, samplingDefaults: () => ({}) };
}
