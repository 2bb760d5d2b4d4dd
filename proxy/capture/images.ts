/**
 * Finds the images in a request body of any front door (Chat, Anthropic Messages,
 * Responses) so the proxy can store each base64 image once as a content-addressed Blob.
 * The body itself is not changed: the upstream still receives the image.
 *
 * A computer-use harness sends every earlier screenshot again on each turn, so the same
 * multi-MB base64 text is seen over and over: its sha256 is remembered (see `knownSha256`) and
 * the bytes are decoded only when someone reads `data` (the recorder, for a Blob not yet stored).
 */
import { createHash, randomBytes } from "node:crypto";

export interface InlineImage {
  /** sha256 of the decoded bytes, hex. */
  sha256: string;
  mediaType: string;
  /** The decoded bytes, decoded on first read (a screenshot seen before is not decoded at all unless read). */
  readonly data: Uint8Array;
}

export interface FoundImages {
  /** Base64 images (data: URLs and Anthropic base64 sources), one per distinct sha256, in order of appearance. */
  inline: InlineImage[];
  /** Remote images, referenced by URL and never fetched, distinct, in order. */
  urls: string[];
}

/** Splits a `data:` URL without a regex: a regex over a 4 MB URL scans all of it. */
function parseDataUrl(url: string): { mediaType: string; base64: string } | undefined {
  if (!url.startsWith("data:")) return undefined;
  const comma = url.indexOf(",", 5);
  if (comma < 0) return undefined;
  const header = url.slice(5, comma);
  const semi = header.indexOf(";");
  if (semi < 0 || !header.includes("base64", semi)) return undefined;
  return { mediaType: header.slice(0, semi) || "application/octet-stream", base64: url.slice(comma + 1) };
}

const decodeBase64 = (base64: string): Uint8Array => new Uint8Array(Buffer.from(base64, "base64"));

/**
 * Decode a base64 `data:` URL; undefined for anything else (or a non-base64 data URL).
 *
 * @example
 * decodeDataUrl("data:image/png;base64,aGk=")?.mediaType // "image/png"
 */
export function decodeDataUrl(url: string): { mediaType: string; data: Uint8Array } | undefined {
  const parsed = parseDataUrl(url);
  return parsed && { mediaType: parsed.mediaType, data: decodeBase64(parsed.base64) };
}

/**
 * base64 text → sha256 of its decoded bytes, process-wide, least recently used dropped first.
 * Keyed by a 64-bit wyhash of the text with a seed drawn per process (so colliding texts cannot
 * be prepared in advance) and checked against the text's length and a second, independent
 * 64-bit hash (xxHash3, its own seed): a wrong hit would point a call at another image's Blob,
 * silently, so 128 bits are compared, not 64. The text itself is not kept, so an entry is ~150
 * bytes and the cache holds a whole fleet's screenshots, not a handful. Hashing the text costs
 * ~0.25 ms per MB of it for both hashes, decode + sha256 ~1.6 ms (bench/large-body.ts).
 */
const CACHE_MAX_ENTRIES = 16_384;
const seed = randomBytes(8).readBigUInt64LE();
const checkSeed = randomBytes(8).readBigUInt64LE();
const cache = new Map<bigint, { length: number; check: bigint; sha256: string }>();
const counts = { hits: 0, misses: 0 };

function knownSha256(key: bigint, length: number, base64: string): string | undefined {
  const entry = cache.get(key);
  if (!entry || entry.length !== length || entry.check !== Bun.hash.xxHash3(base64, checkSeed)) return undefined;
  cache.delete(key); // re-insert: Map order is the recency order
  cache.set(key, entry);
  return entry.sha256;
}

function remember(key: bigint, base64: string, sha256: string): void {
  cache.set(key, { length: base64.length, check: Bun.hash.xxHash3(base64, checkSeed), sha256 });
  if (cache.size > CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value!);
}

/** Hits and misses of the sha256 cache since the process started (benchmarks, tests). */
export function imageCacheStats(): { hits: number; misses: number; entries: number } {
  return { ...counts, entries: cache.size };
}

/** The image of one base64 text: sha256 from the cache when the text was seen before. */
function inlineImage(mediaType: string, base64: string): InlineImage {
  const key = Bun.hash.wyhash(base64, seed);
  let decoded: Uint8Array | undefined;
  let sha256 = knownSha256(key, base64.length, base64);
  if (sha256 === undefined) {
    counts.misses += 1;
    decoded = decodeBase64(base64);
    sha256 = createHash("sha256").update(decoded).digest("hex");
    remember(key, base64, sha256);
  } else {
    counts.hits += 1;
  }
  return {
    sha256,
    mediaType,
    get data() {
      return (decoded ??= decodeBase64(base64));
    },
  };
}

/**
 * Walk a request body and collect its images. Recognised shapes: Chat `image_url` parts,
 * Responses `input_image` / `computer_screenshot` parts, Anthropic `image` blocks
 * (including those nested in tool_result content).
 *
 * @example
 * findImages({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,aGk=" } }] }] })
 * // { inline: [{ sha256: "8f434346...", mediaType: "image/png", data: Uint8Array [104, 105] }], urls: [] }
 */
export function findImages(body: unknown): FoundImages {
  const inline: InlineImage[] = [];
  const urls: string[] = [];
  const seen = new Set<string>();
  const addUrl = (url: string) => {
    const parsed = parseDataUrl(url);
    if (parsed) addBase64(parsed.mediaType, parsed.base64);
    else if (url.startsWith("data:")) return; // a non-base64 data URL carries no file worth storing
    else if (!seen.has(url)) {
      seen.add(url);
      urls.push(url);
    }
  };
  const addBase64 = (mediaType: string, base64: string) => {
    const image = inlineImage(mediaType, base64);
    if (seen.has(image.sha256)) return;
    seen.add(image.sha256);
    inline.push(image);
  };
  const walk = (v: unknown, depth: number) => {
    if (depth > 64 || v === null || typeof v !== "object") return;
    if (Array.isArray(v)) {
      for (const x of v) walk(x, depth + 1);
      return;
    }
    const o = v as Record<string, any>;
    switch (o.type) {
      case "image_url": {
        const url = typeof o.image_url === "string" ? o.image_url : o.image_url?.url;
        if (typeof url === "string") addUrl(url);
        return;
      }
      case "input_image":
      case "computer_screenshot":
        if (typeof o.image_url === "string") addUrl(o.image_url);
        return;
      case "image": {
        const s = o.source;
        if (s?.type === "base64" && typeof s.data === "string") {
          addBase64(String(s.media_type ?? "application/octet-stream"), s.data);
          return;
        }
        if (s?.type === "url" && typeof s.url === "string") {
          addUrl(s.url);
          return;
        }
        break;
      }
    }
    for (const x of Object.values(o)) if (x !== null && typeof x === "object") walk(x, depth + 1);
  };
  walk(body, 0);
  return { inline, urls };
}
