/**
 * Protocol translation between the proxy's front doors (Anthropic Messages, OpenAI
 * Responses) and the Chat Completions API the policy's inference servers speak.
 * Pure functions and stateful stream translators; no I/O except count_tokens.
 */
export type * from "./chat-types.ts";
export { TranslationError, reasoningOf } from "./chat-types.ts";
export type { AnthropicToChatOptions } from "./anthropic/request.ts";
export { anthropicToChatRequest, imagePart } from "./anthropic/request.ts";
export type { AnthropicContext, AnthropicStopReason } from "./anthropic/response.ts";
export { anthropicMessageId, anthropicStopReason, anthropicUsage, chatToAnthropicMessage, parseToolInput } from "./anthropic/response.ts";
export type { AnthropicStreamEvent, AnthropicStreamTranslator } from "./anthropic/stream.ts";
export { anthropicSse, createAnthropicStreamTranslator } from "./anthropic/stream.ts";
export type { ToolCatalogue, ToolOrigin } from "./responses/tools.ts";
export { qualifiedToolName, responsesToolCatalogue } from "./responses/tools.ts";
export type { ResponsesToChatOptions, ResponsesTranslation } from "./responses/request.ts";
export { responsesToChatRequest } from "./responses/request.ts";
export type { ResponsesContext } from "./responses/response.ts";
export { chatToResponsesResponse, customInput, responseEnvelope, responsesUsage, toolCallItem } from "./responses/response.ts";
export type { ResponsesStreamEvent, ResponsesStreamOptions, ResponsesStreamTranslator } from "./responses/stream.ts";
export { createResponsesStreamTranslator, responsesSse } from "./responses/stream.ts";
export type { SseDecoder, SseMessage } from "../../lib/index.ts";
export { createSseDecoder } from "../../lib/index.ts";
export type { FoundImages, InlineImage } from "../capture/images.ts";
export { decodeDataUrl, findImages } from "../capture/images.ts";
export { SESSION_HEADERS, sessionHeaders } from "../capture/session-headers.ts";
export type { CountTokensOptions, TokenCount } from "./anthropic/count-tokens.ts";
export type { TokenizeSender } from "./anthropic/count-tokens.ts";
export { countChatTokens, estimateTokens, tokenizeUrl } from "./anthropic/count-tokens.ts";
export type { FrontDoorCall, FrontDoorProtocol } from "./front-door.ts";
export { anthropicError, anthropicFrontDoor, chatSseTransform, openaiError, responsesFrontDoor } from "./front-door.ts";
