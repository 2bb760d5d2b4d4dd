/**
 * Reads a request body under a size limit without buffering an oversized one: the
 * Content-Length is checked first, and a chunked body is counted as it arrives and cut at
 * the limit.
 */
import { isAscii } from "node:buffer";
import { concatBytes } from "../lib/index.ts";
import { ProxyHttpError } from "./errors.ts";

/**
 * The body bytes, or a ProxyHttpError (413 over `maxBytes`, 415 not JSON).
 *
 * @example
 * const bytes = await readJsonBody(request, 32 << 20);
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const type = request.headers.get("content-type") ?? "";
  const mediaType = type.split(";")[0]!.trim().toLowerCase();
  if (mediaType !== "application/json" && !mediaType.endsWith("+json")) {
    throw new ProxyHttpError(
      415,
      `Content-Type must be application/json, got ${type === "" ? "none" : JSON.stringify(type)}`,
      "invalid_request_error",
      "unsupported_media_type",
    );
  }
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(declared, maxBytes);
  if (!request.body) return new Uint8Array(0);
  // A declared length within the limit: the server frames the body by it, so it is read in one
  // native step (no chunk loop and no second copy to join the chunks).
  if (Number.isFinite(declared)) return await request.bytes();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      // Stop reading: the rest of an oversized body is never buffered.
      await reader.cancel().catch(() => {});
      throw tooLarge(size, maxBytes);
    }
    chunks.push(value);
  }
  return concatBytes(chunks);
}

/**
 * The 413 for a request whose declared Content-Length is over `maxBytes`, before anything reads
 * it (proxy/server.ts answers it ahead of routing, whatever the size); undefined otherwise.
 *
 * @example
 * declaredTooLarge(new Request("http://x/", { method: "POST", body: "x".repeat(10) }), 4)?.status; // 413
 */
export function declaredTooLarge(request: Request, maxBytes: number): ProxyHttpError | undefined {
  const declared = Number(request.headers.get("content-length") ?? NaN);
  return Number.isFinite(declared) && declared > maxBytes ? tooLarge(declared, maxBytes) : undefined;
}

/**
 * Parses body bytes as a JSON object; 400 naming the parse error otherwise.
 *
 * @example
 * parseJsonObject(new TextEncoder().encode('{"model":"m"}')).model // "m"
 */
export function parseJsonObject(bytes: Uint8Array): Record<string, any> {
  let value: unknown;
  try {
    value = JSON.parse(decodeUtf8(bytes));
  } catch (error) {
    throw new ProxyHttpError(400, `request body is not valid JSON: ${(error as Error).message}`, "invalid_request_error", "invalid_json");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ProxyHttpError(400, "request body must be a JSON object", "invalid_request_error", "invalid_json");
  }
  return value as Record<string, any>;
}

/**
 * Deepest nesting of objects and arrays a translated request body may have. Real bodies (tool
 * schemas included) stay far below.
 */
export const MAX_JSON_DEPTH = 512;

/**
 * Throws 400 when `body` nests deeper than MAX_JSON_DEPTH. JSON.parse builds any depth, but the
 * translators and JSON.stringify recurse: a 100k-deep body would overflow the stack mid-call
 * (a 500, possibly after the upstream answered) instead of being refused.
 *
 * @example
 * refuseDeepJson({ model: "m", metadata: { a: { b: 1 } } }); // fine
 */
export function refuseDeepJson(body: unknown): void {
  if (deeperThan(body, MAX_JSON_DEPTH)) {
    throw new ProxyHttpError(400, `request body is nested more than ${MAX_JSON_DEPTH} levels deep`, "invalid_request_error", "invalid_json");
  }
}

/**
 * Whether `value` nests objects / arrays more than `limit` levels deep. Walks every container
 * (strings and numbers are not looked into), recursing at most `limit` frames.
 *
 * @example
 * deeperThan([[[1]]], 2) // true
 */
export function deeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== "object") return false;
  if (limit <= 0) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (item !== null && typeof item === "object" && deeperThan(item, limit - 1)) return true;
    return false;
  }
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    if (item !== null && typeof item === "object" && deeperThan(item, limit - 1)) return true;
  }
  return false;
}

function tooLarge(size: number, maxBytes: number): ProxyHttpError {
  return new ProxyHttpError(
    413,
    `request body of ${size} bytes or more is over the proxy's limit of ${maxBytes} bytes (raise it with --max-body-bytes)`,
    "invalid_request_error",
    "request_too_large",
  );
}

/**
 * UTF-8 bytes as a string, the fastest way for the body at hand (measured on a 4 MB body): an
 * all-ASCII body (base64 screenshots, most JSON) is copied as Latin-1, 0.2 ms to check + 1.1 ms,
 * against 1.9 ms for Buffer's UTF-8 decoder; other text goes through Buffer's decoder, 4 ms
 * against TextDecoder's 6. Bad sequences become U+FFFD either way, as with TextDecoder.
 *
 * @example
 * decodeUtf8(new TextEncoder().encode('{"a":"é"}')) // '{"a":"é"}'
 */
export function decodeUtf8(bytes: Uint8Array): string {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return isAscii(bytes) ? buffer.toString("latin1") : buffer.toString("utf8");
}

/**
 * `decodeUtf8` of the chunks joined, without joining them when every chunk is ASCII: each is
 * copied as Latin-1 and the strings are joined (a 250 KB answer to a 200 KB prompt arrives in
 * several reads; the join of their bytes was a new array, its zero fill and a copy before the
 * decode). Any other text is joined and decoded as `decodeUtf8` does (a character may span two
 * chunks).
 *
 * @example
 * decodeUtf8Chunks([new TextEncoder().encode('{"a":'), new TextEncoder().encode('"é"}')]) // '{"a":"é"}'
 */
export function decodeUtf8Chunks(chunks: readonly Uint8Array[]): string {
  if (chunks.length === 1) return decodeUtf8(chunks[0]!);
  for (const chunk of chunks) if (!isAscii(chunk)) return decodeUtf8(concatBytes(chunks));
  let text = "";
  for (const chunk of chunks) text += Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("latin1");
  return text;
}
