/**
 * The start-up probe: one one-token chat call, not streamed and streamed, asked for ids the way
 * the engine's adapter asks in train mode, read back by the proxy's own capture code and
 * judged as a call would be (ids present and agreeing with usage). It tells whether the
 * upstream returns the ids training needs before any rollout depends on it.
 */
import { createSseDecoder } from "../../lib/index.ts";
import { TokenStatus } from "../../schemas/index.ts";
import { captureAndStrip, newCapture, tokenVerdict, type HarnessWants } from "../capture/tokens.ts";
import type { EngineAdapter } from "./adapter.ts";
import { engineError } from "./errors.ts";

const KEEP_ALL: HarnessWants = { tokenIds: true, logprobs: true, usage: true, sglext: true };

/** What the probe found: nothing wrong, or what is (naming the call that showed it). */
export type ProbeResult = { ok: true } | { ok: false; reason: string };

/**
 * Sends the two probe calls to `url` (a base URL without `/v1`).
 *
 * @example
 * const r = await probeTokenIds("http://127.0.0.1:8000", vllmAdapter, "Qwen/Qwen3-8B");
 * if (!r.ok) console.error(r.reason);
 */
export async function probeTokenIds(
  url: string,
  adapter: EngineAdapter,
  model: string | undefined,
  options: { headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<ProbeResult> {
  for (const stream of [false, true]) {
    const base: Record<string, unknown> = {
      ...(model ? { model } : {}),
      messages: [{ role: "user", content: "Reply with one word." }],
      max_tokens: 1,
      ...(stream ? { stream: true } : {}),
    };
    const body = adapter.trainRequest("chat", base);
    const what = `a one-token ${stream ? "streamed" : "non-streamed"} chat call to ${url}/v1/chat/completions`;
    let response: Response;
    try {
      response = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "x-forge-probe": "1", ...options.headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(options.timeoutMs ?? 60_000),
      });
    } catch (error) {
      return { ok: false, reason: `${what} failed: ${(error as Error).message}` };
    }
    const text = await response.text().catch(() => "");
    if (!response.ok) {
      let message = text.slice(0, 300);
      try {
        message = engineError(JSON.parse(text))?.message ?? message;
      } catch {}
      return { ok: false, reason: `${what} answered HTTP ${response.status}: ${message}` };
    }
    const capture = newCapture();
    if (stream) {
      const decoder = createSseDecoder();
      for (const event of [...decoder.push(text), ...decoder.flush()]) {
        if (event.data === "[DONE]") continue;
        try {
          captureAndStrip("chat", JSON.parse(event.data), capture, KEEP_ALL);
        } catch {}
      }
    } else {
      try {
        captureAndStrip("chat", JSON.parse(text), capture, KEEP_ALL);
      } catch {
        return { ok: false, reason: `${what} answered with a body that is not JSON: ${text.slice(0, 200)}` };
      }
    }
    if (capture.upstreamError) return { ok: false, reason: `${what} failed mid-stream: ${capture.upstreamError}` };
    const verdict = tokenVerdict(capture, { train: true, ok: true });
    if (verdict.status !== TokenStatus.COMPLETE) return { ok: false, reason: `${what}: ${verdict.reason}` };
  }
  return { ok: true };
}
