/** Options of the policy simulator and their resolved form shared by the route handlers. */
import { parsePolicyScriptFile, PolicyScriptSchema, type PolicyScript, type PolicyScriptInput } from "../schemas/index.ts";
import type { SimSample } from "./types.ts";

export const DEFAULT_SIM_MODEL = "forge-sim/qwen3-sim";

export interface PolicySimulatorOptions {
  /** Everything sampled is a function of this seed and the request. */
  seed: number;
  /** A parsed script, its input shape, or the path of a YAML script file. Default: the built-in policy. */
  script?: PolicyScript | PolicyScriptInput | string;
  /** The model id served (`/v1/models`); responses echo the requested model name. */
  model?: string;
  /** Delay between stream chunks (simulated decode speed). Default 0. */
  chunkDelayMs?: number;
  /** Delay before the first token (simulated prefill). Default 0. */
  ttftMs?: number;
  /** Tokens per stream chunk (vLLM sends one). Default 1. */
  tokensPerChunk?: number;
  /** How many samples `samples` keeps (oldest dropped first). Default 10,000. */
  maxSamples?: number;
  /** Log sink for one line per request ("policy simulator: …"). Default: silent. */
  log?: (line: string) => void;
}

export interface SimContext {
  seed: number;
  script: PolicyScript;
  model: string;
  chunkDelayMs: number;
  ttftMs: number;
  tokensPerChunk: number;
  samples: SimSample[];
  record(sample: SimSample): void;
  log(line: string): void;
}

export function resolveOptions(options: PolicySimulatorOptions): SimContext {
  const script =
    typeof options.script === "string" ? parsePolicyScriptFile(options.script) : PolicyScriptSchema.parse(options.script ?? {});
  const samples: SimSample[] = [];
  const maxSamples = options.maxSamples ?? 10_000;
  return {
    seed: options.seed,
    script,
    model: options.model ?? DEFAULT_SIM_MODEL,
    chunkDelayMs: options.chunkDelayMs ?? 0,
    ttftMs: options.ttftMs ?? 0,
    tokensPerChunk: options.tokensPerChunk ?? 1,
    samples,
    record(sample) {
      samples.push(sample);
      if (samples.length > maxSamples) samples.splice(0, samples.length - maxSamples);
    },
    log: options.log ?? (() => {}),
  };
}
