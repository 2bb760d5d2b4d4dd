/** Model routes: each front door at `/r/:rollout<path>` and `<path>`, and the models list. */
import type { Context, Hono } from "hono";
import { parseJsonObject, readJsonBody } from "../body.ts";
import { ProxyHttpError } from "../errors.ts";
import type { FrontDoor } from "../doors/types.ts";
import { runModelCall } from "../doors/pipeline.ts";
import { CallInFlight } from "../doors/call-in-flight.ts";
import type { PipelineContext } from "../doors/types.ts";
import type { RolloutRegistry } from "../state/rollouts.ts";
import { resolveRollout } from "./auth.ts";

export interface ModelRoutesOptions {
  ctx: PipelineContext;
  registry: RolloutRegistry;
  doors: readonly FrontDoor[];
  maxBodyBytes: number;
}

/**
 * Mounts the model routes on `app`.
 *
 * @example
 * mountModelRoutes(app, { ctx, registry, doors: DEFAULT_FRONT_DOORS, maxBodyBytes: 32 << 20 });
 */
export function mountModelRoutes(app: Hono, options: ModelRoutesOptions): void {
  const { ctx, registry, doors, maxBodyBytes } = options;
  for (const door of doors) {
    const handler = async (c: any) => {
      const state = resolveRollout(c, registry);
      const request: Request = c.req.raw;
      const bytes = await readJsonBody(request, maxBodyBytes);
      const body = door.parse ? door.parse(bytes) : parseJsonObject(bytes);
      // The call in flight: what each step of the pipeline takes and fills (doors/call-in-flight.ts).
      const call = new CallInFlight(ctx, state, door, request, bytes, door.prepare(body, request));
      // The call may wait minutes for a pause or a first token: not an idle connection. A
      // stream puts the timeout back itself when it ends (stream-answer.ts).
      ctx.connections.hold(request);
      let streaming = false;
      try {
        const response = await runModelCall(call);
        streaming = response.headers.get("content-type")?.startsWith("text/event-stream") === true;
        return response;
      } finally {
        if (!streaming) ctx.connections.release(request);
      }
    };
    app.post(`/r/:rollout${door.path}`, handler);
    app.post(door.path, handler);
  }
  const models = async (c: any) => {
    const state = resolveRollout(c, registry);
    const sent = await ctx.client.send({ rolloutId: state.rollout.rolloutId, path: "/v1/models", method: "GET", signal: c.req.raw.signal });
    if ("error" in sent) throw sent.error;
    const text = await sent.response.text();
    if (!sent.response.ok) throw new ProxyHttpError(sent.response.status, `upstream ${sent.upstream.url} answered HTTP ${sent.response.status} to /v1/models: ${text.slice(0, 300)}`, "upstream_error", "upstream_error");
    return new Response(text, { status: 200, headers: { "content-type": "application/json" } });
  };
  app.get("/r/:rollout/v1/models", models);
  app.get("/v1/models", models);
  // The doors' routes that are not model calls (Anthropic count_tokens, the Responses WebSocket refusal).
  const env = { ctx, maxBodyBytes, resolveRollout: (c: Context) => resolveRollout(c, registry) };
  for (const route of doors.flatMap((d) => d.routes ?? [])) {
    const handler = (c: Context) => route.handle(c, env);
    const mount = route.method === "GET" ? app.get.bind(app) : app.post.bind(app);
    mount(`/r/:rollout${route.path}`, handler);
    mount(route.path, handler);
  }
}
