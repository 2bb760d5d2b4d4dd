/**
 * Server-Sent Events for everything that reads or writes an event stream — the translating
 * front doors, the simulator, analytics — except the proxy's passthrough rewriter, which has a
 * measured fast path of its own (proxy/capture/sse-rewriter.ts). Parsing is eventsource-parser's
 * (the WHATWG algorithm: `\n`, `\r\n` or `\r` line ends, comments, multi-line data); framing
 * writes one `data:` line per line of the payload, as the format requires.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";

export interface SseMessage {
  event?: string;
  data: string;
}

export interface SseDecoder {
  /** Feed decoded text, split anywhere (even mid-line); returns the messages completed by it. */
  push(text: string): SseMessage[];
  /** The end of the stream: the message left when it ends without a trailing blank line. */
  flush(): SseMessage[];
}

/**
 * An incremental SSE decoder.
 *
 * @example
 * const d = createSseDecoder();
 * d.push('data: {"a":1}\n'); // []
 * d.push("\ndata: [DONE]\n\n"); // [{ data: '{"a":1}' }, { data: "[DONE]" }]
 */
export function createSseDecoder(): SseDecoder {
  let out: SseMessage[] = [];
  const parser = createParser({
    onEvent: (m: EventSourceMessage) => out.push(m.event === undefined ? { data: m.data } : { event: m.event, data: m.data }),
  });
  const take = () => {
    const taken = out;
    out = [];
    return taken;
  };
  return {
    push(text) {
      parser.feed(text);
      return take();
    },
    flush() {
      // A blank line ends the last event (and its last line) if the stream did not.
      parser.feed("\n\n");
      parser.reset();
      return take();
    },
  };
}

/**
 * Every message of a whole stream's text, an unterminated last one included.
 *
 * @example
 * parseSseText('event: a\ndata: 1\n\ndata: 2') // [{ event: "a", data: "1" }, { data: "2" }]
 */
export function parseSseText(text: string): SseMessage[] {
  const decoder = createSseDecoder();
  return [...decoder.push(text), ...decoder.flush()];
}

/** An event whose `data:` payload was JSON, decoded. */
export type SseJsonEvent = { event: string | null; data: unknown };

/**
 * The events of a whole stream's text with each `data:` payload JSON-decoded, as a reader of a
 * recorded stream wants them. `[DONE]` and payloads that are not JSON are skipped: a stream cut
 * mid-line still yields its whole events.
 *
 * @example
 * parseSseJson('data: {"a":1}\n\ndata: [DONE]\n\n') // [{ event: null, data: { a: 1 } }]
 */
export function parseSseJson(text: string): SseJsonEvent[] {
  const events: SseJsonEvent[] = [];
  for (const m of parseSseText(text)) {
    if (m.data === "[DONE]") continue;
    try {
      events.push({ event: m.event ?? null, data: JSON.parse(m.data) });
    } catch {
      // A torn last event of an aborted stream: what came before still stands.
    }
  }
  return events;
}

/**
 * One event on the wire.
 *
 * @example
 * sseEvent('{"a":1}') // 'data: {"a":1}\n\n'
 * sseEvent("x", "message_stop") // "event: message_stop\ndata: x\n\n"
 */
export function sseEvent(data: string, event?: string): string {
  const lines = data.includes("\n") || data.includes("\r") ? data.split(/\r\n|\r|\n/).map((l) => `data: ${l}\n`).join("") : `data: ${data}\n`;
  return `${event === undefined ? "" : `event: ${event}\n`}${lines}\n`;
}
