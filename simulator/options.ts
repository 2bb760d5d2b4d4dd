/** Options of the policy simulator, resolved into the SimContext (context.ts) the route handlers share. */
import { parsePolicyScriptFile, PolicyScriptSchema, type PolicyScript, type PolicyScriptInput } from "../schemas/index.ts";
import type { SimContext } from "./context.ts";
import type { SimSample } from "./types.ts";
import { createEngineSimState, ENGINE_FLAVOURS, type EngineFlavourName, type SimFaults } from "./flavours/state.ts";
import { flavourOf } from "./flavours/index.ts";
import { simModelSpec, type SimToolParser } from "./model.ts";
import { QWEN2_5_VL_PROCESSOR, type VisionProcessor } from "../model/index.ts";

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
  /** The engine whose wire format, errors and routes it reproduces (docs/engines.md). Default vllm. */
  engine?: EngineFlavourName;
  /** The version it reports (default the pinned one: vLLM 0.33.0, SGLang 0.5.23). */
  engineVersion?: string;
  /** vLLM's --logprobs-mode it reports in dev mode. Default raw_logprobs (vLLM's default). */
  logprobsMode?: string;
  /** vLLM: serve the dev and RL routes (VLLM_SERVER_DEV_MODE=1; weight sync needs them). Default true. */
  devMode?: boolean;
  /** The model path it starts with (vLLM's `root`, SGLang's `model_path`). Default the model id. */
  modelPath?: string;
  /** Misbehaviour for tests (ids with holes, weight loads that fail). */
  faults?: SimFaults;
  /**
   * vLLM's `--tool-call-parser` the served model runs with: `hermes` (default: Qwen3, `<tool_call>`
   * JSON, thinking) or `qwen3_coder` (Qwen3-Coder: its chat template, XML tool calls, no thinking).
   */
  toolCallParser?: SimToolParser;
  /**
   * The image processor configuration the engine runs with on its generate routes (default the
   * model's, Qwen2.5-VL's sizes): another one makes the engine's expansion of an image differ
   * from the model directory's, as an engine started with other `max_pixels` does.
   */
  imageProcessor?: VisionProcessor;
  /** vLLM: started with `--enable-scale-out` (serves `/inference/v1/generate`; without it the route answers 403). Default true. */
  enableScaleOut?: boolean;
  /**
   * SGLang: started with `--incremental-streaming-output` (a streamed `/generate` event holds only
   * its new output ids, text and logprob rows, not everything so far). Default false.
   */
  incrementalStreamingOutput?: boolean;
}

export function resolveOptions(options: PolicySimulatorOptions): SimContext {
  const script =
    typeof options.script === "string" ? parsePolicyScriptFile(options.script) : PolicyScriptSchema.parse(options.script ?? {});
  const samples: SimSample[] = [];
  const maxSamples = options.maxSamples ?? 10_000;
  const flavour = options.engine ?? "vllm";
  if (!ENGINE_FLAVOURS.includes(flavour)) throw new Error(`policy simulator: engine must be one of ${ENGINE_FLAVOURS.join(", ")}, got "${flavour}"`);
  const model = options.model ?? DEFAULT_SIM_MODEL;
  const modelSpec = simModelSpec(options.toolCallParser ?? "hermes");
  return {
    modelSpec,
    toolFormat: modelSpec.toolParser === "qwen3_coder" ? "qwen3_coder" : "hermes",
    thinks: modelSpec.reasoningParser !== null,
    imageProcessor: options.imageProcessor ?? modelSpec.images?.expand?.processor ?? QWEN2_5_VL_PROCESSOR,
    scaleOut: options.enableScaleOut ?? true,
    incrementalStreaming: options.incrementalStreamingOutput ?? false,
    seed: options.seed,
    script,
    model,
    chunkDelayMs: options.chunkDelayMs ?? 0,
    ttftMs: options.ttftMs ?? 0,
    tokensPerChunk: options.tokensPerChunk ?? 1,
    samples,
    record(sample) {
      samples.push(sample);
      if (samples.length > maxSamples) samples.splice(0, samples.length - maxSamples);
    },
    log: options.log ?? (() => {}),
    engine: createEngineSimState(flavour, {
      modelPath: options.modelPath ?? model,
      version: options.engineVersion,
      logprobsMode: options.logprobsMode,
      devMode: options.devMode,
      faults: options.faults,
    }),
    flavour: flavourOf(flavour),
  };
}
