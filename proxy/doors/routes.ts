/**
 * Routes of the translated front doors that are not model calls: Anthropic `count_tokens`
 * (answered with the upstream's tokenizer) and a clean refusal of the Responses WebSocket
 * upgrade (Codex then falls back to HTTP POST).
 */
import type { Context, Hono } from "hono";
import { parseJsonObject, readJsonBody } from "../body.ts";
import type { PipelineContext } from "./pipeline.ts";
import { resolveRollout } from "../routes/auth.ts";
import type { RolloutRegistry } from "../state/rollouts.ts";
import { anthropicToChatRequest } from "./anthropic/request.ts";
import { TranslationError } from "./chat-types.ts";
import { countChatTokens } from "./anthropic/count-tokens.ts";
import { anthropicError } from "./front-door.ts";

export interface TranslateRoutesOptions {
  ctx: PipelineContext;
  registry: RolloutRegistry;
  maxBodyBytes: number;
}

/**
 * Mounts `POST …/v1/messages/count_tokens` and the `GET …/v1/responses` refusal, under
 * `/r/:rollout` and at the root (rollout from the key), like the model routes.
 *
 * @example
 * mountTranslateRoutes(app, { ctx, registry, maxBodyBytes: 32 << 20 });
 */
export function mountTranslateRoutes(app: Hono, options: TranslateRoutesOptions): void {
  const { ctx, registry, maxBodyBytes } = options;
  const countTokens = async (c: Context) => {
    const rollout = resolveRollout(c, registry);
    const body = parseJsonObject(await readJsonBody(c.req.raw, maxBodyBytes));
    let chat;
    try {
      chat = anthropicToChatRequest(body);
    } catch (error) {
      if (error instanceof TranslationError) return Response.json(anthropicError(400, error.message), { status: 400 });
      throw error;
    }
    const id = rollout.rollout.rolloutId;
    const count = await countChatTokens(chat, {
      send: async (bytes) => {
        const sent = await ctx.client.send(id, "/tokenize", bytes, "POST", c.req.raw.signal);
        return "error" in sent ? undefined : sent.response;
      },
    });
    // The source tells a harness (and a reader of logs) whether the policy's tokenizer counted.
    return Response.json({ input_tokens: count.input_tokens }, { headers: { "x-forge-token-count": count.source } });
  };
  app.post("/r/:rollout/v1/messages/count_tokens", countTokens);
  app.post("/v1/messages/count_tokens", countTokens);

  const refuseWebSocket = (c: Context) => {
    const upgrade = (c.req.header("upgrade") ?? "").toLowerCase() === "websocket";
    const message = upgrade
      ? "the forge proxy serves the Responses API over HTTP only: WebSocket upgrades are refused, send POST /v1/responses (Codex falls back to it)"
      : "GET /v1/responses is not served: send POST /v1/responses";
    return Response.json(
      { error: { message, type: "invalid_request_error", param: null, code: upgrade ? "websocket_not_supported" : "method_not_allowed" } },
      { status: 405, headers: { allow: "POST" } },
    );
  };
  app.get("/r/:rollout/v1/responses", refuseWebSocket);
  app.get("/v1/responses", refuseWebSocket);
}

