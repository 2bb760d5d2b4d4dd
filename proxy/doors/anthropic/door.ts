/**
 * `POST /v1/messages` (Claude Code): Anthropic Messages, translated to Chat Completions, or
 * passed through unchanged when the upstream speaks Anthropic itself (eval-only); and
 * `POST /v1/messages/count_tokens`, answered with the upstream's tokenizer.
 */
import { Protocol } from "../../../schemas/index.ts";
import { parseJsonObject, readJsonBody } from "../../body.ts";
import { requireModel } from "../openai-body.ts";
import { translatedCall, vendorPassthrough, type TranslatedCall } from "../translated.ts";
import type { DoorRoute, FrontDoor, UpstreamProtocol, VendorOptions } from "../types.ts";
import { TranslationError } from "../chat-types.ts";
import { anthropicToChatRequest, type AnthropicToChatOptions } from "./request.ts";
import { chatToAnthropicMessage } from "./response.ts";
import { anthropicSse, createAnthropicStreamTranslator } from "./stream.ts";
import { countChatTokens } from "./count-tokens.ts";

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
 * Translates an Anthropic Messages call (throws TranslationError for a body it cannot translate).
 *
 * @example
 * const call = anthropicFrontDoor({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "hi" }] });
 * call.chatRequest.messages // [{ role: "user", content: "hi" }]
 */
export function anthropicFrontDoor(body: any, options: AnthropicToChatOptions = {}): TranslatedCall {
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
    streamTranslator: () => {
      const t = createAnthropicStreamTranslator(ctx);
      return {
        push: (c) => t.push(c).map(anthropicSse).join(""),
        finish: () => t.finish().map(anthropicSse).join(""),
        fail: (m) => t.fail(m).map(anthropicSse).join(""),
        withdraw: (m) => t.withdraw(m).map(anthropicSse).join(""),
      };
    },
    errorBody: anthropicError,
  };
}

/** `count_tokens` with the policy's own tokenizer (the upstream's `/tokenize`), else a labelled estimate. */
const countTokensRoute: DoorRoute = {
  method: "POST",
  path: "/v1/messages/count_tokens",
  async handle(c, env) {
    const state = env.resolveRollout(c);
    const body = parseJsonObject(await readJsonBody(c.req.raw, env.maxBodyBytes));
    let chat;
    try {
      chat = anthropicToChatRequest(body);
    } catch (error) {
      if (error instanceof TranslationError) return Response.json(anthropicError(400, error.message), { status: 400 });
      throw error;
    }
    const id = state.rollout.rolloutId;
    const count = await countChatTokens(chat, {
      send: async (bytes) => {
        const sent = await env.ctx.client.send({ rolloutId: id, path: "/tokenize", method: "POST", body: bytes, signal: c.req.raw.signal });
        return "error" in sent ? undefined : sent.response;
      },
    });
    // The source tells a harness (and a reader of logs) whether the policy's tokenizer counted.
    return Response.json({ input_tokens: count.input_tokens }, { headers: { "x-forge-token-count": count.source } });
  },
};

/**
 * The Anthropic Messages door for an upstream protocol.
 *
 * @example
 * createAnthropicMessagesDoor().prepare({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }).upstreamPath
 * // "/v1/chat/completions"
 */
export function createAnthropicMessagesDoor(upstream: UpstreamProtocol = "chat", vendor: VendorOptions = {}): FrontDoor {
  return {
    name: "anthropic_messages",
    protocol: Protocol.ANTHROPIC_MESSAGES,
    path: "/v1/messages",
    routes: [countTokensRoute],
    prepare(body, request) {
      requireModel(body);
      if (upstream !== "anthropic") return translatedCall("anthropic_messages", () => anthropicFrontDoor(body), body);
      const call = vendorPassthrough(body, `/v1/messages${request ? new URL(request.url).search : ""}`, anthropicError);
      // Anthropic authenticates with x-api-key (not a bearer) and needs its version header; betas are the harness's.
      const headers: Record<string, string> = { "anthropic-version": request?.headers.get("anthropic-version") ?? "2023-06-01" };
      const beta = request?.headers.get("anthropic-beta");
      if (beta) headers["anthropic-beta"] = beta;
      if (vendor.apiKey) Object.assign(headers, { "x-api-key": vendor.apiKey, authorization: "" });
      call.upstreamHeaders = headers;
      return call;
    },
  };
}
