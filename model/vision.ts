/**
 * How many tokens an image takes in a Qwen-VL prompt. vLLM renders one `<|image_pad|>` per image
 * into the prompt text; its multimodal processor (transformers' Qwen2VLImageProcessor, which
 * Qwen2-VL, Qwen2.5-VL and Qwen3-VL share with their own sizes) then repeats it once per merged
 * patch of the image as resized by `smart_resize`: the image's height and width rounded to
 * multiples of `patch_size × merge_size`, scaled into [min_pixels, max_pixels], then
 * `(h / patch) × (w / patch) / merge²` tokens. Read from transformers 5.10.4,
 * `models/qwen2_vl/image_processing_qwen2_vl.py` (`smart_resize`, `get_number_of_image_patches`)
 * and `processing_qwen2_vl.py` (`num_image_tokens = patches // merge_size**2`).
 */
import { imageSize } from "image-size";

/** A Qwen-VL image processor's sizes (its `preprocessor_config.json`). */
export type VisionProcessor = {
  patchSize: number;
  mergeSize: number;
  /** `min_pixels` (`size.shortest_edge`). */
  minPixels: number;
  /** `max_pixels` (`size.longest_edge`). */
  maxPixels: number;
};

/** transformers' Qwen2VLImageProcessor defaults (patch 14, merge 2, 56² to 28²·1280 pixels). */
export const QWEN2_VL_PROCESSOR: VisionProcessor = { patchSize: 14, mergeSize: 2, minPixels: 56 * 56, maxPixels: 28 * 28 * 1280 };

/** Qwen2.5-VL's `preprocessor_config.json` (min_pixels 3136, max_pixels 12845056, patch 14, merge 2). */
export const QWEN2_5_VL_PROCESSOR: VisionProcessor = { patchSize: 14, mergeSize: 2, minPixels: 3136, maxPixels: 12845056 };

/** An image that cannot be sized (not an image, a URL the renderer cannot read offline). */
export class ImageSizeError extends Error {
  override name = "ImageSizeError";
}

/**
 * Python's `round` (half to even), which smart_resize uses: `round(2.5) == 2`, `round(3.5) == 4`.
 *
 * @example
 * pyRound(70 / 28); // 2
 */
export function pyRound(value: number): number {
  const floor = Math.floor(value);
  const diff = value - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/**
 * transformers' `smart_resize`: the size an image is resized to before it is cut into patches.
 *
 * @example
 * smartResize(720, 1280, 28, 3136, 12845056); // [728, 1288]
 */
export function smartResize(height: number, width: number, factor: number, minPixels: number, maxPixels: number): [number, number] {
  if (Math.max(height, width) / Math.min(height, width) > 200) {
    throw new ImageSizeError(`absolute aspect ratio must be smaller than 200, got ${Math.max(height, width) / Math.min(height, width)}`);
  }
  let hBar = pyRound(height / factor) * factor;
  let wBar = pyRound(width / factor) * factor;
  if (hBar * wBar > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    hBar = Math.max(factor, Math.floor(height / beta / factor) * factor);
    wBar = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (hBar * wBar < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    hBar = Math.ceil((height * beta) / factor) * factor;
    wBar = Math.ceil((width * beta) / factor) * factor;
  }
  return [hBar, wBar];
}

/**
 * The number of `<|image_pad|>` tokens an image of this size becomes.
 *
 * @example
 * imageTokenCount(720, 1280, QWEN2_5_VL_PROCESSOR); // 1196 (a 1280x720 screenshot)
 */
export function imageTokenCount(height: number, width: number, processor: VisionProcessor): number {
  const [h, w] = smartResize(height, width, processor.patchSize * processor.mergeSize, processor.minPixels, processor.maxPixels);
  return ((h / processor.patchSize) * (w / processor.patchSize)) / (processor.mergeSize * processor.mergeSize);
}

/**
 * The pixel size of an image content part's data (`data:` URL, or base64 / bytes), as PIL reads
 * it (the stored size; JPEG EXIF orientation is not applied, as `Image.open` does not).
 *
 * @example
 * imageDimensions("data:image/png;base64,iVBORw0KGgo…"); // { width: 1280, height: 720 }
 */
export function imageDimensions(source: string | Uint8Array): { width: number; height: number } {
  let bytes: Uint8Array;
  if (typeof source === "string") {
    const match = /^data:([^,]*?)(;base64)?,(.*)$/s.exec(source);
    if (!match) {
      throw new ImageSizeError(`cannot size image ${JSON.stringify(source.slice(0, 60))}: only data: URLs are read here (the renderer fetches nothing)`);
    }
    bytes = match[2] ? Buffer.from(match[3]!, "base64") : new TextEncoder().encode(decodeURIComponent(match[3]!));
  } else bytes = source;
  try {
    const { width, height } = imageSize(bytes);
    if (!width || !height) throw new Error("no width or height");
    return { width, height };
  } catch (error) {
    throw new ImageSizeError(`cannot read the image's size (${(error as Error).message})`);
  }
}
