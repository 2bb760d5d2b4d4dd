/**
 * Token-in with images (docs/token-in.md, "Images"). A chain keeps the collapsed form of its
 * prompts: one `<|vision_start|><|image_pad|><|vision_end|>` per image, as the template renders
 * it, so prompt n+1 = prompt n + completion n + the new messages holds across screenshots. The
 * engine gets those ids with every image of the conversation so far, in placeholder order, and
 * expands each pad to the image's token count itself (SGLang 0.5.23's `/generate` with
 * `image_data`, vLLM 0.33.0's `/inference/v1/generate` with `content_parts`). The proxy expands
 * them too (model/vision.ts) and holds the engine's echo of the prompt it ran to that: a prompt
 * that differs (another processor configuration, SGLang's decode + re-tokenize fallback) is
 * recorded PARTIAL with the reason, never as a silent drift.
 */
import type { Model, PreparedChat } from "../../model/index.ts";
import { ProxyHttpError } from "../errors.ts";

/** The images of a token-in call. */
export interface CallImages {
  /** Each image's source (a `data:` URL, or a URL), in placeholder order. */
  sources: string[];
  /** Each image's token count, as model/vision.ts sizes it. */
  counts: number[];
  /** The prompt the engine should run: the collapsed prompt with each pad expanded. */
  expanded: number[];
}

/**
 * The images of a prepared request whose prompt ids are `collapsed`, or undefined without images.
 * Throws a 400 naming what is missing when the model cannot take them token-in.
 *
 * @example
 * const images = callImages(model, prepared, plan.prompt); // { sources: ["data:image/png;base64,…"], counts: [1196], expanded: [...] }
 */
export function callImages(model: Model, prepared: PreparedChat, collapsed: ArrayLike<number>): CallImages | undefined {
  if (prepared.images.length === 0) return undefined;
  const vision = model.images;
  if (!vision) {
    throw new ProxyHttpError(
      400,
      `token-in mode with images needs the model's image processor (its image token, and how many of it each image becomes), and model/ does not implement ${model.spec.images?.unsupported ? `${model.spec.name}'s ${model.spec.images.unsupported}` : `one for ${model.spec.name}`}: it implements Qwen2-VL / Qwen2.5-VL's Qwen2VLImageProcessor, read from the model directory's preprocessor_config.json; serve this model's image calls in engine mode (tokenMode: engine; docs/token-in.md)`,
      "invalid_request_error",
      "invalid_request",
      "messages",
    );
  }
  const remote = prepared.images.findIndex((s) => !s.startsWith("data:"));
  if (remote >= 0) {
    throw new ProxyHttpError(400, `image ${remote + 1} of the request is a URL (${prepared.images[remote]!.slice(0, 80)}); token-in mode sizes each image to check the prompt the engine runs, and fetches nothing: send images inline as data: URLs, or use engine mode`, "invalid_request_error", "invalid_request", "messages");
  }
  const pads = countOf(collapsed, vision.padId);
  if (pads !== prepared.images.length) {
    throw new ProxyHttpError(400, `the prompt holds ${pads} image tokens for ${prepared.images.length} images (text that spells the image token is not allowed)`, "invalid_request_error", "invalid_request", "messages");
  }
  let counts: number[];
  try {
    counts = vision.tokenCounts(prepared.images);
  } catch (error) {
    throw new ProxyHttpError(400, (error as Error).message, "invalid_request_error", "invalid_request", "messages");
  }
  return { sources: prepared.images, counts, expanded: vision.expand(collapsed, counts) };
}

/**
 * Why the prompt the engine echoed is not the proxy's expansion ("" when it is): its length,
 * then the first id that differs.
 *
 * @example
 * echoProblem([1, 5, 5, 2], [1, 5, 5, 5, 2]) // "the engine ran a prompt of 5 tokens, the proxy's expansion of its images has 4 …"
 */
export function echoProblem(expected: ArrayLike<number>, echoed: ArrayLike<number> | undefined): string {
  if (echoed === undefined) return "the engine did not echo the prompt it ran (asked with return_prompt_token_ids / return_token_ids), so its image expansion cannot be checked";
  if (echoed.length !== expected.length) {
    return `the engine ran a prompt of ${echoed.length} tokens, the proxy's expansion of its images has ${expected.length} (model/vision.ts): the engine sized an image differently (its processor configuration) or re-tokenized the prompt; the recorded prompt is the engine's`;
  }
  for (let i = 0; i < expected.length; i++) {
    if (echoed[i] !== expected[i]) return `the engine's prompt differs from the proxy's expansion at token ${i} (${echoed[i]} for ${expected[i]}): it re-tokenized the prompt; the recorded prompt is the engine's`;
  }
  return "";
}

function countOf(ids: ArrayLike<number>, id: number): number {
  let n = 0;
  for (let i = 0; i < ids.length; i++) if (ids[i] === id) n++;
  return n;
}
