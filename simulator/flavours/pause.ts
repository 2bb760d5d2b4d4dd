/**
 * Generation while an engine is paused for a weight update: vLLM refuses new requests with 503
 * in `abort` and `wait` mode and queues them in `keep` mode (`v1/engine/async_llm.py:989-1028`);
 * SGLang holds them until `/continue_generation` (`tokenizer_manager.py:938-939`).
 */
import type { SimContext } from "../context.ts";

/**
 * Undefined once the request may generate (after waiting out a pause where the engine waits),
 * or the engine's refusal.
 *
 * @example
 * const refused = await whileGenerating(ctx, request.signal);
 * if (refused) return refused;
 */
export async function whileGenerating(ctx: SimContext, signal: AbortSignal): Promise<Response | undefined> {
  const e = ctx.engine;
  if (e.paused === undefined) return undefined;
  if (e.flavour === "vllm" && e.paused !== "keep") return ctx.flavour.error(503, "Generation is paused. Please retry after it resumes.");
  await Promise.race([e.resumed(), new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }))]);
  return undefined;
}
