/**
 * Base64 text in request bodies (screenshots, images, documents), identified by the sha256 of
 * its decoded bytes so each file is stored once, decoded.
 *
 * A computer-use harness sends every earlier screenshot again on each turn, so the same
 * multi-MB text is seen over and over: its sha256 (and whether it is canonical base64) is
 * remembered per process, keyed by two independent 64-bit xxHash3 of the text with seeds drawn
 * per process (so colliding texts cannot be prepared in advance). A wrong hit would point a
 * call at another file, silently, so 128 bits and the length are compared, not 64. The text is
 * not kept: an entry is ~150 bytes and the cache holds a fleet's screenshots. Hashing costs
 * ~0.1 ms per MB of text; a first sight costs the decode, a re-encode (the canonical check)
 * and the sha256, ~4 ms for a 4 MB screenshot (bench/large-body.ts).
 */
import { randomBytes } from "node:crypto";

export interface Base64File {
  /** sha256 of the decoded bytes, hex. */
  sha256: string;
  /** The decoded bytes, decoded on first read when the text was seen before. */
  readonly data: Uint8Array;
}

const CACHE_MAX_ENTRIES = 16_384;
const keySeed = randomBytes(8).readBigUInt64LE();
const checkSeed = randomBytes(8).readBigUInt64LE();
type Entry = { length: number; check: bigint; sha256: string | undefined };
const cache = new Map<bigint, Entry>();
const counts = { hits: 0, misses: 0 };

/** Hits and misses of the cache since the process started (benchmarks, tests). */
export function base64CacheStats(): { hits: number; misses: number; entries: number } {
  return { ...counts, entries: cache.size };
}

function latin1(text: Uint8Array): string {
  return Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString("latin1");
}

/**
 * The file `text` (base64, ASCII bytes) encodes, when it is canonical base64 — RFC 4648's
 * standard alphabet with padding and nothing else, so that encoding the decoded bytes gives
 * `text` back exactly; undefined otherwise (url-safe alphabet, line breaks, missing padding,
 * any other text), and such text is stored as text.
 *
 * @example
 * base64File(new TextEncoder().encode("aGk="))?.sha256 // "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"
 * base64File(new TextEncoder().encode("aGk"))          // undefined (no padding)
 */
export function base64File(text: Uint8Array): Base64File | undefined {
  if (text.length === 0 || text.length % 4 !== 0) return undefined;
  const key = Bun.hash.xxHash3(text, keySeed);
  const check = Bun.hash.xxHash3(text, checkSeed);
  const entry = cache.get(key);
  if (entry && entry.length === text.length && entry.check === check) {
    counts.hits += 1;
    cache.delete(key); // re-insert: Map order is the recency order
    cache.set(key, entry);
    if (entry.sha256 === undefined) return undefined;
    let decoded: Uint8Array | undefined;
    return {
      sha256: entry.sha256,
      get data() {
        return (decoded ??= new Uint8Array(Buffer.from(latin1(text), "base64")));
      },
    };
  }
  counts.misses += 1;
  const string = latin1(text);
  const decoded = Buffer.from(string, "base64");
  const canonical = decoded.toString("base64") === string;
  const sha256 = canonical ? new Bun.CryptoHasher("sha256").update(decoded).digest("hex") : undefined;
  cache.set(key, { length: text.length, check, sha256 });
  if (cache.size > CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value!);
  if (sha256 === undefined) return undefined;
  const data = new Uint8Array(decoded.buffer, decoded.byteOffset, decoded.byteLength);
  return { sha256, data };
}
