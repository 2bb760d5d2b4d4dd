/**
 * The images of a sample, as veRL's processor needs them: one entry per occurrence, in the
 * order they appear in the request (the chat template renders them in that order, and veRL
 * re-runs the HF processor over them to rebuild the pixel inputs of the recorded image tokens).
 * Each is named by the sha256 of its decoded bytes, the key of the Blob record the proxy stored.
 */
import { createHash } from "node:crypto";
import { requestBodyOf, type ContentStore } from "../records/index.ts";
import type { ModelCall } from "../schemas/index.ts";

type Json = any; // request bodies are harness JSON: read defensively

/** sha256 per image occurrence (in order), remote images counted, and each image's bytes by sha256. */
export type ImageRefs = { refs: string[]; urls: number; bytes: Map<string, Uint8Array> };

const decoder = new TextDecoder();

/** The base64 payload of a `data:…;base64,` URL, else undefined. */
function dataUrlBase64(url: unknown): string | undefined {
  if (typeof url !== "string" || !url.startsWith("data:")) return undefined;
  const comma = url.indexOf(",");
  if (comma < 0 || !url.slice(5, comma).includes("base64")) return undefined;
  return url.slice(comma + 1);
}

/** The base64 image a content part holds (chat `image_url`, Responses `input_image`, Anthropic `image`), if any. */
function partImage(part: Json): string | undefined {
  if (part?.type === "image_url") return dataUrlBase64(typeof part.image_url === "string" ? part.image_url : part.image_url?.url);
  if (part?.type === "input_image") return dataUrlBase64(typeof part.image_url === "string" ? part.image_url : part.image_url?.url);
  if (part?.type === "image" && part.source?.type === "base64" && typeof part.source.data === "string") return part.source.data;
  return undefined;
}

/**
 * sha256 (hex) of every base64 image in `body`, in document order, repeats kept, and each
 * image's decoded bytes by sha256; `urls` counts remote images (never fetched, so never stored:
 * they cannot be replayed).
 *
 * @example
 * bodyImageRefs({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,aGk=" } }] }] }).refs
 * // ["8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"]
 */
export function bodyImageRefs(body: Json): ImageRefs {
  const refs: string[] = [];
  const bytes = new Map<string, Uint8Array>();
  let urls = 0;
  const seen = new Map<string, string>();
  const walk = (value: Json): void => {
    if (Array.isArray(value)) {
      for (const item of value) walk(item);
      return;
    }
    if (value === null || typeof value !== "object") return;
    const base64 = partImage(value);
    if (base64 !== undefined) {
      let sha = seen.get(base64);
      if (sha === undefined) {
        const data = new Uint8Array(Buffer.from(base64, "base64"));
        sha = createHash("sha256").update(data).digest("hex");
        seen.set(base64, sha);
        bytes.set(sha, data);
      }
      refs.push(sha);
      return;
    }
    if ((value.type === "image_url" || value.type === "input_image") && !base64) urls++;
    for (const key of Object.keys(value)) walk(value[key]);
  };
  walk(body);
  return { refs, urls, bytes };
}

/**
 * The images of a call's request (`bodyImageRefs` of its request body, rebuilt through its
 * rollout's content store); a body that is not JSON has none.
 *
 * @example
 * callImageRefs(lastCallOfSample, collected.content).refs // sha256 per image occurrence
 */
export function callImageRefs(call: ModelCall, content: ContentStore): ImageRefs {
  const none = { refs: [], urls: 0, bytes: new Map<string, Uint8Array>() };
  try {
    const text = decoder.decode(requestBodyOf(call, content));
    // Most calls carry no image: skip parsing those (an image part names its type).
    if (!text.includes("image")) return none;
    return bodyImageRefs(JSON.parse(text));
  } catch {
    return none;
  }
}
