/**
 * The Anthropic Messages and Responses front doors as plug-ins of the proxy's shared
 * pipeline (proxy/frontdoors/types.ts): each translates the harness request to Chat
 * Completions, where vLLM/SGLang give token ids, and the answer back.
 */
import { Protocol } from "../../schemas/index.ts";
import { ProxyHttpError } from "../errors.ts";
import type { FrontDoor, PreparedCall } from "./types.ts";
import { chatFrontDoor } from "./chat.ts";
import { completionsFrontDoor } from "./completions.ts";
import type { FrontDoorCall } from "./front-door.ts";
import { anthropicError, anthropicFrontDoor, openaiError, responsesFrontDoor } from "./front-door.ts";
import { TranslationError } from "./chat-types.ts";

/**
 * What the translator (not the harness) gets of the Chat answer: usage for the stream's end, and
 * prompt ids so message_start can report input tokens up front. The harness's protocol has no
 * token-id fields, so none of them reach it.
 */
const WANTS = { tokenIds: true, logprobs: false, usage: true };

function requireModel(body: Record<string, any>): string {
  if (typeof body.model !== "string" || body.model === "") {
    throw new ProxyHttpError(400, "model: required, a non-empty string (the name the upstream serves)", "invalid_request_error", "invalid_value", "model");
  }
  return body.model;
}

function translated(make: () => FrontDoorCall): FrontDoorCall {
  try {
    return make();
  } catch (error) {
    if (error instanceof TranslationError) {
      throw new ProxyHttpError(400, error.message, "invalid_request_error", "invalid_value", error.path);
    }
    throw error;
  }
}

function preparedFrom(call: FrontDoorCall): PreparedCall {
  return {
    capture: "chat",
    upstreamPath: "/v1/chat/completions",
    model: call.model,
    stream: call.stream,
    upstreamBody: call.chatRequest,
    passthrough: false,
    wants: WANTS,
    translateJson: (json) => call.fromChatJson(json),
    translateStream: () => call.streamTransform(),
    errorBody: (status, message) => call.errorBody(status, message),
  };
}

/** How a front door reaches its upstream: translated to Chat (default), or passed through to a vendor API. */
export type UpstreamProtocol = "chat" | "anthropic" | "responses";

/**
 * `POST /v1/messages` (Claude Code): Anthropic Messages, translated to Chat Completions,
 * or passed through unchanged when the upstream speaks Anthropic itself (eval-only).
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
    prepare(body, request) {
      requireModel(body);
      if (upstream === "anthropic") {
        const call = passthroughCall(body, `/v1/messages${request ? new URL(request.url).search : ""}`, anthropicError);
        // Anthropic authenticates with x-api-key (not a bearer) and needs its version header; betas are the harness's.
        const headers: Record<string, string> = { "anthropic-version": request?.headers.get("anthropic-version") ?? "2023-06-01" };
        const beta = request?.headers.get("anthropic-beta");
        if (beta) headers["anthropic-beta"] = beta;
        if (vendor.apiKey) Object.assign(headers, { "x-api-key": vendor.apiKey, authorization: "" });
        call.upstreamHeaders = headers;
        return call;
      }
      return preparedFrom(translated(() => anthropicFrontDoor(body)));
    },
  };
}

/**
 * `POST /v1/responses` (Codex): the Responses API, translated to Chat Completions, or passed
 * through unchanged when the upstream speaks Responses itself (eval-only).
 *
 * @example
 * createResponsesDoor().prepare({ model: "m", input: "hi" }).capture // "chat"
 */
export function createResponsesDoor(upstream: UpstreamProtocol = "chat"): FrontDoor {
  return {
    name: "responses",
    protocol: Protocol.RESPONSES,
    path: "/v1/responses",
    prepare(body) {
      requireModel(body);
      if (upstream === "responses") return passthroughCall(body, "/v1/responses", openaiError);
      return preparedFrom(translated(() => responsesFrontDoor(body)));
    },
  };
}

/** The body goes upstream as the harness sent it; its answer comes back as is (nothing is stripped). */
function passthroughCall(body: Record<string, any>, path: string, errorBody: (status: number, message: string) => unknown): PreparedCall {
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

export interface VendorOptions {
  /** The vendor API key (Anthropic wants it as x-api-key). */
  apiKey?: string;
}

/**
 * Every front door for an upstream protocol: Chat Completions upstreams (vLLM, SGLang) get the
 * translating doors; a vendor upstream (`--upstream-protocol anthropic|responses`, eval-only)
 * gets its own protocol passed through unchanged.
 *
 * @example
 * frontDoorsFor("anthropic", { apiKey: "sk-ant-..." }).map((d) => d.name)
 * // ["chat", "completions", "anthropic_messages", "responses"]
 */
export function frontDoorsFor(upstream: UpstreamProtocol, vendor: VendorOptions = {}): FrontDoor[] {
  return [chatFrontDoor, completionsFrontDoor, createAnthropicMessagesDoor(upstream, vendor), createResponsesDoor(upstream)];
}

/** The translated front doors with their default (Chat Completions) upstream. */
export const anthropicMessagesDoor = createAnthropicMessagesDoor();
export const responsesDoor = createResponsesDoor();
