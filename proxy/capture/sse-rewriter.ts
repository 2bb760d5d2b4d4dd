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
  return new EventSplitter(onEvent);
}

/** One stream's SSE state: the decoder and the start of an event still arriving. */
class EventSplitter implements SseRewriter {
  private readonly decoder = new TextDecoder();
  /**
   * The start of an event still arriving: decoded text with no blank line in it, in the pieces
   * it came in. Only each new piece is searched (with the last characters before it, where a
   * blank line may start), and the pieces are joined once, when the event is complete: a large
   * event (vLLM's first chunk with a long prompt's `prompt_token_ids`) that arrives over many
   * reads is neither searched nor copied again per read (`bun bench/sse-split.ts`: a 272 KiB
   * answer in reads of 16 KiB, 511 → 116 µs; in reads of 1,400 bytes, 5,065 → 180 µs).
   */
  private held: string[] = [];
  private heldLength = 0;
  /** The last characters held (a blank line is at most 4: `\r\n\r\n`). */
  private heldTail = "";
  private sawCr = false;
  private stopped = false;
  /** Whether the decoder holds no partial character: the last bytes fed ended an event. */
  private clean = true;

  constructor(private readonly onEvent: SseEventHandler) {}

  push(bytes: Uint8Array): string {
    if (this.stopped) return "";
    // Fast path: an LLM server writes one `data: …\n\n` event per flush, so a read is
    // usually exactly one event. Its data is decoded alone, with no joining to a buffer and no
    // boundary search over text.
    if (this.clean && this.held.length === 0 && isOneDataEvent(bytes)) {
      // A decode without `stream` leaves the decoder as it found it: empty, since `clean`.
      const event = this.decoder.decode(bytes);
      const data = event.slice(6, -2);
      const out = this.onEvent(data);
      return out === undefined ? event : out;
    }
    // A busy proxy reads several events at once (half the events at 256 streams): while they
    // are whole one-line `data:` events, each is taken as above, the rest the general way.
    if (this.clean && this.held.length === 0 && endsWithBlankLine(bytes) && startsWithData(bytes, 0) && bytes.indexOf(CR) === -1) return this.pushEvents(bytes);
    return this.pushText(bytes);
  }

  end(): string {
    if (this.stopped) return "";
    return this.drain(this.takeHeld(this.decoder.decode()), true);
  }

  stop(): void {
    this.stopped = true;
  }

  private hold(text: string): void {
    this.held.push(text);
    this.heldLength += text.length;
    this.heldTail = (text.length >= 3 ? text : this.heldTail + text).slice(-3);
  }

  /** What is held and `text` after it, as one string (held is then empty). */
  private takeHeld(text: string): string {
    if (this.held.length === 0) return text;
    // One join (a flat string): a rope would be copied again by the first slice of it.
    this.held.push(text);
    const whole = this.held.join("");
    this.held = [];
    this.heldLength = 0;
    this.heldTail = "";
    return whole;
  }

  /** Where the first blank line in `text` ends, or -1. */
  private boundaryIn(text: string): number {
    return this.sawCr ? findBoundary(text) : lfBoundary(text);
  }

  /**
   * Cuts `text` (which starts at an event's start) into events; what is left, with no blank
   * line, is held (`final`: handled as the last event instead). `first`: where its first event
   * ends, when pushText found it already (-1: search).
   */
  private drain(text: string, final: boolean, first = -1): string {
    let out = "";
    let rest = text;
    for (;;) {
      const boundary = first !== -1 ? first : this.boundaryIn(rest);
      first = -1;
      if (boundary === -1) break;
      out += handleEvent(rest.slice(0, boundary), this.onEvent);
      rest = rest.slice(boundary);
      if (this.stopped) return out;
    }
    if (rest === "") return out;
    if (final) return out + handleEvent(rest, this.onEvent);
    this.hold(rest);
    return out;
  }

  /** The general way: decoded, held until a blank line ends an event, events cut at blank lines. */
  private pushText(bytes: Uint8Array): string {
    this.clean = endsWithBlankLine(bytes);
    const text = this.decoder.decode(bytes, { stream: true });
    if (!this.sawCr && text.includes("\r")) this.sawCr = true;
    // A blank line ends with a LF: bytes without one (most reads of a long event) are held at once.
    const boundary = bytes.indexOf(LF) === -1 ? -1 : this.boundaryAfterHeld(text);
    if (boundary === -1) {
      if (text !== "") this.hold(text);
      return "";
    }
    const first = this.heldLength + boundary;
    return this.drain(this.takeHeld(text), false, first);
  }

  /**
   * Where the first blank line that ends in `text` ends, counted from the start of `text` (-1:
   * none). Nothing held has a blank line, so only one that ends in this text can complete an
   * event. One that starts in what is held ends in the text's first characters (the seam, looked
   * at alone: a search of the held characters and the text together would copy the text into
   * one string first).
   */
  private boundaryAfterHeld(text: string): number {
    const carry = this.held.length === 0 ? "" : this.heldTail;
    const seam = seamBoundary(carry, text, this.sawCr);
    return seam !== -1 ? seam - carry.length : this.boundaryIn(text);
  }

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
  private pushEvents(bytes: Uint8Array): string {
    const text = this.decoder.decode(bytes);
    let out = "";
    let at = 0;
    while (at < text.length) {
      const lf = text.indexOf("\n", at);
      if (text.charCodeAt(lf + 1) !== LF || !text.startsWith("data: ", at)) return out + this.drain(text.slice(at), false);
      const data = text.slice(at + 6, lf);
      const replaced = this.onEvent(data);
      out += replaced === undefined ? `data: ${data}\n\n` : replaced;
      at = lf + 2;
      if (this.stopped) return out;
    }
    return out;
  }
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

/**
 * Where a blank line that starts in `carry` (the last characters held) and ends in `text` ends,
 * counted from the start of `carry`; -1 when none does.
 */
function seamBoundary(carry: string, text: string, sawCr: boolean): number {
  if (carry === "") return -1;
  const seam = carry + text.slice(0, 3);
  for (let start = 0; start < carry.length; start++) {
    if (seam.startsWith("\n\n", start)) return start + 2;
    if (sawCr && seam.startsWith("\r\n\r\n", start)) return start + 4;
  }
  return -1;
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
