/**
 * The engine check at start: which engine each upstream is (for `--engine auto`, or to confirm
 * an explicit setting), and, in train mode, whether it returns the ids training needs (its
 * version, then a one-token probe). A reachable upstream that cannot is refused at once: the
 * proxy does not start. An upstream that does not answer yet (an engine still loading) is
 * checked again in the background; until it is identified, calls are asked for ids the vLLM
 * way, and if it then turns out unable, train-mode calls are refused with the reason.
 */
import { LogprobsMode } from "../../schemas/index.ts";
import type { EngineAdapter } from "./adapter.ts";
import { adapterFor } from "./adapters.ts";
import { detectEngine } from "./detect.ts";
import { engineName, type EngineInfo, type EngineSetting } from "./kinds.ts";
import { probeTokenIds } from "./probe.ts";
import { atLeast, MINIMUM_TRAIN_VERSION } from "./versions.ts";

/** The engine behind the proxy's upstreams, as far as it is known; read by every call. */
export interface EngineState {
  setting: EngineSetting;
  info: EngineInfo;
  adapter: EngineAdapter;
  /** Why train-mode calls are refused (an upstream found unable after start); "" when served. */
  refusal: string;
  /** Upstreams not checked yet (they did not answer). */
  pending: Set<string>;
  /** Whether an upstream has said who it is (until then `info` is the setting's guess). */
  identified: boolean;
}

/** An upstream that cannot serve the proxy's mode: the proxy must not start (or serve) with it. */
export class EngineRefused extends Error {
  override name = "EngineRefused";
}

/**
 * The state before any check: an explicit setting is taken at its word (its version unknown),
 * `auto` is asked the vLLM way until an upstream says who it is.
 *
 * @example
 * createEngineState("sglang").adapter.kind // "sglang"
 */
export function createEngineState(setting: EngineSetting): EngineState {
  const kind = setting === "auto" ? "other" : setting;
  return {
    setting,
    info: { kind, version: "", logprobsMode: LogprobsMode.UNKNOWN, how: setting === "auto" ? "not identified yet" : `--engine ${setting}` },
    adapter: adapterFor(kind),
    refusal: "",
    pending: new Set(),
    identified: false,
  };
}

export interface EngineCheckOptions {
  mode: "train" | "eval";
  /** Headers for the upstream (its API key). */
  headers?: Record<string, string>;
  /** Whether train mode probes for ids (default true). */
  probe?: boolean;
  /** Per request of the detection. Default 10 s. */
  timeoutMs?: number;
  /** Per probe call (a one-token generation on a possibly busy engine). Default 120 s. */
  probeTimeoutMs?: number;
}

/**
 * Checks one upstream (`url` without `/v1`) and updates `state`; "pending" when it did not
 * answer. Throws EngineRefused when it answered and cannot serve `options.mode`.
 *
 * @example
 * await checkUpstream("http://127.0.0.1:8000", state, { mode: "train" }); // "ok"
 */
export async function checkUpstream(url: string, state: EngineState, options: EngineCheckOptions): Promise<"ok" | "pending"> {
  const detection = await detectEngine(url, { headers: options.headers, timeoutMs: options.timeoutMs ?? 10_000 });
  if (!detection.reachable) return "pending";
  const found = detection.info;
  const train = options.mode === "train";
  if (state.setting !== "auto" && found.kind !== "other" && found.kind !== state.setting) {
    const message = `--engine ${state.setting}, but upstream ${url} is ${engineName(found)} (${found.how}): set --engine ${found.kind} (or auto)`;
    if (train) throw new EngineRefused(message);
    console.error(`forge proxy: warning: ${message}`);
  }
  const kind = state.setting === "auto" ? found.kind : state.setting;
  // Checked and set in one synchronous step after the detection, so parallel checks cannot both miss each other.
  if (state.identified && state.info.kind !== kind) {
    const message = `the upstreams run different engines (${engineName(state.info)}, ${state.info.how}; ${engineName(found)}, ${found.how}): the proxy asks every upstream for ids the same way, so give it upstreams of one engine`;
    if (train) throw new EngineRefused(message);
    console.error(`forge proxy: warning: ${message}`);
    return "ok";
  }
  const info: EngineInfo = { kind, version: found.kind === kind ? found.version : "", logprobsMode: found.logprobsMode, how: found.how };
  state.info = info;
  state.adapter = adapterFor(kind);
  state.identified = true;
  if (!train || options.probe === false) return "ok";
  if ((kind === "vllm" || kind === "sglang") && info.version !== "") {
    const minimum = MINIMUM_TRAIN_VERSION[kind];
    if (!atLeast(info.version, minimum.version)) {
      throw new EngineRefused(
        `upstream ${url} is ${engineName(info)}; train mode needs ${kind === "vllm" ? "vLLM" : "SGLang"} ≥ ${minimum.version}: ${minimum.why}. Upgrade the engine (docs/engines.md), or record without ids in --mode eval`,
      );
    }
  }
  const probe = await probeTokenIds(url, state.adapter, detection.model, { headers: options.headers, timeoutMs: options.probeTimeoutMs ?? 120_000 });
  if (!probe.ok) {
    const need =
      kind === "other"
        ? `it is not identified as vLLM or SGLang (${info.how}) and was asked for ids the vLLM way; pass --engine vllm|sglang if it is one`
        : `train mode needs ${kind === "vllm" ? "vLLM" : "SGLang"} ≥ ${MINIMUM_TRAIN_VERSION[kind].version} started as docs/engines.md says`;
    throw new EngineRefused(`upstream ${url} (${engineName(info)}) does not return the token ids training needs: ${probe.reason}; ${need}`);
  }
  return "ok";
}

/**
 * Checks every upstream now (in parallel); those that did not answer stay in `state.pending`.
 * Throws EngineRefused naming the first upstream that cannot serve the mode.
 *
 * @example
 * await checkUpstreams(["http://a:8000", "http://b:8000"], state, { mode: "train" });
 */
export async function checkUpstreams(urls: readonly string[], state: EngineState, options: EngineCheckOptions): Promise<void> {
  const results = await Promise.allSettled(urls.map((url) => checkUpstream(url, state, options)));
  const refused = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (refused) throw refused.reason;
  urls.forEach((url, i) => {
    const r = results[i]!;
    if (r.status === "fulfilled" && r.value === "pending") state.pending.add(url);
    else state.pending.delete(url);
  });
}

/**
 * Re-checks the pending upstreams every `intervalMs` until none is left; an upstream found
 * unable sets `state.refusal` (train-mode calls then get 503 with it). Returns a stop function.
 *
 * @example
 * const stop = recheckPending(state, { mode: "train" }, 5000);
 */
export function recheckPending(state: EngineState, options: EngineCheckOptions, intervalMs: number, log: (line: string) => void = console.error): () => void {
  let running = false;
  const timer = setInterval(async () => {
    if (running || state.pending.size === 0) return;
    running = true;
    try {
      for (const url of [...state.pending]) {
        try {
          if ((await checkUpstream(url, state, options)) === "ok") {
            state.pending.delete(url);
            log(`forge proxy: upstream ${url} is ${engineName(state.info)} (${state.info.how})`);
          }
        } catch (error) {
          state.pending.delete(url);
          state.refusal = (error as Error).message;
          log(`forge proxy: ${state.refusal}; train-mode calls are refused until the proxy is restarted against an engine that returns ids`);
        }
      }
    } finally {
      running = false;
    }
  }, intervalMs);
  timer.unref?.();
  return () => clearInterval(timer);
}
