/**
 * Which engine an upstream is, from where each says who it is (docs/engines.md):
 * vLLM answers `GET /version` with `{"version"}` (SGLang has no such route); SGLang answers
 * `GET /server_info` with its server args and `"version"`; both name themselves in
 * `GET /v1/models` (`owned_by`). vLLM's logprobs mode is read from `GET
 * /server_info?config_format=json` where dev mode (VLLM_SERVER_DEV_MODE=1) serves it.
 */
import { LogprobsMode } from "../../schemas/index.ts";
import { logprobsModeOf, type EngineInfo, type EngineKind } from "./kinds.ts";

/** What an upstream said about itself. */
export type Detection =
  | { reachable: true; info: EngineInfo; model: string | undefined }
  | { reachable: false; error: string };

/**
 * Asks `url` (a base URL without `/v1`) who it is.
 *
 * @example
 * const d = await detectEngine("http://127.0.0.1:8000");
 * if (d.reachable) d.info.kind // "vllm"
 */
export async function detectEngine(url: string, options: { headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<Detection> {
  const get = async (path: string): Promise<{ status: number; json: any } | { error: string }> => {
    try {
      const response = await fetch(url + path, { headers: { accept: "application/json", ...options.headers }, signal: AbortSignal.timeout(options.timeoutMs ?? 10_000) });
      const text = await response.text();
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: response.status, json };
    } catch (error) {
      return { error: (error as Error).message };
    }
  };
  const models = await get("/v1/models");
  if ("error" in models) return { reachable: false, error: `GET ${url}/v1/models: ${models.error}` };
  const card = Array.isArray(models.json?.data) ? models.json.data[0] : undefined;
  const model = typeof card?.id === "string" ? card.id : undefined;
  const ownedBy = typeof card?.owned_by === "string" ? card.owned_by : "";

  const version = await get("/version");
  if (!("error" in version) && version.status === 200 && typeof version.json?.version === "string") {
    return { reachable: true, model, info: { kind: "vllm", version: version.json.version, logprobsMode: await vllmLogprobsMode(get), how: `GET ${url}/version` } };
  }
  const serverInfo = await get("/server_info");
  if (!("error" in serverInfo) && serverInfo.status === 200 && typeof serverInfo.json?.version === "string") {
    return { reachable: true, model, info: { kind: "sglang", version: serverInfo.json.version, logprobsMode: LogprobsMode.UNKNOWN, how: `GET ${url}/server_info` } };
  }
  const kind: EngineKind = ownedBy === "vllm" ? "vllm" : ownedBy === "sglang" ? "sglang" : "other";
  const how = kind === "other" ? `neither GET /version nor GET /server_info answered with a version, and /v1/models owned_by is ${JSON.stringify(ownedBy)}` : `GET ${url}/v1/models owned_by`;
  return { reachable: true, model, info: { kind, version: "", logprobsMode: LogprobsMode.UNKNOWN, how } };
}

async function vllmLogprobsMode(get: (path: string) => Promise<{ status: number; json: any } | { error: string }>): Promise<LogprobsMode> {
  const info = await get("/server_info?config_format=json");
  if ("error" in info || info.status !== 200) return LogprobsMode.UNKNOWN;
  return logprobsModeOf(info.json?.vllm_config?.model_config?.logprobs_mode);
}
