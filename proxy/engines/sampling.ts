/**
 * The sampling parameters of a call, as recorded (ModelCall.sampling): the request's values,
 * else the engine's fixed default for the route, else UNKNOWN (the engine takes it from the
 * model's generation_config and does not say). Neither vLLM 0.33 nor SGLang 0.5.23 reports the
 * effective parameters of a request, so "effective" is request + documented default.
 */
import { messageFactory, SamplingParamsSchema, SamplingSource, type SamplingParams } from "../../schemas/index.ts";
import type { CaptureKind } from "../capture/tokens.ts";
import type { EngineAdapter, SamplingName } from "./adapter.ts";

/** create(SamplingParamsSchema) without its reflective walk per call (schemas/message-factory.ts). */
const newSamplingParams = messageFactory(SamplingParamsSchema);

const TRACKED: readonly SamplingName[] = [
  "temperature",
  "top_p",
  "top_k",
  "min_p",
  "max_tokens",
  "presence_penalty",
  "frequency_penalty",
  "repetition_penalty",
  "min_tokens",
  "n",
  "ignore_eos",
];

/** Request fields that constrain or reshape the distribution beyond the numbers above. */
const CONSTRAINTS = [
  "logit_bias",
  "allowed_token_ids",
  "bad_words",
  "response_format",
  "structured_outputs",
  "guided_json",
  "guided_regex",
  "guided_choice",
  "guided_grammar",
  "regex",
  "json_schema",
  "ebnf",
  "stop_regex",
  "thinking_token_budget",
  "use_beam_search",
  "best_of",
  "length_penalty",
] as const;

/** The record's value field of each parameter; its source field is the same name + "Source". */
const field: Record<SamplingName, keyof SamplingParams> = {
  temperature: "temperature",
  top_p: "topP",
  top_k: "topK",
  min_p: "minP",
  max_tokens: "maxTokens",
  presence_penalty: "presencePenalty",
  frequency_penalty: "frequencyPenalty",
  repetition_penalty: "repetitionPenalty",
  min_tokens: "minTokens",
  n: "n",
  ignore_eos: "ignoreEos",
};

/**
 * The recorded sampling parameters of the body sent upstream.
 *
 * @example
 * const s = samplingOf("completions", { prompt: "x", temperature: 0.7 }, sglangAdapter);
 * s.temperature // 0.7 (source REQUEST); s.maxTokens // 16 (source ENGINE_DEFAULT)
 */
export function samplingOf(capture: CaptureKind, body: Record<string, any>, adapter: EngineAdapter): SamplingParams {
  const defaults = adapter.samplingDefaults(capture);
  const sampling = newSamplingParams() as SamplingParams & Record<string, unknown>;
  for (const name of TRACKED) {
    const requested = name === "max_tokens" && capture === "chat" ? (body.max_completion_tokens ?? body.max_tokens) : body[name];
    const value = requested ?? defaults[name];
    const key = field[name] as string;
    if (value === undefined || value === null) {
      sampling[`${key}Source`] = SamplingSource.UNKNOWN;
      continue;
    }
    if (!valid(name, value)) continue; // the engine refuses it; the call fails and says why
    sampling[key] = value;
    sampling[`${key}Source`] = requested !== undefined && requested !== null ? SamplingSource.REQUEST : SamplingSource.ENGINE_DEFAULT;
  }
  if (typeof body.seed === "number") {
    sampling.seed = body.seed;
    sampling.seedSource = SamplingSource.REQUEST;
  }
  if (typeof body.stop === "string") sampling.stop = [body.stop];
  else if (Array.isArray(body.stop)) sampling.stop = body.stop.filter((s: unknown): s is string => typeof s === "string");
  if (Array.isArray(body.stop_token_ids)) sampling.stopTokenIds = body.stop_token_ids.filter((id: unknown): id is number => Number.isInteger(id) && (id as number) >= 0);
  if (sampling.stop.length > 0 || sampling.stopTokenIds.length > 0) sampling.stopSource = SamplingSource.REQUEST;
  let constraints: Record<string, unknown> | undefined;
  for (const key of CONSTRAINTS) {
    if (body[key] === undefined || body[key] === null || body[key] === false) continue;
    (constraints ??= {})[key] = body[key];
  }
  // A forced tool call changes what may be sampled; "auto" and "none" are the defaults' kind.
  const choice = body.tool_choice;
  if (choice === "required" || (choice && typeof choice === "object")) (constraints ??= {}).tool_choice = choice;
  if (constraints) sampling.constraintsJson = JSON.stringify(constraints);
  return sampling;
}

function valid(name: SamplingName, value: unknown): boolean {
  if (name === "ignore_eos") return typeof value === "boolean";
  if (typeof value !== "number" || !Number.isFinite(value)) return false;
  if (name === "max_tokens" || name === "min_tokens" || name === "n") return Number.isInteger(value) && value >= 0 && value <= 0xffffffff;
  if (name === "top_k") return Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31;
  return true;
}
