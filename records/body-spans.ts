/**
 * Where a request body can be cut into content pieces: a scan of the raw JSON bytes (never a
 * parse) that finds the elements of the top-level `messages` / `input` arrays, every other
 * top-level value, and inside them the long strings and the base64 text of inline files.
 *
 * Harnesses resend the same conversation prefix on every call, message by message, so these
 * are the boundaries at which a call's body repeats an earlier one; a long string (a tool
 * result, a system prompt) is also what a translated body repeats, re-wrapped in another
 * protocol's JSON. The cut is purely positional: the bytes between the spans (keys, commas,
 * whitespace, small values) are kept as they are, so the body is rebuilt byte for byte whatever
 * its formatting.
 *
 * Cost: bytes outside strings are looked at one by one (a chat body's structure is a small
 * share of it); a string is skipped with a native `indexOf` of its closing quote, so a 4 MB
 * screenshot costs one memchr.
 */

export type Span = { start: number; end: number };

/** A value to store as a piece; `element` when it is one of the conversation's messages (it never grows). */
export type PieceSpan = Span & { element: boolean };

/** Text inside a piece to store as a piece of its own: a long string's content, or base64 text. */
export type CutSpan = Span & {
  /** A data: URL's payload or a string under a "data" key: maybe base64 worth storing decoded. */
  base64: boolean;
};

export type BodySpans = {
  /** Byte ranges to store as pieces, in order, not overlapping. */
  pieces: PieceSpan[];
  /** Long strings' contents and base64 text inside the pieces, in order, not overlapping. */
  cuts: CutSpan[];
  /**
   * Every element of the top-level `messages` array, whatever its size (token-in knows a resent
   * conversation by a digest of their bytes, model/preprocess.ts); undefined when the body has
   * no such array, or when a top-level key is written with an escape or twice (then which array
   * JSON.parse takes is not read from the bytes here).
   */
  messages?: Span[];
  /** The top-level `tools` value, on the same terms (the tool list a conversation resends unchanged). */
  tools?: Span;
};

export type SpanOptions = {
  /** Values shorter than this stay in the literal runs (a reference would cost about as much). Default 32. */
  minPiece?: number;
  /** Strings shorter than this are never taken for base64 files. Default 64. */
  minBase64?: number;
  /** Strings at least this long are cut out of their value as pieces of their own. Default 256. */
  minString?: number;
};

type Limits = { minBase64: number; minString: number };

/** `options` with its defaults filled in: what a scan depends on. */
function withDefaults(options: SpanOptions): Required<SpanOptions> {
  return { minPiece: options.minPiece ?? 32, minBase64: options.minBase64 ?? 64, minString: options.minString ?? 256 };
}

/** Top-level keys whose arrays are split per element: the conversation, resent with every call. */
const MESSAGES = new TextEncoder().encode("messages");
const INPUT = new TextEncoder().encode("input");
/** The top-level key whose value's span is kept too (the tool list a conversation resends). */
const TOOLS = new TextEncoder().encode("tools");

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
/** "data" as bytes, and "data:" / ";base64" of a data: URL (RFC 2397). */
const DATA = [0x64, 0x61, 0x74, 0x61];
const BASE64_FLAG = new TextEncoder().encode(";base64");

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(b: Uint8Array, i: number): number {
  while (i < b.length && isSpace(b[i]!)) i++;
  return i;
}

/** Index after the closing quote of the string opening at `i`, or -1 when it does not close. */
function stringEnd(b: Uint8Array, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = b.indexOf(QUOTE, from);
    if (q < 0) return -1;
    let k = q - 1;
    while (b[k] === BACKSLASH) k--;
    // An even number of backslashes before the quote: it is not escaped.
    if (((q - 1 - k) & 1) === 0) return q + 1;
    from = q + 1;
  }
}

function equalsAt(b: Uint8Array, start: number, end: number, word: Uint8Array | number[]): boolean {
  if (end - start !== word.length) return false;
  for (let k = 0; k < word.length; k++) if (b[start + k] !== word[k]) return false;
  return true;
}

/**
 * The base64 part of string content `[start, end)` worth storing decoded: the payload of a
 * `data:…;base64,` URL, or the whole string under a "data" key (Anthropic's base64 source).
 * Whether it really is canonical base64 is the writer's check; this only finds candidates.
 */
function base64Candidate(b: Uint8Array, start: number, end: number, underDataKey: boolean, minBase64: number): Span | undefined {
  if (end - start >= 5 && b[start] === DATA[0] && b[start + 1] === DATA[1] && b[start + 2] === DATA[2] && b[start + 3] === DATA[3] && b[start + 4] === COLON) {
    // The media type and parameters end at the first comma; the flag must come before it.
    const headerEnd = Math.min(end, start + 512);
    let comma = -1;
    for (let k = start + 5; k < headerEnd; k++) {
      if (b[k] === COMMA) {
        comma = k;
        break;
      }
    }
    if (comma < 0) return undefined;
    let flagged = false;
    for (let k = start + 5; k + BASE64_FLAG.length <= comma && !flagged; k++) flagged = equalsAt(b, k, k + BASE64_FLAG.length, BASE64_FLAG);
    if (!flagged || end - (comma + 1) < minBase64) return undefined;
    return { start: comma + 1, end };
  }
  return underDataKey ? { start, end } : undefined;
}

/** Adds the cut of the string content `[start, end)`, if it is long enough to be one. */
function stringCut(b: Uint8Array, start: number, end: number, underDataKey: boolean, found: CutSpan[], limits: Limits): void {
  if (end - start < Math.min(limits.minBase64, limits.minString)) return;
  const candidate = base64Candidate(b, start, end, underDataKey, limits.minBase64);
  if (candidate) {
    // A data: URL's header stays with the text around it.
    found.push({ start: candidate.start, end: candidate.end, base64: true });
    return;
  }
  if (end - start >= limits.minString) found.push({ start, end, base64: false });
}

/**
 * End (exclusive) of the JSON value starting at `i` (no leading space), or -1 when the bytes
 * are not JSON. Cuts met on the way go to `found`.
 */
function valueEnd(b: Uint8Array, i: number, found: CutSpan[], limits: Limits): number {
  const n = b.length;
  const c0 = b[i];
  if (c0 === QUOTE) {
    const end = stringEnd(b, i);
    if (end > 0) stringCut(b, i + 1, end - 1, false, found, limits);
    return end;
  }
  if (c0 !== OPEN_OBJECT && c0 !== OPEN_ARRAY) {
    // A number, true, false or null: up to the next delimiter.
    let k = i;
    while (k < n) {
      const c = b[k]!;
      if (c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY || isSpace(c)) break;
      k++;
    }
    return k > i ? k : -1;
  }
  if (c0 === OPEN_ARRAY) {
    // An array of scalars only (a token-id prompt: 40k numbers): its end is its first "]".
    const close = b.indexOf(CLOSE_ARRAY, i);
    if (close < 0) return -1;
    const inside = b.subarray(i + 1, close);
    if (inside.indexOf(QUOTE) < 0 && inside.indexOf(OPEN_ARRAY) < 0 && inside.indexOf(OPEN_OBJECT) < 0) return close + 1;
  }
  // Containers: a stack of open brackets; in an object, whether a key is expected next and
  // whether the last key was "data".
  const stack: number[] = [];
  let expectKey = false;
  let underDataKey = false;
  let k = i;
  while (k < n) {
    const c = b[k]!;
    if (c === QUOTE) {
      const end = stringEnd(b, k);
      if (end < 0) return -1;
      if (expectKey) {
        underDataKey = equalsAt(b, k + 1, end - 1, DATA);
        expectKey = false;
      } else {
        stringCut(b, k + 1, end - 1, underDataKey, found, limits);
        underDataKey = false;
      }
      k = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      stack.push(c);
      expectKey = c === OPEN_OBJECT;
      k++;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      const open = stack.pop();
      if (open === undefined || (open === OPEN_OBJECT) !== (c === CLOSE_OBJECT)) return -1;
      k++;
      if (stack.length === 0) return k;
      expectKey = false;
      underDataKey = false;
    } else if (c === COMMA) {
      expectKey = stack[stack.length - 1] === OPEN_OBJECT;
      k++;
    } else {
      k++;
    }
  }
  return -1;
}

/**
 * The spans of `body` to store as pieces, or undefined when it is not a JSON object (the
 * writer then stores it whole). Invalid JSON inside a value is not always noticed: the spans
 * only have to be positions in the bytes, which any bytes rebuild exactly.
 *
 * @example
 * const body = new TextEncoder().encode('{"model":"m","messages":[{"role":"user","content":"a long enough message"}]}');
 * bodySpans(body, { minPiece: 8 }).pieces // [{ start: 25, end: 72, element: true }]
 */
export function bodySpans(body: Uint8Array, options: SpanOptions = {}): BodySpans | undefined {
  const { minPiece, ...limits } = withDefaults(options);
  const pieces: PieceSpan[] = [];
  const cuts: CutSpan[] = [];
  const b = body;
  let i = skipSpace(b, 0);
  if (b[i] !== OPEN_OBJECT) return undefined;
  i = skipSpace(b, i + 1);
  if (b[i] === CLOSE_OBJECT) return skipSpace(b, i + 1) === b.length ? { pieces, cuts } : undefined;
  // The messages' and the tools' spans: undefined until the key is seen; "unread" once the bytes
  // cannot say which value JSON.parse takes (a key written twice, or any key with an escape).
  let messages: Span[] | undefined | "unread";
  let tools: Span | undefined | "unread";
  for (;;) {
    if (b[i] !== QUOTE) return undefined;
    const keyEnd = stringEnd(b, i);
    if (keyEnd < 0) return undefined;
    const isMessages = equalsAt(b, i + 1, keyEnd - 1, MESSAGES);
    const split = isMessages || equalsAt(b, i + 1, keyEnd - 1, INPUT);
    const isTools = !split && equalsAt(b, i + 1, keyEnd - 1, TOOLS);
    if (isMessages && messages !== undefined) messages = "unread";
    if (isTools && tools !== undefined) tools = "unread";
    if (!isMessages && !isTools && b.subarray(i + 1, keyEnd - 1).includes(BACKSLASH)) messages = tools = "unread";
    const elements: Span[] | undefined = isMessages && messages === undefined ? [] : undefined;
    i = skipSpace(b, keyEnd);
    if (b[i] !== COLON) return undefined;
    i = skipSpace(b, i + 1);
    if (split && b[i] === OPEN_ARRAY) {
      if (elements) messages = elements;
      i = skipSpace(b, i + 1);
      if (b[i] === CLOSE_ARRAY) i++;
      else
        for (;;) {
          const end = valueEnd(b, i, cuts, limits);
          if (end < 0) return undefined;
          if (end - i >= minPiece) pieces.push({ start: i, end, element: true });
          elements?.push({ start: i, end });
          i = skipSpace(b, end);
          if (b[i] === COMMA) i = skipSpace(b, i + 1);
          else if (b[i] === CLOSE_ARRAY) {
            i++;
            break;
          } else return undefined;
        }
    } else {
      const end = valueEnd(b, i, cuts, limits);
      if (end < 0) return undefined;
      if (end - i >= minPiece) pieces.push({ start: i, end, element: false });
      if (isTools && tools === undefined) tools = { start: i, end };
      i = end;
    }
    if (elements && messages === undefined) messages = "unread";
    i = skipSpace(b, i);
    if (b[i] === COMMA) {
      i = skipSpace(b, i + 1);
      continue;
    }
    if (b[i] !== CLOSE_OBJECT || skipSpace(b, i + 1) !== b.length) return undefined;
    const spans: BodySpans = { pieces, cuts };
    if (messages !== undefined && messages !== "unread") spans.messages = messages;
    if (tools !== undefined && tools !== "unread") spans.tools = tools;
    return spans;
  }
}

/** Each body scanned by `scannedBodySpans`, with the options it was scanned with. */
const scanned = new WeakMap<Uint8Array, { options: Required<SpanOptions>; spans: BodySpans | undefined }>();

/**
 * `bodySpans` of a body scanned once for all who ask with the same options: the Chat door
 * scans a request body as it parses it (token-in reads its messages' spans) and the content
 * writer that stores it takes the same spans instead of scanning it again.
 *
 * @example
 * scannedBodySpans(bytes, { minPiece: 32, minString: 256 }) === scannedBodySpans(bytes, { minPiece: 32, minString: 256 }) // true: scanned once
 */
export function scannedBodySpans(body: Uint8Array, options: SpanOptions = {}): BodySpans | undefined {
  const o = withDefaults(options);
  const known = scanned.get(body);
  if (known && known.options.minPiece === o.minPiece && known.options.minBase64 === o.minBase64 && known.options.minString === o.minString) return known.spans;
  const spans = bodySpans(body, o);
  scanned.set(body, { options: o, spans });
  return spans;
}
