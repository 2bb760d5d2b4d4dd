/**
 * Server-sent events as the proxy recorded them, with each `data:` payload JSON-decoded.
 */
import { parseSseText } from "../../lib/index.ts";

export type SseEvent = { event: string | null; data: unknown };

/**
 * Parses SSE text into its events, JSON-decoding each `data:` payload. `[DONE]` and
 * payloads that are not JSON are skipped: a stream cut mid-line still yields its whole events.
 *
 * @example
 * parseSse('data: {"a":1}\n\ndata: [DONE]\n\n') // [{ event: null, data: { a: 1 } }]
 */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const m of parseSseText(text)) {
    if (m.data === "[DONE]") continue;
    try {
      events.push({ event: m.event ?? null, data: JSON.parse(m.data) });
    } catch {
      // A torn last event of an aborted stream: nothing usable in it.
    }
  }
  return events;
}
