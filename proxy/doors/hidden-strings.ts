/**
 * A passed-through Chat request parsed without its long message strings.
 *
 * The proxy passes a Chat body on as the harness's bytes (train mode appends its fields to
 * them); of the parsed body it reads only top-level fields. Its messages' long strings — a 4 MB
 * screenshot's base64, a 200 KB prompt — were decoded to a JS string and parsed for nothing:
 * here each string of 32 KB or more inside `messages` is replaced, in the text given to
 * `JSON.parse`, by a placeholder, and nothing is decoded of it. `restoreHidden` puts the real
 * strings back (parsed from the original bytes, escapes and all) for the rare path that
 * serialises the body again.
 */
import { bodySpans, scannedBodySpans, STORED_BODY_SCAN, type BodySpans } from "../../records/index.ts";
import type { RawMessages } from "../../model/index.ts";
import { decodeUtf8, parseJsonObject } from "../body.ts";

/** Strings in messages at least this long (bytes between the quotes) are hidden. */
export const HIDDEN_MIN_BYTES = 32 * 1024;

const nonce = crypto.randomUUID();
const PREFIX = `\u0000forge-hidden:${nonce}:`;
/** Per parsed `messages` array: the body's bytes and where each hidden string token is. */
const hiddenIn = new WeakMap<object, { bytes: Uint8Array; tokens: { start: number; end: number }[] }>();
/** Per parsed `messages` array: the body's bytes and each message's span in them (the scan found them). */
const spansOf = new WeakMap<object, RawMessages>();

/**
 * Where each message of a body parsed by `parseHidingStrings` lies in its bytes, when its scan
 * found them (a body the content writer stores, of 1 KB or more): token-in's preprocessing knows
 * the resent ones unchanged by a digest of their bytes (model/preprocess.ts).
 *
 * @example
 * model.prepare(chat, previous, rawMessagesOf(chat))
 */
export function rawMessagesOf(body: Record<string, any>): RawMessages | undefined {
  return body.messages && typeof body.messages === "object" ? spansOf.get(body.messages) : undefined;
}

/** Keeps the messages' spans (and the tools') for `rawMessagesOf` when they are one per message of the parsed body. */
function withSpans(body: Record<string, any>, bytes: Uint8Array, spans: BodySpans | undefined): Record<string, any> {
  const elements = spans?.messages;
  if (!elements || !Array.isArray(body.messages) || body.messages.length !== elements.length || elements.length === 0) return body;
  spansOf.set(body.messages, spans.tools && Array.isArray(body.tools) ? { bytes, spans: elements, tools: spans.tools } : { bytes, spans: elements });
  return body;
}

/**
 * The body as `parseJsonObject` parses it, except that strings of 32 KB or more inside
 * `messages` are placeholders until `restoreHidden`. Errors are `parseJsonObject`'s.
 *
 * @example
 * const body = parseHidingStrings(bytes); // bytes of a chat request with a screenshot
 * body.messages[0].content[1].image_url.url // "\u0000forge-hidden:…:0" until restoreHidden(body)
 */
export function parseHidingStrings(bytes: Uint8Array): Record<string, any> {
  if (bytes.length < HIDDEN_MIN_BYTES) {
    // Scanned now as the content writer will scan it to store it (it takes these spans): the messages' spans come at no cost.
    if (bytes.length < STORED_BODY_SCAN.minBody) return parseJsonObject(bytes);
    return withSpans(parseJsonObject(bytes), bytes, scannedBodySpans(bytes, STORED_BODY_SCAN));
  }
  const spans = bodySpans(bytes, { minPiece: 1, minString: HIDDEN_MIN_BYTES, minBase64: Number.POSITIVE_INFINITY });
  // Not an object, or nothing long enough: the ordinary parse (and its error message).
  if (!spans) return parseJsonObject(bytes);
  const elements = spans.pieces.filter((p) => p.element);
  const tokens: { start: number; end: number }[] = [];
  let e = 0;
  for (const cut of spans.cuts) {
    while (e < elements.length && elements[e]!.end <= cut.start) e++;
    const element = elements[e];
    // Only strings inside the conversation: top-level values are read by the proxy.
    if (element && element.start < cut.start && cut.end < element.end) tokens.push({ start: cut.start - 1, end: cut.end + 1 });
  }
  if (tokens.length === 0) return withSpans(parseJsonObject(bytes), bytes, spans);
  const parts: string[] = [];
  let at = 0;
  tokens.forEach((token, k) => {
    parts.push(decodeUtf8(bytes.subarray(at, token.start)), JSON.stringify(`${PREFIX}${k}`));
    at = token.end;
  });
  parts.push(decodeUtf8(bytes.subarray(at)));
  let body: Record<string, any>;
  try {
    body = JSON.parse(parts.join(""));
  } catch {
    // Whatever is wrong, the ordinary parse says it about the bytes the harness sent.
    return parseJsonObject(bytes);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body) || !Array.isArray(body.messages)) return parseJsonObject(bytes);
  hiddenIn.set(body.messages, { bytes, tokens });
  return withSpans(body, bytes, spans);
}

/**
 * `body` with its hidden strings back (in place), as `JSON.parse` of the harness's bytes would
 * have them; a body with none is returned as is.
 *
 * @example
 * JSON.stringify(restoreHidden(body)) // the whole conversation, screenshots included
 */
export function restoreHidden<T extends Record<string, any>>(body: T): T {
  const info = body.messages && typeof body.messages === "object" ? hiddenIn.get(body.messages) : undefined;
  if (!info) return body;
  const real = (value: string): string | undefined => {
    if (!value.startsWith(PREFIX)) return undefined;
    const token = info.tokens[Number(value.slice(PREFIX.length))];
    return token && (JSON.parse(decodeUtf8(info.bytes.subarray(token.start, token.end))) as string);
  };
  const walk = (value: any): void => {
    if (value === null || typeof value !== "object") return;
    for (const key of Object.keys(value)) {
      const v = value[key];
      if (typeof v === "string") {
        const r = real(v);
        if (r !== undefined) value[key] = r;
      } else walk(v);
    }
  };
  walk(body.messages);
  hiddenIn.delete(body.messages);
  return body;
}
