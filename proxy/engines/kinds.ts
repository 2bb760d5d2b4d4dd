/** The engines the proxy knows, as flags name them and as records store them. */
import { Engine, LogprobsMode } from "../../schemas/index.ts";

/** An identified engine; `other` is an OpenAI-compatible API that said neither. */
export type EngineKind = "vllm" | "sglang" | "other";

/** What `--engine` / `spec.policy.engine` accept. */
export type EngineSetting = "vllm" | "sglang" | "auto";

export const ENGINE_SETTINGS: readonly EngineSetting[] = ["vllm", "sglang", "auto"];

/** What the proxy knows about the engine behind its upstreams. */
export interface EngineInfo {
  kind: EngineKind;
  /** As the engine reports it ("0.33.0"); "" when it did not say. */
  version: string;
  /** vLLM's --logprobs-mode where dev mode shows it; UNKNOWN otherwise. */
  logprobsMode: LogprobsMode;
  /** How the engine was identified ("GET /version", "the --engine flag", ...). */
  how: string;
}

/**
 * The record's enum for a kind.
 *
 * @example
 * engineEnum("sglang") // Engine.SGLANG
 */
export function engineEnum(kind: EngineKind): Engine {
  return kind === "vllm" ? Engine.VLLM : kind === "sglang" ? Engine.SGLANG : Engine.OTHER;
}

/**
 * A readable name: "vLLM 0.33.0", "SGLang", "an unidentified OpenAI-compatible server".
 *
 * @example
 * engineName({ kind: "vllm", version: "0.33.0" }) // "vLLM 0.33.0"
 */
export function engineName(info: { kind: EngineKind; version: string }): string {
  const name = info.kind === "vllm" ? "vLLM" : info.kind === "sglang" ? "SGLang" : "an unidentified OpenAI-compatible server";
  return info.version && info.kind !== "other" ? `${name} ${info.version}` : name;
}

/**
 * vLLM's `--logprobs-mode` value as the record's enum.
 *
 * @example
 * logprobsModeOf("processed_logprobs") // LogprobsMode.PROCESSED_LOGPROBS
 */
export function logprobsModeOf(value: unknown): LogprobsMode {
  switch (value) {
    case "raw_logprobs":
      return LogprobsMode.RAW_LOGPROBS;
    case "processed_logprobs":
      return LogprobsMode.PROCESSED_LOGPROBS;
    case "raw_logits":
      return LogprobsMode.RAW_LOGITS;
    case "processed_logits":
      return LogprobsMode.PROCESSED_LOGITS;
    default:
      return LogprobsMode.UNKNOWN;
  }
}
