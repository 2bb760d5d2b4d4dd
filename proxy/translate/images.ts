/**
 * Finds the images in a request body of any front door (Chat, Anthropic Messages,
 * Responses) so the proxy can store each base64 image once as a content-addressed Blob.
 * The body itself is not changed: the upstream still receives the image.
 */
import { createHash } from "node:crypto";

export interface InlineImage {
  /** sha256 of the decoded bytes, hex. */
  sha256: string;
  mediaType: string;
  data: Uint8Array;
}

export interface FoundImages {
  /** Base64 images (data: URLs and Anthropic base64 sources), one per distinct sha256, in order of appearance. */
  inline: InlineImage[];
  /** Remote images, referenced by URL and never fetched, distinct, in order. */
  urls: string[];
}

const DATA_URL = /^data:([^;,]*)(;[^,]*)?,(.*)$/s;

/**
 * Decode a base64 `data:` URL; undefined for anything else (or a non-base64 data URL).
 *
 * @example
 * decodeDataUrl("data:image/png;base64,aGk=")?.mediaType // "image/png"
 */
export function decodeDataUrl(url: string): { mediaType: string; data: Uint8Array } | undefined {
  const m = DATA_URL.exec(url);
  if (!m || !(m[2] ?? "").includes("base64")) return undefined;
  return { mediaType: m[1] || "application/octet-stream", data: new Uint8Array(Buffer.from(m[3] ?? "", "base64")) };
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
    const decoded = decodeDataUrl(url);
    if (decoded) addBytes(decoded.mediaType, decoded.data);
    else if (url.startsWith("data:")) return; // a non-base64 data URL carries no file worth storing
    else if (!seen.has(url)) {
      seen.add(url);
      urls.push(url);
    }
  };
  const addBytes = (mediaType: string, data: Uint8Array) => {
    const sha256 = createHash("sha256").update(data).digest("hex");
    if (seen.has(sha256)) return;
    seen.add(sha256);
    inline.push({ sha256, mediaType, data });
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
          addBytes(String(s.media_type ?? "application/octet-stream"), new Uint8Array(Buffer.from(s.data, "base64")));
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
