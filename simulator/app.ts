/**
 * The policy simulator as a Hono app: a stand-in for the model behind a vLLM or SGLang server
 * (its flavour: wire format, errors, discovery and weight-sync routes; flavours/). Every
 * response carries `x-forge-simulator: 1`, so nothing mistakes it for a real model.
 */
import { Hono } from "hono";
import { handleChat } from "./chat.ts";
import { handleCompletion } from "./completions.ts";
import { mountEngineRoutes } from "./flavours/routes.ts";
import { handleDetokenize, handleTokenize } from "./tokenize.ts";
import { resolveOptions, type PolicySimulatorOptions } from "./options.ts";
import type { SimSample } from "./types.ts";
import type { EngineSimState } from "./flavours/state.ts";

export interface PolicySimulator {
  fetch(request: Request): Response | Promise<Response>;
  /** Every completion sampled so far, in order (bounded by `maxSamples`). */
  samples: SimSample[];
  /** The engine stand-in's state: weights served (path, version), pause, faults. */
  engine: EngineSimState;
}

/**
 * Builds the simulator's request handler (no server).
 *
 * @example
 * const sim = createPolicySimulator({ seed: 1 });
 * const res = await sim.fetch(new Request("http://sim/v1/models"));
 */
export function createPolicySimulator(options: PolicySimulatorOptions): PolicySimulator {
  const ctx = resolveOptions(options);
  const app = new Hono();
  app.use(async (c, next) => {
    await next();
    c.res.headers.set("x-forge-simulator", "1");
  });
  app.post("/v1/chat/completions", (c) => handleChat(ctx, c.req.raw));
  app.post("/v1/completions", (c) => handleCompletion(ctx, c.req.raw));
  app.post("/tokenize", (c) => handleTokenize(ctx, c.req.raw));
  app.post("/detokenize", (c) => handleDetokenize(c.req.raw));
  const health = () => new Response(null, { status: 200, headers: { "x-forge-simulator": "1" } });
  app.get("/health", health);
  app.get("/v1/health", health);
  mountEngineRoutes(app, ctx);
  // An unknown route: vLLM's handler writes its error body, SGLang answers as FastAPI does.
  app.notFound((c) =>
    ctx.engine.flavour === "sglang"
      ? Response.json({ detail: "Not Found" }, { status: 404, headers: { "x-forge-simulator": "1" } })
      : ctx.flavour.error(404, `policy simulator: no route ${c.req.method} ${new URL(c.req.url).pathname}`),
  );
  app.onError((error) => ctx.flavour.error(500, `policy simulator: ${error.message}`));
  return { fetch: (request) => app.fetch(request), samples: ctx.samples, engine: ctx.engine };
}
