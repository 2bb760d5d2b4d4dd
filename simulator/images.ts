/**
 * The images of a token-id prompt, as the engines' generate routes take them: each image's
 * `<|image_pad|>` in the ids expanded to the image's token count (model/vision.ts, with the
 * processor configuration the server was started with), the simulator looking at no pixels.
 *
 * - SGLang 0.5.23 (`multimodal/processors/base_processor.py`, `process_and_combine_mm_data`,
 *   SGLANG_MM_AVOID_RETOKENIZE on by default): ids holding one pad per image are kept verbatim
 *   and each pad expanded (`_expand_input_ids`); on a count mismatch it logs "falling back to
 *   decode+retokenize, which may change prompt length (token drift)" and runs the processor on
 *   the decoded text, whose pads it expands in order (a count that still mismatches is an error,
 *   worded here by the simulator);
 * - vLLM 0.33.0 (`multimodal/processing/processor.py`): each pad of the token prompt is replaced
 *   by the image's tokens; a count mismatch is an error ("Expected there to be N prompt
 *   placeholders corresponding to N image items, but instead found M prompt placeholders!").
 */
import { imageDimensions, imageTokenCount, ImageSizeError, type VisionProcessor } from "../model/index.ts";
import type { SimTokenizer } from "./model.ts";

export type ExpandedPrompt = { ids: number[]; counts: number[]; drift?: string } | { error: string };

/** `<|image_pad|>` in Qwen's vocabulary. */
export const IMAGE_PAD = 151655;

/**
 * The prompt the engine runs for `ids` and `images` (data: URLs or base64).
 *
 * @example
 * expandPrompt("sglang", tokenizer, ids, ["data:image/png;base64,…"], processor) // { ids: [… 1196 pads …], counts: [1196] }
 */
export function expandPrompt(engine: "vllm" | "sglang", tokenizer: SimTokenizer, ids: readonly number[], images: readonly string[], processor: VisionProcessor): ExpandedPrompt {
  let counts: number[];
  try {
    counts = images.map((image) => {
      const { width, height } = imageDimensions(image.startsWith("data:") ? image : Buffer.from(image, "base64"));
      return imageTokenCount(height, width, processor);
    });
  } catch (error) {
    if (error instanceof ImageSizeError) return { error: `Failed to load image: ${error.message}` };
    throw error;
  }
  const pads = ids.filter((id) => id === IMAGE_PAD).length;
  if (pads === images.length) return { ids: expand(ids, counts), counts };
  if (engine === "vllm") {
    return { error: `Expected there to be ${images.length} prompt placeholders corresponding to ${images.length} image items, but instead found ${pads} prompt placeholders! This is likely because you forgot to include input placeholder tokens (e.g., \`<image>\`, \`<|image_pad|>\`) in the prompt.` };
  }
  // SGLang's fallback: decode, then the processor re-tokenizes the text and expands its pads.
  const retokenized = tokenizer.encode(tokenizer.decode(ids as number[]));
  const found = retokenized.filter((id) => id === IMAGE_PAD).length;
  if (found !== images.length) return { error: `policy simulator: the processor found ${found} image tokens in the decoded prompt for ${images.length} images (SGLang's processor fails there too)` };
  return { ids: expand(retokenized, counts), counts, drift: `Due to prompt has ${pads} image placeholder token(s) but ${images.length} image(s) were provided, falling back to decode+retokenize, which may change prompt length (token drift).` };
}

function expand(ids: readonly number[], counts: readonly number[]): number[] {
  const out: number[] = [];
  let image = 0;
  for (const id of ids) {
    if (id !== IMAGE_PAD) out.push(id);
    else for (let n = counts[image++]!; n > 0; n--) out.push(IMAGE_PAD);
  }
  return out;
}
