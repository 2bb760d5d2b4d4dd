/**
 * Adapter for front doors whose protocol is translated to Chat Completions upstream
 * (Anthropic Messages, OpenAI Responses: `proxy/translate`'s FrontDoorCall). The pipeline then
 * captures token ids from the Chat answer exactly as for the chat front door, and the
 * translator turns the stripped Chat JSON / SSE into the harness's protocol.
 */
import type { Protocol } from "../../schemas/index.ts";
import { ProxyHttpError } from "../errors.ts";
import type { FrontDoor } from "./types.ts";

/** The part of `proxy/translate`'s FrontDoorCall the pipeline uses. */
export interface TranslatedCall {
  chatRequest: unknown;
  model: string;
  stream: boolean;
  fromChatJson(chat: any): unknown;
  streamTransform(): TransformStream<Uint8Array, Uint8Array>;
  errorBody(status: number, message: string): unknown;
}

/**
 * A front door from a translator; a translation error becomes a 400 naming it.
 *
 * @example
 * import { anthropicFrontDoor } from "./translate.ts";
 * const messages = translatedFrontDoor({ name: "anthropic_messages", protocol: Protocol.ANTHROPIC_MESSAGES, path: "/v1/messages", translate: (b) => anthropicFrontDoor(b) });
 * createProxy({ ..., frontDoors: [...DEFAULT_FRONT_DOORS, messages] });
 */
export function translatedFrontDoor(o: { name: string; protocol: Protocol; path: string; translate: (body: Record<string, any>) => TranslatedCall }): FrontDoor {
  return {
    name: o.name,
    protocol: o.protocol,
    path: o.path,
    prepare(body) {
      let call: TranslatedCall;
      try {
        call = o.translate(body);
      } catch (error) {
        if (error instanceof ProxyHttpError) throw error;
        throw new ProxyHttpError(400, `${o.name} request: ${(error as Error).message}`, "invalid_request_error", "invalid_request");
      }
      return {
        capture: "chat",
        upstreamPath: "/v1/chat/completions",
        model: call.model,
        stream: call.stream,
        upstreamBody: call.chatRequest as Record<string, any>,
        passthrough: false,
        // The translators read usage; ids and logprobs never reach the harness.
        wants: { tokenIds: false, logprobs: false, usage: true },
        translateJson: (json) => call.fromChatJson(json),
        translateStream: () => call.streamTransform(),
        errorBody: (status, message) => call.errorBody(status, message),
      };
    },
  };
}
