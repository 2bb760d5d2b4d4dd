/**
 * How a model directory's images become tokens, from its `preprocessor_config.json` (what vLLM
 * and SGLang build the model's processor from): Qwen2-VL / Qwen2.5-VL's `Qwen2VLImageProcessor`
 * (`patch_size`, `merge_size`, `min_pixels` / `max_pixels`, or `size.shortest_edge` /
 * `size.longest_edge`) is the processor model/vision.ts implements. A directory without the
 * file is a text model; one with another processor renders the placeholder, and token-in mode
 * refuses its images naming the processor model/ does not implement (images.ts).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { QWEN_VL_IMAGES, type ImageHandling } from "../../model/index.ts";
import { TokenInSettingsError } from "./spec.ts";

/** The image processors model/vision.ts sizes images as. */
const QWEN_VL_PROCESSORS = new Set(["Qwen2VLImageProcessor", "Qwen2VLImageProcessorFast"]);

/**
 * The image handling of the model in `dir`, or undefined for a text model.
 *
 * @example
 * visionOfDir("/models/Qwen2.5-VL-7B-Instruct")?.expand?.processor // { patchSize: 14, mergeSize: 2, minPixels: 3136, maxPixels: 12845056 }
 */
export function visionOfDir(dir: string, setting = "--model-dir"): ImageHandling | undefined {
  const path = join(dir, "preprocessor_config.json");
  if (!existsSync(path)) return undefined;
  let config: Record<string, any>;
  try {
    config = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new TokenInSettingsError(`${setting}: ${path} is not JSON (${(error as Error).message}); it is the model's image processor configuration, as its Hugging Face directory holds it`);
  }
  const type = String(config.image_processor_type ?? "");
  if (!QWEN_VL_PROCESSORS.has(type)) return { ...QWEN_VL_IMAGES, unsupported: `${type || "an image processor without image_processor_type"} (${path})` };
  const number = (value: unknown, field: string): number => {
    if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
    throw new TokenInSettingsError(`${setting}: ${path}: ${field} must be a positive integer, got ${JSON.stringify(value)}`);
  };
  const processor = {
    patchSize: number(config.patch_size ?? 14, "patch_size"),
    mergeSize: number(config.merge_size ?? 2, "merge_size"),
    minPixels: number(config.min_pixels ?? config.size?.shortest_edge ?? 56 * 56, "min_pixels"),
    maxPixels: number(config.max_pixels ?? config.size?.longest_edge ?? 28 * 28 * 1280, "max_pixels"),
  };
  return { ...QWEN_VL_IMAGES, expand: { token: "<|image_pad|>", processor } };
}
