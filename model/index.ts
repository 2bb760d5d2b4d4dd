/**
 * The model's side of the wire: its tokenizer, its chat template run by a real Jinja engine
 * after vLLM's message preprocessing, and the parsers of its output, written from vLLM 0.33.0
 * (docs/model.md). The policy simulator renders and parses through it; so can a proxy that
 * renders prompts itself.
 */
export { loadModel, QWEN3, QWEN3_CODER, QWEN_VL_IMAGES, QWEN2_5_VL_IMAGES, ChatRequestError, ChatTemplateError, type Model, type ModelImages, type ModelSpec, type OutputParserOptions, type PreparedChat } from "./model.ts";
export { AppendError, type Appended } from "./append.ts";
export { derenderChat, chatStreamDerenderer, type ChatStreamDerenderer, type DerenderOptions, type DerenderedMessage, type EngineFinish, type StreamStep } from "./derender.ts";
export { preprocessChat, type ChatRenderRequest, type ImageHandling, type Preprocessed } from "./preprocess.ts";
export { compileChatTemplate, type ChatTemplate } from "./chat-template.ts";
export { pyStrip } from "./pystr.ts";
export { loadTokenizerFrom, type Tokenizer } from "./tokenizer.ts";
export { pyLoads, pyDumps, tryPyLoads, fromJs, toJs, pyFloatRepr, PyFloat, PyJsonError, type PyValue, type PyDict } from "./pyjson.ts";
export { chatOutputParser, type ChatOutputParser, type ParsedMessage } from "./parsers/chat-output.ts";
export { registerToolCallParser, registerReasoningParser, toolCallParserFactory, reasoningParserFactory, registeredParserNames } from "./parsers/registry.ts";
export { hermesToolParser } from "./parsers/hermes.ts";
export { qwen3ReasoningParser, qwen3CoderToolParser, qwen3ArgConverter } from "./parsers/qwen3.ts";
export type { DeltaMessage, DeltaToolCall, ToolCall, ExtractedToolCalls, ParseRequest, ParserContext, ParserOptions, ReasoningParser, ToolCallParser, StreamArgs } from "./parsers/types.ts";
export { imageDimensions, imageTokenCount, pyRound, smartResize, ImageSizeError, QWEN2_VL_PROCESSOR, QWEN2_5_VL_PROCESSOR, type VisionProcessor } from "./vision.ts";
export { qwen25VlDir, qwen25VlSpec, QWEN2_5_VL_PREPROCESSOR_CONFIG } from "./qwen2-5-vl.ts";
