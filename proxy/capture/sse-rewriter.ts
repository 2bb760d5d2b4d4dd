/**
 * Incremental SSE rewriting for passthrough: upstream bytes are split into events as they
 * arrive; each complete event is handed to a callback that keeps it byte for byte, replaces
 * it, or drops it. Only complete events are held back, so the harness sees each event as soon
 * as the upstream finished sending it.
 *
 * The one SSE reader of the project that is not lib/sse.ts: it sits on every streamed chunk
 * of every call, keeps events it does not change byte for byte, and decodes a read that is
 * exactly one `data:` event without buffering (a 50-chunk rewrite: 272 → 188 µs in a hot
 * loop, `bun bench/ab.ts --scenario stream256`). The event framing it writes is lib's format.
 */

/** What to do with one event: `undefined` keeps its bytes, a string replaces it, "" drops it. */
export type SseEventHandler = (data: string) => string | undefined;

export interface SseRewriter {
  /** Feeds upstream bytes; returns the text to send on (possibly ""). */
  push(bytes: Uint8Array): string;
  /** The end of the upstream stream: returns what is left (an unterminated last event). */
  end(): string;
  /**
   * Drops everything after the event being handled (call it from `onEvent`): what a server
   * sends after its end of stream (`[DONE]`) reaches neither the harness nor the record.
   */
  stop(): void;
}

/**
 * A rewriter calling `onEvent` with each event's joined `data:` lines.
 *
 * @example
 * const r = createSseRewriter((data) => (data === "[DONE]" ? undefined : `data: ${data.toUpperCase()}\n\n`));
 * r.push(new TextEncoder().encode("data: a\n\ndata: [DO")); // "data: A\n\n"
 * r.push(new TextEncoder().encode("NE]\n\n")); // "data: [DONE]\n\n"
 */
export function createSseRewriter(onEvent: SseEventHandler): SseRewriter {
  const decoder = new TextDecoder();
  let buffer = "";
  let sawCr = false;
  let stopped = false;

  const drain = (final: boolean): string => {
    let out = "";
    for (;;) {
      const boundary = sawCr ? findBoundary(buffer) : lfBoundary(buffer);
      if (boundary === -1) break;
      out += handleEvent(buffer.slice(0, boundary), onEvent);
      buffer = buffer.slice(boundary);
      if (stopped) {
        buffer = "";
        return out;
      }
    }
    if (final && buffer !== "") {
      out += handleEvent(buffer, onEvent);
      buffer = "";
    }
    return out;
  };

  // Whether the decoder holds no partial character: the last bytes fed ended an event.
  let clean = true;

  /** The general way: decoded into the buffer, events cut at blank lines. */
  const pushText = (bytes: Uint8Array): string => {
    clean = endsWithBlankLine(bytes);
    const text = decoder.decode(bytes, { stream: true });
    if (!sawCr && text.includes("\r")) sawCr = true;
    buffer += text;
    return drain(false);
  };

  /**
   * Bytes that end with a blank line, hold no CR and start with `data: `, read from a clean
   * state: decoded at once (no character is cut at their end, and none spans the LF between two
   * events), then each leading one-line `data:` event is handled from the text, with no
   * buffer; from the first other event on, the general way. The whole read is decoded, and
   * events are slices of its text rather than decodes of `subarray` views: a data line that
   * starts with U+FEFF keeps it (a decode of the data alone took it for a byte-order mark), and
   * no view object per event (the profile put 3 % of the samples at 256 streams on `subarray`;
   * `bench/ab.ts` measured no difference, 1.03 and 0.93).
   */
  const pushEvents = (bytes: Uint8Array): string => {
    const text = decoder.decode(bytes);
    let out = "";
    let at = 0;
    while (at < text.length) {
      const lf = text.indexOf("\n", at);
      if (text.charCodeAt(lf + 1) !== LF || !text.startsWith("data: ", at)) {
        buffer = text.slice(at);
        return out + drain(false);
      }
      const data = text.slice(at + 6, lf);
      const replaced = onEvent(data);
      out += replaced === undefined ? `data: ${data}\n\n` : replaced;
      at = lf + 2;
      if (stopped) return out;
    }
    return out;
  };

  return {
    push(bytes) {
      if (stopped) return "";
      // Fast path: an LLM server writes one `data: …\n\n` event per flush, so a read is
      // usually exactly one event. Its data is decoded alone, with no joining to a buffer and no
      // boundary search over text.
      if (clean && buffer === "" && isOneDataEvent(bytes)) {
        // A decode without `stream` leaves the decoder as it found it: empty, since `clean`.
        const event = decoder.decode(bytes);
        const data = event.slice(6, -2);
        const out = onEvent(data);
        return out === undefined ? event : out;
      }
      // A busy proxy reads several events at once (half the events at 256 streams): while they
      // are whole one-line `data:` events, each is taken as above, the rest the general way.
      if (clean && buffer === "" && endsWithBlankLine(bytes) && startsWithData(bytes, 0) && bytes.indexOf(CR) === -1) return pushEvents(bytes);
      return pushText(bytes);
    },
    end() {
      if (stopped) return "";
      buffer += decoder.decode();
      return drain(true);
    },
    stop() {
      stopped = true;
    },
  };
}

/** One whole event (`raw`, with its terminating blank line) through `onEvent`: what is sent for it. */
function handleEvent(raw: string, onEvent: SseEventHandler): string {
  // Fast path: the one-line `data: …\n\n` event every LLM server sends.
  if (raw.startsWith("data: ") && raw.endsWith("\n\n")) {
    const nl = raw.indexOf("\n", 6);
    if (nl === raw.length - 2 && raw.charCodeAt(nl - 1) !== 13) {
      const out = onEvent(raw.slice(6, nl));
      return out === undefined ? raw : out;
    }
  }
  let data = "";
  let sawData = false;
  for (const line of raw.split(/\r?\n/)) {
    if (line.startsWith("data:")) {
      const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      data = sawData ? `${data}\n${value}` : value;
      sawData = true;
    }
  }
  if (!sawData) return raw; // comments, keep-alives, event-only blocks pass unchanged
  const out = onEvent(data);
  return out === undefined ? raw : out;
}

function lfBoundary(text: string): number {
  const lf = text.indexOf("\n\n");
  return lf === -1 ? -1 : lf + 2;
}

/** Index just past the first blank line ("\n\n" or "\r\n\r\n"), or -1. */
function findBoundary(text: string): number {
  const lf = text.indexOf("\n\n");
  const crlf = text.indexOf("\r\n\r\n");
  if (lf === -1) return crlf === -1 ? -1 : crlf + 4;
  if (crlf === -1 || lf < crlf) return lf + 2;
  return crlf + 4;
}

const LF = 0x0a;
const CR = 0x0d;
const DATA_PREFIX = [0x64, 0x61, 0x74, 0x61, 0x3a, 0x20]; // "data: "

function startsWithData(bytes: Uint8Array, at: number): boolean {
  for (let i = 0; i < 6; i++) if (bytes[at + i] !== DATA_PREFIX[i]) return false;
  return true;
}

/** `data: <one line without CR>\n\n` and nothing else. */
function isOneDataEvent(bytes: Uint8Array): boolean {
  const n = bytes.length;
  if (n < 8 || bytes[n - 1] !== LF || bytes[n - 2] !== LF) return false;
  for (let i = 0; i < 6; i++) if (bytes[i] !== DATA_PREFIX[i]) return false;
  return bytes.indexOf(LF) === n - 2 && bytes.indexOf(CR) === -1;
}

function endsWithBlankLine(bytes: Uint8Array): boolean {
  const n = bytes.length;
  return n >= 2 && bytes[n - 1] === LF && bytes[n - 2] === LF;
}
