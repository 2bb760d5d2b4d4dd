/**
 * The model's context window as its inference server reports it, for harnesses that must be told
 * (pi compacts when its context passes `contextWindow - 16384`; told too small a window, it
 * summarises the conversation after the agent's final answer). vLLM's and SGLang's `/v1/models`
 * give `max_model_len` per model; the proxy passes that list through at `<rollout>/v1/models`.
 */

/** How long the lookup may take before the harness starts without it. */
const LOOKUP_TIMEOUT_MS = 10_000;

/**
 * `max_model_len` of `model` (or of the only model served) from `GET {baseUrlOpenAI}/models`, or
 * undefined when the server does not say (an API that omits it, an error, a timeout): the adapter
 * then keeps its own default, so a lookup can never fail a rollout.
 *
 * @example
 * await modelContextWindow("http://127.0.0.1:8080/r/abc/v1", "fk-…", "qwen3"); // 131072
 */
export async function modelContextWindow(baseUrlOpenAI: string, apiKey: string, model: string, signal?: AbortSignal): Promise<number | undefined> {
  try {
    const response = await fetch(`${baseUrlOpenAI.replace(/\/$/, "")}/models`, {
      headers: { authorization: `Bearer ${apiKey}` },
      signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(LOOKUP_TIMEOUT_MS)]) : AbortSignal.timeout(LOOKUP_TIMEOUT_MS),
    });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { data?: { id?: unknown; root?: unknown; max_model_len?: unknown }[] };
    const models = Array.isArray(body.data) ? body.data : [];
    const entry = models.find((m) => m.id === model || m.root === model) ?? (models.length === 1 ? models[0] : undefined);
    const length = entry?.max_model_len;
    return typeof length === "number" && Number.isInteger(length) && length > 0 ? length : undefined;
  } catch {
    return undefined;
  }
}
