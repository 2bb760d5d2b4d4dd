/**
 * What an engine stand-in keeps between requests: the weights it serves (path and version, as
 * a reload changes them), whether generation is paused, and the faults a test asked for.
 */

/** The engines the simulator can stand in for (docs/engines.md pins their versions). */
export type EngineFlavourName = "vllm" | "sglang";

export const ENGINE_FLAVOURS: readonly EngineFlavourName[] = ["vllm", "sglang"];

/** Versions the stand-ins follow: vLLM 0.33.0 and SGLang 0.5.23 (the released wheels). */
export const FLAVOUR_VERSIONS: Record<EngineFlavourName, string> = { vllm: "0.33.0", sglang: "0.5.23" };

/** Misbehaviour on demand, for the tests of what the proxy does about it. */
export interface SimFaults {
  /**
   * Ids with holes: streamed chunks leave out the ids of every third token chunk (vLLM before
   * 0.13.0 lost the ids of chunks its tool parser held back, vllm-project/vllm#27482);
   * non-streamed answers leave out the last completion id.
   */
  holeyIds?: boolean;
  /** Weight reloads fail with this message (a server that cannot load the checkpoint). */
  failWeightLoad?: string;
}

export interface EngineSimState {
  flavour: EngineFlavourName;
  /** As the engine reports it, marked as the simulator's ("0.33.0+forge-policy-simulator"). */
  version: string;
  /** The weights served: the start model, then each checkpoint reloaded. */
  modelPath: string;
  /** SGLang: the served model name once an update from disk changed it (the new path). */
  servedModelName?: string;
  /** The weight version ("default" until a sync sets one, as both engines start). */
  weightVersion: string;
  /** vLLM's --logprobs-mode (reported by /server_info in dev mode). */
  logprobsMode: string;
  /** vLLM: VLLM_SERVER_DEV_MODE=1, which serves the RL and dev routes (weight sync needs them). */
  devMode: boolean;
  /** Generation paused (vLLM `/pause?mode=`, SGLang `/pause_generation`), else undefined. */
  paused: string | undefined;
  faults: SimFaults;
  /** Resolves when generation is resumed (SGLang holds new requests while paused). */
  resumed(): Promise<void>;
  pause(mode: string): void;
  resume(): void;
}

/**
 * A fresh state.
 *
 * @example
 * createEngineSimState("sglang", { modelPath: "forge-sim/qwen3-sim" }).weightVersion // "default"
 */
export function createEngineSimState(
  flavour: EngineFlavourName,
  options: { modelPath: string; version?: string; logprobsMode?: string; devMode?: boolean; faults?: SimFaults },
): EngineSimState {
  let waiters: (() => void)[] = [];
  const state: EngineSimState = {
    flavour,
    version: `${options.version ?? FLAVOUR_VERSIONS[flavour]}+forge-policy-simulator`,
    modelPath: options.modelPath,
    weightVersion: "default",
    logprobsMode: options.logprobsMode ?? "raw_logprobs",
    devMode: options.devMode ?? true,
    paused: undefined,
    faults: options.faults ?? {},
    resumed: () => (state.paused === undefined ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
    pause(mode) {
      state.paused = mode;
    },
    resume() {
      state.paused = undefined;
      const ready = waiters;
      waiters = [];
      for (const resolve of ready) resolve();
    },
  };
  return state;
}
