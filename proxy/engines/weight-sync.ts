/**
 * Loading a checkpoint directory into a running inference server, each engine through its own
 * API at the pinned version (docs/engines.md, "Weight sync"):
 *
 * - vLLM 0.33.0 (needs VLLM_SERVER_DEV_MODE=1, which mounts the RL and dev routes):
 *   `POST /pause?mode=wait` → `POST /collective_rpc {"method": "reload_weights", "kwargs":
 *   {"weights_path": …}}` (the workers stream the directory's weights into the running model,
 *   `v1/worker/gpu_model_runner.py:5226-5245`) → `POST /reset_prefix_cache` (the reload keeps the
 *   prefix cache, whose KV the old weights computed) → `POST /update_weight_version` →
 *   `POST /resume`; confirmed by `GET /weight_info`.
 * - SGLang 0.5.23: `POST /pause_generation {"mode": "abort"}` → `POST /update_weights_from_disk
 *   {"model_path", "weight_version", "flush_cache": true}` → `POST /continue_generation {}`;
 *   confirmed by `GET /model_info` (`weight_version`, `model_path`).
 *
 * The weight version is the proxy's policy version as a string, so an engine's per-token
 * `weight_versions` spans name the same versions as the records.
 */
import type { EngineKind } from "./kinds.ts";

/** One HTTP call of a sync, as sent (the engine-request suite validates the bodies). */
export interface EngineCall {
  method: "GET" | "POST";
  /** Path and query, e.g. "/pause?mode=wait". */
  path: string;
  body?: Record<string, unknown>;
  /** The server's request type of the body, where it defines one (SGLang's io_struct). */
  type?: string;
}

/**
 * The calls that load `checkpoint` into a server of `kind` and name its weights `version`.
 *
 * @example
 * loadCalls("sglang", "/checkpoints/run/global_step_3/actor/huggingface", "3")[1]!.path // "/update_weights_from_disk"
 */
export function loadCalls(kind: "vllm" | "sglang", checkpoint: string, version: string): EngineCall[] {
  if (kind === "vllm") {
    return [
      { method: "POST", path: "/pause?mode=wait" },
      { method: "POST", path: "/collective_rpc", body: { method: "reload_weights", kwargs: { weights_path: checkpoint } } },
      { method: "POST", path: "/reset_prefix_cache" },
      { method: "POST", path: "/update_weight_version", body: { new_version: version } },
      { method: "POST", path: "/resume" },
    ];
  }
  return [
    { method: "POST", path: "/pause_generation", body: { mode: "abort" }, type: "PauseGenerationReqInput" },
    { method: "POST", path: "/update_weights_from_disk", body: { model_path: checkpoint, weight_version: version, flush_cache: true }, type: "UpdateWeightFromDiskReqInput" },
    { method: "POST", path: "/continue_generation", body: {}, type: "ContinueGenerationReqInput" },
  ];
}

/**
 * The call that names a restarted server's weights `version` (it starts at "default").
 *
 * @example
 * versionCall("vllm", "3") // { method: "POST", path: "/update_weight_version", body: { new_version: "3" } }
 */
export function versionCall(kind: "vllm" | "sglang", version: string): EngineCall {
  return kind === "vllm"
    ? { method: "POST", path: "/update_weight_version", body: { new_version: version } }
    : { method: "POST", path: "/update_weight_version", body: { new_version: version, abort_all_requests: false }, type: "UpdateWeightVersionReqInput" };
}

/** A server that did not take the checkpoint, and why (the step and the engine's answer). */
export class WeightSyncError extends Error {
  override name = "WeightSyncError";
  constructor(
    readonly server: string,
    message: string,
  ) {
    super(`${server}: ${message}`);
  }
}

export interface SyncOptions {
  /** Headers for the server (its API key). */
  headers?: Record<string, string>;
  /** Per call. Default 600 s (a reload of a large checkpoint is slow). */
  timeoutMs?: number;
}

/** What a server reports about the weights it serves. */
export interface ServedWeights {
  /** The weight version it reports ("default" until one was set). */
  version: string;
  /** The model directory it loaded (vLLM: `/v1/models` root after a restart, SGLang: `/model_info`). */
  modelPath: string;
}

/**
 * Loads `checkpoint` into `server` (a base URL, with or without `/v1`) and returns what it then
 * reports; throws WeightSyncError naming the step that failed. A server paused by the sync is
 * resumed even when a later step fails, so it is never left refusing requests.
 *
 * @example
 * await loadCheckpoint("http://vllm-0:8000", "vllm", "/checkpoints/run/global_step_3/actor/huggingface", "3");
 */
export async function loadCheckpoint(server: string, kind: "vllm" | "sglang", checkpoint: string, version: string, options: SyncOptions = {}): Promise<ServedWeights> {
  const base = server.replace(/\/+$/, "").replace(/\/v1$/, "");
  const calls = loadCalls(kind, checkpoint, version);
  const resume = calls.at(-1)!;
  let paused = false;
  try {
    for (const call of calls) {
      let answer = await send(base, call, options);
      // vLLM answers success: false while cache blocks are still held; they are freed shortly after a drain.
      for (let retry = 0; call.path === "/reset_prefix_cache" && answer.status === 200 && answer.json?.success === false && retry < 10; retry++) {
        await Bun.sleep(500);
        answer = await send(base, call, options);
      }
      check(base, kind, call, answer);
      if (call === calls[0]) paused = true;
      if (call === resume) paused = false;
    }
  } catch (error) {
    if (paused) await send(base, resume, options).catch(() => undefined);
    throw error;
  }
  const served = await servedWeights(base, kind, options);
  if (served.version !== version) {
    throw new WeightSyncError(base, `reports weight version ${JSON.stringify(served.version)} after the update, expected ${JSON.stringify(version)}`);
  }
  if (kind === "sglang" && served.modelPath !== checkpoint) {
    throw new WeightSyncError(base, `reports model_path ${JSON.stringify(served.modelPath)} after the update, expected ${JSON.stringify(checkpoint)}`);
  }
  return served;
}

/**
 * What `server` reports about its weights: vLLM's `GET /weight_info` (dev mode) and `/v1/models`
 * root, SGLang's `GET /model_info`.
 *
 * @example
 * (await servedWeights("http://sglang-0:30000", "sglang")).modelPath
 */
export async function servedWeights(server: string, kind: "vllm" | "sglang", options: SyncOptions = {}): Promise<ServedWeights> {
  const base = server.replace(/\/+$/, "").replace(/\/v1$/, "");
  if (kind === "sglang") {
    const info = await send(base, { method: "GET", path: "/model_info" }, options);
    if (info.status !== 200) throw new WeightSyncError(base, `GET /model_info answered HTTP ${info.status}: ${info.text.slice(0, 300)}`);
    return { version: String(info.json?.weight_version ?? ""), modelPath: String(info.json?.model_path ?? "") };
  }
  const models = await send(base, { method: "GET", path: "/v1/models" }, options);
  const root = models.status === 200 ? String(models.json?.data?.[0]?.root ?? "") : "";
  const info = await send(base, { method: "GET", path: "/weight_info" }, options);
  return { version: info.status === 200 ? String(info.json?.weight_version ?? "") : "", modelPath: root };
}

type Answer = { status: number; text: string; json: any };

async function send(base: string, call: EngineCall, options: SyncOptions): Promise<Answer> {
  let response: Response;
  try {
    response = await fetch(base + call.path, {
      method: call.method,
      headers: { accept: "application/json", ...(call.body ? { "content-type": "application/json" } : {}), ...options.headers },
      body: call.body ? JSON.stringify(call.body) : undefined,
      signal: AbortSignal.timeout(options.timeoutMs ?? 600_000),
    });
  } catch (error) {
    throw new WeightSyncError(base, `${call.method} ${call.path} failed: ${(error as Error).message}`);
  }
  const text = await response.text();
  let json: any;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json };
}

/** Throws unless `answer` is the success the engine's route documents. */
function check(base: string, kind: EngineKind, call: EngineCall, answer: Answer): void {
  const what = `${call.method} ${call.path}`;
  const reason = answer.json?.error?.message ?? (typeof answer.json?.error === "string" ? answer.json.error : undefined) ?? answer.json?.message ?? answer.text.slice(0, 500);
  if (answer.status === 404) {
    const hint = kind === "vllm" ? " (vLLM serves its weight routes only with VLLM_SERVER_DEV_MODE=1; docs/engines.md)" : "";
    throw new WeightSyncError(base, `${what} answered 404: the server has no such route${hint}`);
  }
  if (answer.status < 200 || answer.status >= 300) throw new WeightSyncError(base, `${what} answered HTTP ${answer.status}: ${reason}`);
  // Routes that answer 200 with a failure in the body.
  if (answer.json?.success === false) throw new WeightSyncError(base, `${what} failed: ${reason}`);
  if (call.path.startsWith("/pause?") && answer.json?.status !== "paused") throw new WeightSyncError(base, `${what} did not pause: ${answer.text.slice(0, 300)}`);
}
