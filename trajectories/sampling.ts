/**
 * The sampling side of a sample, for the export's extra_info: the sampling parameters its calls
 * were sampled with (ModelCall.sampling, docs/engines.md), where each value came from, the
 * engine and what its logprobs are. A policy-gradient step that recomputes logprobs needs the
 * temperature and top-p/top-k the behaviour policy sampled at; a sample whose calls differ says so.
 */
import { Engine, LogprobsMode, SamplingSource, type ModelCall, type SamplingParams } from "../schemas/index.ts";

export type SampleSampling = {
  temperature: number | null;
  top_p: number | null;
  top_k: number | null;
  min_p: number | null;
  max_tokens: number | null;
  seed: number | null;
  presence_penalty: number | null;
  frequency_penalty: number | null;
  repetition_penalty: number | null;
  /** JSON of the other constraining request fields (logit_bias, response_format, ...), or null. */
  constraints: string | null;
  /** JSON: parameter → "request" | "engine_default" | "unknown". */
  sources: string;
};

export type SamplingInfo = {
  sampling: SampleSampling | null;
  /** The sample's calls were not all sampled with the same parameters (`sampling` is the first call's). */
  sampling_varies: boolean;
  engine: string;
  engine_version: string;
  /** raw_logprobs | processed_logprobs | raw_logits | processed_logits | unknown. */
  logprobs_mode: string;
};

const SOURCE: Record<number, string> = { [SamplingSource.REQUEST]: "request", [SamplingSource.ENGINE_DEFAULT]: "engine_default", [SamplingSource.UNKNOWN]: "unknown" };

/**
 * The sampling info of a sample made of `calls` (in order).
 *
 * @example
 * samplingInfo([call]).sampling?.temperature // 0.7
 */
export function samplingInfo(calls: readonly ModelCall[]): SamplingInfo {
  const first = calls[0];
  const sampling = first?.sampling ? row(first.sampling) : null;
  const key = JSON.stringify(sampling);
  return {
    sampling,
    sampling_varies: calls.some((c) => JSON.stringify(c.sampling ? row(c.sampling) : null) !== key),
    engine: first ? (Engine[first.engine] ?? "UNSPECIFIED").toLowerCase() : "unspecified",
    engine_version: first?.engineVersion ?? "",
    logprobs_mode: first ? (LogprobsMode[first.logprobsMode] ?? "UNSPECIFIED").toLowerCase() : "unspecified",
  };
}

const SOURCES: [string, keyof SamplingParams][] = [
  ["frequency_penalty", "frequencyPenaltySource"],
  ["ignore_eos", "ignoreEosSource"],
  ["max_tokens", "maxTokensSource"],
  ["min_p", "minPSource"],
  ["min_tokens", "minTokensSource"],
  ["n", "nSource"],
  ["presence_penalty", "presencePenaltySource"],
  ["repetition_penalty", "repetitionPenaltySource"],
  ["seed", "seedSource"],
  ["stop", "stopSource"],
  ["temperature", "temperatureSource"],
  ["top_k", "topKSource"],
  ["top_p", "topPSource"],
];

function row(s: SamplingParams): SampleSampling {
  const sources: Record<string, string> = {};
  for (const [name, key] of SOURCES) {
    const source = s[key] as SamplingSource;
    if (source !== SamplingSource.UNSPECIFIED) sources[name] = SOURCE[source] ?? "unspecified";
  }
  return {
    temperature: s.temperature ?? null,
    top_p: s.topP ?? null,
    top_k: s.topK ?? null,
    min_p: s.minP ?? null,
    max_tokens: s.maxTokens ?? null,
    seed: s.seed ?? null,
    presence_penalty: s.presencePenalty ?? null,
    frequency_penalty: s.frequencyPenalty ?? null,
    repetition_penalty: s.repetitionPenalty ?? null,
    constraints: s.constraintsJson === "" ? null : s.constraintsJson,
    sources: JSON.stringify(sources),
  };
}
