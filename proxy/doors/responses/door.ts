/**
 * `POST /v1/responses` (Codex): the Responses API, translated to Chat Completions, or passed
 * through unchanged when the upstream speaks Responses itself (eval-only); and a clean refusal
 * of the Responses WebSocket upgrade (Codex then falls back to HTTP POST).
 */
import { Protocol } from "../../../schemas/index.ts";
import { openaiError, requireModel } from "../openai-body.ts";
import { translatedCall, vendorPassthrough, type TranslatedCall } from "../translated.ts";
import type { DoorRoute, FrontDoor, UpstreamProtocol } from "../types.ts";
import { responsesToChatRequest, type ResponsesToChatOptions } from "./request.ts";
import { chatToResponsesResponse } from "./response.ts";
import { createResponsesStreamTranslator, responsesSse } from "./stream.ts";

/**
 * Translates a Responses API call (throws TranslationError for a body it cannot translate).
 *
 * @example
 * const call = responsesFrontDoor({ model: "gpt-x", input: "hi", stream: true });
 * call.chatRequest.stream // true
 */
export function responsesFrontDoor(body: any, options: ResponsesToChatOptions & { reasoningAs?: "reasoning_text" | "summary" } = {}): TranslatedCall {
  const { request: chatRequest, catalogue } = responsesToChatRequest(body, options);
  const ctx = { request: body, catalogue, reasoningAs: options.reasoningAs };
  return {
    protocol: "responses",
    chatRequest,
    model: String(body.model ?? ""),
    stream: body.stream === true,
    fromChatJson: (chat) => chatToResponsesResponse(chat, ctx),
    streamTranslator: () => {
      const t = createResponsesStreamTranslator(ctx);
      return {
        push: (c) => t.push(c).map(responsesSse).join(""),
        finish: () => t.finish().map(responsesSse).join(""),
        fail: (m) => t.fail(m).map(responsesSse).join(""),
        withdraw: (m) => t.withdraw(m).map(responsesSse).join(""),
      };
    },
    errorBody: openaiError,
  };
}

/** `GET /v1/responses`: the WebSocket transport is refused with a reason Codex understands. */
const refuseWebSocketRoute: DoorRoute = {
  method: "GET",
  path: "/v1/responses",
  handle(c) {
    const upgrade = (c.req.header("upgrade") ?? "").toLowerCase() === "websocket";
    const message = upgrade
      ? "the forge proxy serves the Responses API over HTTP only: WebSocket upgrades are refused, send POST /v1/responses (Codex falls back to it)"
      : "GET /v1/responses is not served: send POST /v1/responses";
    return Response.json(
      { error: { message, type: "invalid_request_error", param: null, code: upgrade ? "websocket_not_supported" : "method_not_allowed" } },
      { status: 405, headers: { allow: "POST" } },
    );
  },
};

/**
 * The Responses door for an upstream protocol.
 *
 * @example
 * createResponsesDoor().prepare({ model: "m", input: "hi" }).capture // "chat"
 */
export function createResponsesDoor(upstream: UpstreamProtocol = "chat"): FrontDoor {
  return {
    name: "responses",
    protocol: Protocol.RESPONSES,
    path: "/v1/responses",
    routes: [refuseWebSocketRoute],
    prepare(body) {
      requireModel(body);
      if (upstream === "responses") return vendorPassthrough(body, "/v1/responses", openaiError);
      return translatedCall("responses", () => responsesFrontDoor(body), body);
    },
  };
}
