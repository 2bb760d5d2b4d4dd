/**
 * Front doors whose protocol is not the upstream's: the harness request is translated to Chat
 * Completions (where vLLM / SGLang give token ids) and the answer back. The shared pipeline
 * captures token ids from the Chat answer exactly as for the chat door; the translator turns
 * the stripped Chat JSON / SSE into the harness's protocol. Also the vendor passthrough of
 * such a door (eval-only: the upstream speaks the harness's protocol itself).
 */
import type { Protocol } from "../../schemas/index.ts";
import { createSseDecoder } from "../../lib/index.ts";
import { ProxyHttpError } from "../errors.ts";
import { refuseDeepJson } from "../body.ts";
import type { ChatChunk, ChatRequest, ChatResponse } from "./chat-types.ts";
import { TranslationError } from "./chat-types.ts";
import type { FrontDoor, PreparedCall, StreamTranslator } from "./types.ts";

/** One translated call: the Chat request to send upstream and the ways back. */
export interface TranslatedCall {
  /** The harness protocol's name, for logs. */
  protocol?: string;
  /** The translated request for the Chat Completions upstream. */
  chatRequest: ChatRequest;
  /** The model name the harness asked for. */
  model: string;
  stream: boolean;
  /** The harness-protocol JSON body for a non-streaming Chat answer. */
  fromChatJson(chat: ChatResponse): unknown;
  /** Chat chunks in, harness-protocol SSE text out (see StreamTranslator). */
  streamTranslator(): ChunkTranslator;
  /** Protocol-style error body for an HTTP error answer. */
  errorBody(status: number, message: string): unknown;
}

/**
 * What the translator (not the harness) gets of the Chat answer: usage for the stream's end, and
 * prompt ids so Anthropic's message_start can report input tokens up front. The harness's
 * protocol has no token-id fields, so none of them reach it.
 */
const TRANSLATOR_WANTS = { tokenIds: true, logprobs: false, usage: true };

/**
 * The pipeline's view of a translated call; a body the translator cannot translate is a 400
 * naming the field.
 *
 * @example
 * translatedCall("anthropic_messages", () => anthropicFrontDoor(body)).upstreamPath // "/v1/chat/completions"
 */
export function translatedCall(door: string, translate: () => TranslatedCall, body?: unknown): PreparedCall {
  // Checked here, not for every call: only the translating doors walk the body recursively.
  if (body !== undefined) refuseDeepJson(body);
  let call: TranslatedCall;
  try {
    call = translate();
  } catch (error) {
    if (error instanceof TranslationError) throw new ProxyHttpError(400, error.message, "invalid_request_error", "invalid_value", error.path);
    if (error instanceof ProxyHttpError) throw error;
    throw new ProxyHttpError(400, `${door} request: ${(error as Error).message}`, "invalid_request_error", "invalid_request");
  }
  return {
    capture: "chat",
    upstreamPath: "/v1/chat/completions",
    model: call.model,
    stream: call.stream,
    upstreamBody: call.chatRequest as unknown as Record<string, any>,
    passthrough: false,
    wants: TRANSLATOR_WANTS,
    translateJson: (json) => call.fromChatJson(json),
    translateStream: () => call.streamTranslator(),
    errorBody: (status, message) => call.errorBody(status, message),
  };
}

/**
 * A front door from a translator: the plug-in path for a protocol the proxy does not ship.
 *
 * @example
 * const messages = translatedFrontDoor({ name: "anthropic_messages", protocol: Protocol.ANTHROPIC_MESSAGES, path: "/v1/messages", translate: (b) => anthropicFrontDoor(b) });
 * createProxy({ ..., frontDoors: [...DEFAULT_FRONT_DOORS, messages] });
 */
export function translatedFrontDoor(o: { name: string; protocol: Protocol; path: string; translate: (body: Record<string, any>) => TranslatedCall }): FrontDoor {
  return { name: o.name, protocol: o.protocol, path: o.path, prepare: (body) => translatedCall(o.name, () => o.translate(body), body) };
}

/**
 * The body goes upstream as the harness sent it, to a vendor API that speaks the harness's
 * protocol; its answer comes back as is (nothing is stripped).
 *
 * @example
 * vendorPassthrough(body, "/v1/responses", openaiError).passthrough // true
 */
export function vendorPassthrough(body: Record<string, any>, path: string, errorBody: (status: number, message: string) => unknown): PreparedCall {
  if (body.stream !== undefined && typeof body.stream !== "boolean") {
    throw new ProxyHttpError(400, `stream: expected a boolean, got ${JSON.stringify(body.stream)}`, "invalid_request_error", "invalid_type", "stream");
  }
  return {
    capture: "chat",
    upstreamPath: path,
    model: String(body.model),
    stream: body.stream === true,
    upstreamBody: body,
    passthrough: true,
    wants: { tokenIds: true, logprobs: true, usage: true },
    errorBody: (status, message) => errorBody(status, message),
  };
}

/** A chunk translator: Chat chunks in, the harness protocol's SSE text out. */
export type ChunkTranslator = StreamTranslator;

/**
 * Wraps a chunk translator as a byte stream transform over the upstream's Chat SSE (for tests
 * and plug-ins; the pipeline drives the translator itself, see stream-answer.ts).
 * `[DONE]` ends the message; an `error` payload or a stream cut before any finish_reason
 * ends it with the protocol's failure event, so the harness never waits on a dead stream.
 *
 * @example
 * const bytes = upstreamSse.pipeThrough(chatSseTransform(call.streamTranslator()));
 */
export function chatSseTransform(t: ChunkTranslator): TransformStream<Uint8Array, Uint8Array> {
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
