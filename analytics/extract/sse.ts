/**
 * Server-sent events as the proxy recorded them: `event:` / `data:` lines separated by blank lines.
 */

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
  for (const block of text.split(/\r?\n\r?\n/)) {
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (data.length === 0) continue;
    const payload = data.join("\n");
    if (payload === "[DONE]") continue;
    try {
      events.push({ event, data: JSON.parse(payload) });
    } catch {
      // A torn last event of an aborted stream: nothing usable in it.
    }
  }
  return events;
}
