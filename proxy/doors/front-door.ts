/**
 * One object per translated call that the proxy's chat pipeline drives: the Chat request
 * to send upstream, and the way back for a JSON answer or an SSE stream, plus the
 * protocol's own error body. Keeps the proxy core free of protocol details.
 */
import type { ChatChunk, ChatRequest, ChatResponse } from "./chat-types.ts";
import { TranslationError } from "./chat-types.ts";
import type { AnthropicToChatOptions } from "./anthropic/request.ts";
import { anthropicToChatRequest } from "./anthropic/request.ts";
import { chatToAnthropicMessage } from "./anthropic/response.ts";
import { anthropicSse, createAnthropicStreamTranslator } from "./anthropic/stream.ts";
import type { ResponsesToChatOptions } from "./responses/request.ts";
import { responsesToChatRequest } from "./responses/request.ts";
import { chatToResponsesResponse } from "./responses/response.ts";
import { createResponsesStreamTranslator, responsesSse } from "./responses/stream.ts";
import { createSseDecoder } from "../../lib/index.ts";

export type FrontDoorProtocol = "anthropic_messages" | "responses";

export interface FrontDoorCall {
  protocol: FrontDoorProtocol;
  /** The translated request for the Chat Completions upstream. */
  chatRequest: ChatRequest;
  /** The model name the harness asked for. */
  model: string;
  stream: boolean;
  /** The harness-protocol JSON body for a non-streaming Chat answer. */
  fromChatJson(chat: ChatResponse): unknown;
  /** Chat SSE bytes in, harness-protocol SSE bytes out. */
  streamTransform(): TransformStream<Uint8Array, Uint8Array>;
  /** Protocol-style error body for an HTTP error answer. */
  errorBody(status: number, message: string): unknown;
}

/**
 * Anthropic-style error body.
 *
 * @example
 * anthropicError(400, "messages: expected an array") // { type: "error", error: { type: "invalid_request_error", message: "messages: expected an array" } }
 */
export function anthropicError(status: number, message: string) {
  const type =
    status === 400 || status === 413 || status === 422 ? "invalid_request_error"
    : status === 401 ? "authentication_error"
    : status === 403 ? "permission_error"
    : status === 404 ? "not_found_error"
    : status === 429 ? "rate_limit_error"
    : status === 503 || status === 529 ? "overloaded_error"
    : "api_error";
  return { type: "error", error: { type, message } };
}

/**
 * OpenAI-style error body (what the Responses API returns).
 *
 * @example
 * openaiError(400, "input[0].role: ...").error.type // "invalid_request_error"
 */
export function openaiError(status: number, message: string) {
  const type = status >= 500 ? "server_error" : status === 429 ? "rate_limit_error" : status === 401 ? "authentication_error" : "invalid_request_error";
  return { error: { message, type, param: null, code: null } };
}

/**
 * Prepare an Anthropic Messages call (throws TranslationError for a body it cannot translate).
 *
 * @example
 * const call = anthropicFrontDoor({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "hi" }] });
 * call.chatRequest.messages // [{ role: "user", content: "hi" }]
 */
export function anthropicFrontDoor(body: any, options: AnthropicToChatOptions = {}): FrontDoorCall {
  const chatRequest = anthropicToChatRequest(body, options);
  const model = String(body.model ?? "");
  const stopSequences = Array.isArray(body.stop_sequences) ? body.stop_sequences.map(String) : [];
  const ctx = { model, stopSequences };
  return {
    protocol: "anthropic_messages",
    chatRequest,
    model,
    stream: body.stream === true,
    fromChatJson: (chat) => chatToAnthropicMessage(chat, ctx),
    streamTransform: () => {
      const t = createAnthropicStreamTranslator(ctx);
      return chatSseTransform({
        push: (c) => t.push(c).map(anthropicSse).join(""),
        finish: () => t.finish().map(anthropicSse).join(""),
        fail: (m) => t.fail(m).map(anthropicSse).join(""),
      });
    },
    errorBody: anthropicError,
  };
}

/**
 * Prepare a Responses API call (throws TranslationError for a body it cannot translate).
 *
 * @example
 * const call = responsesFrontDoor({ model: "gpt-x", input: "hi", stream: true });
 * call.chatRequest.stream // true
 */
export function responsesFrontDoor(body: any, options: ResponsesToChatOptions & { reasoningAs?: "reasoning_text" | "summary" } = {}): FrontDoorCall {
  const { request: chatRequest, catalogue } = responsesToChatRequest(body, options);
  const ctx = { request: body, catalogue, reasoningAs: options.reasoningAs };
  return {
    protocol: "responses",
    chatRequest,
    model: String(body.model ?? ""),
    stream: body.stream === true,
    fromChatJson: (chat) => chatToResponsesResponse(chat, ctx),
    streamTransform: () => {
      const t = createResponsesStreamTranslator(ctx);
      return chatSseTransform({
        push: (c) => t.push(c).map(responsesSse).join(""),
        finish: () => t.finish().map(responsesSse).join(""),
        fail: (m) => t.fail(m).map(responsesSse).join(""),
      });
    },
    errorBody: openaiError,
  };
}

interface TextTranslator {
  push(chunk: ChatChunk): string;
  finish(): string;
  fail(message: string): string;
}

/**
 * Wrap a chunk translator as a byte stream transform over the upstream's Chat SSE.
 * `[DONE]` ends the message; an `error` payload or a stream cut before any finish_reason
 * ends it with the protocol's failure event, so the harness never waits on a dead stream.
 */
export function chatSseTransform(t: TextTranslator): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const sse = createSseDecoder();
  let done = false;
  let sawFinish = false;
  const handle = (data: string): string => {
    if (done) return "";
    if (data === "[DONE]") {
      done = true;
      return t.finish();
    }
    let chunk: ChatChunk & { error?: { message?: string } };
    try {
      chunk = JSON.parse(data);
    } catch {
      done = true;
      return t.fail(`upstream sent a malformed stream chunk: ${data.slice(0, 200)}`);
    }
    if (chunk.error) {
      done = true;
      return t.fail(String(chunk.error.message ?? "upstream error"));
    }
    if (chunk.choices?.some((c) => c.finish_reason)) sawFinish = true;
    return t.push(chunk);
  };
  const emit = (text: string, controller: TransformStreamDefaultController<Uint8Array>) => {
    if (text !== "") controller.enqueue(encoder.encode(text));
  };
  return new TransformStream<Uint8Array, Uint8Array>({
    transform(bytes, controller) {
      emit(sse.push(decoder.decode(bytes, { stream: true })).map((m) => handle(m.data)).join(""), controller);
    },
    flush(controller) {
      let out = sse.push(decoder.decode()).concat(sse.flush()).map((m) => handle(m.data)).join("");
      if (!done) {
        done = true;
        out += sawFinish ? t.finish() : t.fail("upstream stream ended before the response was complete");
      }
      emit(out, controller);
    },
  });
}

export { TranslationError };
