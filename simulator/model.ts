/**
 * The model the simulator plays: Qwen3 as `model/` describes it (its tokenizer, chat template
 * and vLLM's `qwen3` reasoning and `hermes` tool parsers), accepting images as Qwen2.5-VL does
 * (a placeholder per image in the text, `<|image_pad|>` repeated per merged patch of the image
 * in the prompt ids, as its processor sizes it; the simulator does not look at pixels) so that
 * screenshots go through it as they would through a vision model. Loaded once per process, on first use (about a second).
 */
import { loadModel, QWEN3, QWEN2_5_VL_IMAGES, type Model, type ModelSpec, type Tokenizer } from "../model/index.ts";

export const SIM_MODEL: ModelSpec = { ...QWEN3, images: QWEN2_5_VL_IMAGES };

/** Token ids of the ChatML markers (Qwen3's vocabulary). */
export const IM_START = 151644;
export const IM_END = 151645;

export type SimTokenizer = Tokenizer;

/**
 * @example
 * const model = await loadSimModel();
 * model.renderChatIds({ messages: [{ role: "user", content: "Hello" }] });
 */
export function loadSimModel(): Promise<Model> {
  return loadModel(SIM_MODEL);
}

/**
 * The shared tokenizer; the first call loads it, later calls resolve at once.
 *
 * @example
 * (await loadTokenizer()).encode("Hello"); // [9707]
 */
export async function loadTokenizer(): Promise<SimTokenizer> {
  return (await loadSimModel()).tokenizer;
}
