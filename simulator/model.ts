/**
 * The model the simulator plays, as the server it stands in for was started:
 *
 * - `--tool-call-parser hermes` (the default): Qwen3 as `model/` describes it (its tokenizer,
 *   chat template and vLLM's `qwen3` reasoning and `hermes` tool parsers), accepting images as
 *   Qwen2.5-VL does (a placeholder per image in the text, `<|image_pad|>` repeated per merged
 *   patch of the image in the prompt ids, as its processor sizes it; the simulator does not look
 *   at pixels) so that screenshots go through it as they would through a vision model;
 * - `--tool-call-parser qwen3_coder`: Qwen3-Coder (model/'s `QWEN3_CODER`: its own chat template,
 *   XML tool calls, no reasoning parser, text only).
 *
 * Both share Qwen3's tokenizer, loaded once per process on first use (about a second).
 */
import { loadModel, QWEN3, QWEN3_CODER, QWEN2_5_VL_IMAGES, type Model, type ModelSpec, type Tokenizer } from "../model/index.ts";

export const SIM_MODEL: ModelSpec = { ...QWEN3, images: QWEN2_5_VL_IMAGES };

/** The tool-call parsers the simulator can stand in for (vLLM's `--tool-call-parser`). */
export const SIM_TOOL_PARSERS = ["hermes", "qwen3_coder"] as const;
export type SimToolParser = (typeof SIM_TOOL_PARSERS)[number];

/**
 * The model a server started with `--tool-call-parser parser` serves in the simulator.
 *
 * @example
 * simModelSpec("qwen3_coder").reasoningParser // null: Qwen3-Coder does not think
 */
export function simModelSpec(parser: SimToolParser = "hermes"): ModelSpec {
  if (parser === "qwen3_coder") return QWEN3_CODER;
  if (parser === "hermes") return SIM_MODEL;
  throw new Error(`policy simulator: toolCallParser must be one of ${SIM_TOOL_PARSERS.join(", ")}, got "${parser}"`);
}

/** Token ids of the ChatML markers (Qwen3's vocabulary). */
export const IM_START = 151644;
export const IM_END = 151645;

export type SimTokenizer = Tokenizer;

/**
 * @example
 * const model = await loadSimModel();
 * model.renderChatIds({ messages: [{ role: "user", content: "Hello" }] });
 */
export function loadSimModel(spec: ModelSpec = SIM_MODEL): Promise<Model> {
  return loadModel(spec);
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
