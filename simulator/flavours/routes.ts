/**
 * The routes each engine serves besides generation: who it is (discovery), and how it takes
 * new weights (weight sync). Written from the pinned releases (docs/engines.md):
 *
 * vLLM 0.33.0 — always: `GET /version` (`serve/instrumentator/basic.py:53-56`), `GET /v1/models`
 * (`owned_by: "vllm"`, `root` the model path, a `permission` list). With VLLM_SERVER_DEV_MODE=1
 * (`launchers/api_server/routers.py:46-53`): `GET /server_info?config_format=json`,
 * `POST /pause?mode=abort|wait|keep` (new requests 503 until `/resume` in abort and wait modes),
 * `POST /resume`, `GET /is_paused`, `POST /collective_rpc` (`reload_weights` with
 * `kwargs.weights_path` reloads a checkpoint directory in place), `POST /reset_prefix_cache`,
 * `POST /update_weight_version {new_version}`, `GET /weight_info` (`rl/online/api_router.py`,
 * `serve/dev/rpc/api_router.py`, `serve/dev/cache/api_router.py`). With `--enable-scale-out`:
 * `POST /inference/v1/generate`, token ids with images (token-generate.ts).
 *
 * SGLang 0.5.23 (`entrypoints/http_server.py`) — no `/version`; `GET /server_info` (server args
 * and `version`), `GET /model_info` (`model_path`, `weight_version`, ...), `GET /v1/models`
 * (`owned_by: "sglang"`), `POST /pause_generation {mode}` (new requests wait until
 * `/continue_generation`), `POST /update_weights_from_disk {model_path, weight_version?, ...}`
 * (a success makes the checkpoint path the served model name), `POST /update_weight_version`,
 * `POST /flush_cache`; and the native `POST /generate` (native-generate.ts).
 */
import { readdirSync, statSync } from "node:fs";
import type { Context, Hono } from "hono";
import type { SimContext } from "../context.ts";
import { sglangError } from "./sglang.ts";
import { vllmError } from "./vllm.ts";
import { handleNativeGenerate } from "../native-generate.ts";
import { handleTokenGenerate } from "../token-generate.ts";

const MAX_MODEL_LEN = 131072;
const SIM = { "x-forge-simulator": "1" };

/**
 * Mounts the engine's discovery and weight routes on `app`.
 *
 * @example
 * mountEngineRoutes(app, ctx);
 */
export function mountEngineRoutes(app: Hono, ctx: SimContext): void {
  if (ctx.engine.flavour === "vllm") mountVllm(app, ctx);
  else mountSglang(app, ctx);
}

/**
 * Why a checkpoint directory cannot be loaded, or undefined: it must exist and hold weights
 * (`*.safetensors`, `*.bin` or `*.pt`, what vLLM's default loader globs and SGLang loads).
 */
function weightsProblem(path: string): string | undefined {
  let files: string[];
  try {
    if (!statSync(path).isDirectory()) return `${path} is not a directory`;
    files = readdirSync(path);
  } catch {
    return `${path} does not exist`;
  }
  return files.some((f) => /\.(safetensors|bin|pt)$/.test(f)) ? undefined : `no *.safetensors, *.bin or *.pt files in ${path}`;
}

/** vLLM's message sanitizer (`serve/exception_handling/utils.py`): file paths become `<path>`. */
function sanitize(message: string): string {
  return message.replace(/\/(?:home|usr|opt|var|tmp|root|lib|mnt|srv)(?:\/[\w.\-]+)+/g, "<path>").replace(/(?:\/[\w\-]+)+\/[\w\-]+\.\w+/g, "<path>");
}

async function jsonBody(c: Context): Promise<any> {
  const text = await c.req.text();
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function mountVllm(app: Hono, ctx: SimContext): void {
  const e = ctx.engine;
  app.post("/inference/v1/generate", (c) => handleTokenGenerate(ctx, c.req.raw));
  app.get("/version", (c) => c.json({ version: e.version }));
  app.get("/v1/models", (c) =>
    c.json({
      object: "list",
      data: [
        {
          id: ctx.model,
          object: "model",
          created: 0,
          owned_by: "vllm",
          root: e.modelPath,
          parent: null,
          max_model_len: MAX_MODEL_LEN,
          permission: [
            {
              id: "modelperm-forge-policy-simulator",
              object: "model_permission",
              created: 0,
              allow_create_engine: false,
              allow_sampling: true,
              allow_logprobs: true,
              allow_search_indices: false,
              allow_view: true,
              allow_fine_tuning: false,
              organization: "*",
              group: null,
              is_blocking: false,
            },
          ],
        },
      ],
    }),
  );
  if (!e.devMode) return;
  app.get("/server_info", (c) => {
    const config = { model_config: { model: e.modelPath, served_model_name: ctx.model, logprobs_mode: e.logprobsMode, max_model_len: MAX_MODEL_LEN } };
    return c.json({
      vllm_config: c.req.query("config_format") === "json" ? config : JSON.stringify(config),
      vllm_env: { VLLM_SERVER_DEV_MODE: true },
      system_env: {},
    });
  });
  app.post("/pause", (c) => {
    const mode = c.req.query("mode") ?? "abort";
    if (mode !== "abort" && mode !== "wait" && mode !== "keep") {
      return vllmError(400, `1 validation error:\n  {'type': 'literal_error', 'loc': ('query', 'mode'), 'msg': "Input should be 'abort', 'wait' or 'keep'", 'input': '${mode}'}`, "query.mode");
    }
    e.pause(mode);
    return c.json({ status: "paused" });
  });
  app.post("/resume", (c) => {
    e.resume();
    return c.json({ status: "resumed" });
  });
  app.get("/is_paused", (c) => c.json({ is_paused: e.paused !== undefined }));
  app.post("/collective_rpc", async (c) => {
    const body = await jsonBody(c);
    if (body === null || typeof body !== "object" || Array.isArray(body)) return vllmError(400, "Request body must be a JSON object");
    if (body.method === undefined || body.method === null) return vllmError(400, "Missing 'method' in request body");
    if (body.method !== "reload_weights") return vllmError(500, `policy simulator: the stand-in's workers have no method ${JSON.stringify(body.method)} (it serves reload_weights)`);
    const path = body.kwargs?.weights_path;
    if (typeof path !== "string" || path === "") {
      // reload_weights without a path reloads from the current model directory.
      if (path !== undefined && path !== null) return vllmError(400, "weights_path must be a string");
    }
    const target = typeof path === "string" && path !== "" ? path : e.modelPath;
    if (e.faults.failWeightLoad) return vllmError(500, sanitize(e.faults.failWeightLoad));
    const problem = weightsProblem(target);
    if (problem) return vllmError(500, sanitize(`Cannot find any model weights with \`${target}\``));
    e.modelPath = target;
    return c.json({ results: [null] });
  });
  app.post("/reset_prefix_cache", (c) => c.json({ success: true }));
  app.post("/update_weight_version", async (c) => {
    const body = await jsonBody(c);
    if (!body || typeof body.new_version !== "string") return vllmError(400, "Field required: body.new_version", "body.new_version");
    e.weightVersion = body.new_version;
    return c.json({ success: true, new_version: body.new_version });
  });
  app.get("/weight_info", (c) => c.json({ weight_version: e.weightVersion }));
}

function mountSglang(app: Hono, ctx: SimContext): void {
  const e = ctx.engine;
  const modelInfo = () => ({
    model_path: e.modelPath,
    served_model_name: e.servedModelName ?? ctx.model,
    tokenizer_path: e.modelPath,
    is_generation: true,
    preferred_sampling_params: null,
    weight_version: e.weightVersion,
    load_format: "auto",
    reasoning_parser: "qwen3",
    tool_call_parser: "qwen25",
    disaggregation_mode: "null",
    has_image_understanding: false,
    has_audio_understanding: false,
    model_type: "qwen3",
    architectures: ["Qwen3ForCausalLM"],
  });
  app.get("/server_info", (c) =>
    c.json({
      model_path: e.modelPath,
      served_model_name: e.servedModelName ?? ctx.model,
      reasoning_parser: "qwen3",
      tool_call_parser: "qwen25",
      context_length: MAX_MODEL_LEN,
      launch_command: "policy simulator (a stand-in for sglang.launch_server)",
      internal_states: [{ weight_version: e.weightVersion }],
      version: e.version,
      frontend: "python",
    }),
  );
  app.get("/get_server_info", (c) => c.redirect("/server_info", 307));
  // The native API token-in mode sends token ids to (native-generate.ts).
  app.on(["POST", "PUT"], "/generate", (c) => handleNativeGenerate(ctx, c.req.raw));
  app.get("/model_info", (c) => c.json(modelInfo()));
  app.get("/get_model_info", (c) => c.json(modelInfo()));
  app.get("/v1/models", (c) =>
    c.json({
      object: "list",
      data: [{ id: e.servedModelName ?? ctx.model, object: "model", created: 0, owned_by: "sglang", root: e.servedModelName ?? ctx.model, parent: null, max_model_len: MAX_MODEL_LEN }],
    }),
  );
  app.post("/pause_generation", async (c) => {
    const body = await jsonBody(c);
    e.pause(typeof body?.mode === "string" ? body.mode : "abort");
    return c.json({ message: "Generation paused successfully.", status: "ok" });
  });
  app.post("/continue_generation", (c) => {
    e.resume();
    return c.json({ message: "Generation continued successfully.", status: "ok" });
  });
  app.post("/update_weights_from_disk", async (c) => {
    const body = await jsonBody(c);
    if (!body || typeof body.model_path !== "string") return sglangError(400, "Object missing required field `model_path`", null, "Bad Request");
    const problem = e.faults.failWeightLoad ?? weightsProblem(body.model_path);
    if (problem) {
      return Response.json({ success: false, message: `Failed to get weights iterator: ${problem}.`, num_paused_requests: 0 }, { status: 400, headers: SIM });
    }
    // A successful update makes the new path the served model (tokenizer_manager.py:2365-2390).
    e.modelPath = body.model_path;
    e.servedModelName = body.model_path;
    let message = "Succeeded to update model weights.";
    if (typeof body.weight_version === "string") {
      e.weightVersion = body.weight_version;
      message += ` Weight version updated to ${body.weight_version}.`;
    }
    return Response.json({ success: true, message, num_paused_requests: 0 }, { headers: SIM });
  });
  app.post("/update_weight_version", async (c) => {
    const body = await jsonBody(c);
    if (!body || typeof body.new_version !== "string") return sglangError(400, "Object missing required field `new_version`", null, "Bad Request");
    e.weightVersion = body.new_version;
    return c.json({ success: true, message: `Weight version updated to ${body.new_version}`, new_version: body.new_version });
  });
  const flush = () => new Response("Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n", { headers: { "content-type": "text/plain", ...SIM } });
  app.get("/flush_cache", flush);
  app.post("/flush_cache", flush);
}
