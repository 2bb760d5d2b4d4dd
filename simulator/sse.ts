/** Server-sent events as vLLM and SGLang write them: `data: {json}\n\n` … `data: [DONE]\n\n`. */

import { sseEvent } from "../lib/index.ts";
import { NamedEvent } from "./flavours/types.ts";

const encoder = new TextEncoder();

export const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-forge-simulator": "1" };

/**
 * A response streaming the events `produce` yields; stops early when the client goes away.
 *
 * @example
 * sseResponse(async function* () { yield { hello: 1 }; }, request.signal);
 */
export function sseResponse(produce: () => AsyncGenerator<unknown>, signal: AbortSignal): Response {
  const events = produce();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (signal.aborted) {
        await events.return(undefined);
        controller.close();
        return;
      }
      const next = await events.next();
      if (next.done) {
        controller.enqueue(encoder.encode(sseEvent("[DONE]")));
        controller.close();
        return;
      }
      const value = next.value;
      // SGLang names some events (`event: sglext_ids`); the rest are plain data events.
      controller.enqueue(encoder.encode(value instanceof NamedEvent ? sseEvent(JSON.stringify(value.data), value.event) : sseEvent(JSON.stringify(value))));
    },
    async cancel() {
      await events.return(undefined);
    },
  });
  return new Response(stream, { headers: SSE_HEADERS });
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });
}

/**
 * A generated answer's chunks as [from, to) token ranges, paced as the engine streams them: the
 * time to the first token, then `tokensPerChunk` ids per chunk with `chunkDelayMs` between; stops
 * when the request is aborted.
 */
export async function* pacedChunks(total: number, pace: { ttftMs: number; tokensPerChunk: number; chunkDelayMs: number }, signal: AbortSignal): AsyncGenerator<[number, number]> {
  await sleep(pace.ttftMs, signal);
  const per = Math.max(1, Math.floor(pace.tokensPerChunk));
  let n = 0;
  while (n < total) {
    if (n > 0) await sleep(pace.chunkDelayMs, signal);
    if (signal.aborted) return;
    const from = n;
    n = Math.min(n + per, total);
    yield [from, n];
  }
}
