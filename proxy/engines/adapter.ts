/**
 * What differs between engines on the request side: how a train-mode call asks for token ids,
 * the fixed sampling defaults of each route, and whether an echoed prompt's text comes back.
 * The answer side (where the ids are) is read by capture/tokens.ts, which knows every engine's
 * places and takes whichever the answer has. Each engine's adapter is in its own file (vllm.ts,
 * sglang.ts); adapters.ts picks one.
 */
import type { CaptureKind } from "../capture/tokens.ts";
import type { EngineKind } from "./kinds.ts";

/** Sampling parameters the proxy records, by their request names. */
export type SamplingName =
  | "temperature"
  | "top_p"
  | "top_k"
  | "min_p"
  | "max_tokens"
  | "presence_penalty"
  | "frequency_penalty"
  | "repetition_penalty"
  | "min_tokens"
  | "n"
  | "ignore_eos";

export interface EngineAdapter {
  kind: EngineKind;
  /**
   * The upstream body of a train-mode call: `body` with what makes the engine return prompt
   * and completion ids (and logprobs, and usage on streams). Returns `body` itself when nothing
   * had to change. Never adds a field the engine at its pinned version rejects or ignores.
   */
  trainRequest(capture: CaptureKind, body: Record<string, any>): Record<string, any>;
  /**
   * The values an engine uses for parameters a request leaves out, where they are fixed for the
   * route at the pinned version. A name not listed is taken from the model's
   * generation_config (or computed), which the engine does not report.
   */
  samplingDefaults(capture: CaptureKind): Partial<Record<SamplingName, number | boolean>>;
  /** vLLM sends an echoed prompt's text as "" when asked for token ids (the proxy puts it back). */
  blanksEchoedPrompt: boolean;
}
