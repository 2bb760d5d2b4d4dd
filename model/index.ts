/**
 * The model's side of the wire: its tokenizer, its chat template run by a real Jinja engine
 * after vLLM's message preprocessing, and the parsers of its output, written from vLLM 0.33.0
 * (docs/model.md). The policy simulator renders and parses through it; so can a proxy that
 * renders prompts itself.
 */
export { loadModel, QWEN3, QWEN3_CODER, QWEN_VL_IMAGES, QWEN2_5_VL_IMAGES, ChatRequestError, ChatTemplateError, type Model, type ModelSpec, type PreparedChat } from "./model.ts";
export { noPreviousMessages, type ImageHandling, type PreviousMessages, type RawMessages } from "./preprocess.ts";
export { imageDimensions, imageTokenCount, ImageSizeError, QWEN2_5_VL_PROCESSOR, type VisionProcessor } from "./vision.ts";
export { AppendError } from "./append.ts";
export { derenderChat, chatStreamDerenderer, type DerenderOptions, type EngineFinish } from "./derender.ts";
export { pyStrip } from "./pystr.ts";
export type { Tokenizer } from "./tokenizer.ts";
export { pyDumps, tryPyLoads, fromJs, pyFloatRepr, PyFloat, type PyValue, type PyDict } from "./pyjson.ts";
export type { ChatOutputParser, ParsedMessage } from "./parsers/chat-output.ts";
export { registerToolCallParser, registerReasoningParser, registeredParserNames } from "./parsers/registry.ts";
export type { DeltaMessage } from "./parsers/types.ts";
