/**
 * Token capture from engine answers, the check of the ids against the usage counts, and the
 * stripping of what the proxy asked for in train mode from what the harness receives.
 *
 * Where the ids are (docs/engines.md), read from whichever place an answer has:
 * - vLLM chat: top-level `prompt_token_ids` (first chunk of a stream), `choices[i].token_ids`
 *   (per chunk); vLLM and SGLang completions: `prompt_token_ids` (first chunk) and `token_ids`
 *   per choice.
 * - SGLang chat, not streamed: `choices[i].prompt_token_ids` and `choices[i].response_token_ids`;
 *   streamed: a trailing chunk's `sglext.input_ids` and `sglext.output_ids[i]`.
 * Logprobs: chat `choices[i].logprobs.content[].logprob`, completions
 * `choices[i].logprobs.token_logprobs`. Choice 0 is recorded (train mode refuses n > 1).
 * Ids are never made up by re-tokenizing text: absent ids stay absent.
 */
import { TokenStatus } from "../../schemas/index.ts";
import { engineError } from "../engines/errors.ts";
import { isIdArray } from "./answer-json.ts";

export type CaptureKind = "chat" | "completions";

/** What the harness itself asked for, so those fields are left in its answer. */
export interface HarnessWants {
  tokenIds: boolean;
  logprobs: boolean;
  usage: boolean;
  /** SGLang's sglext ids (`return_input_ids_in_sglext` / `return_output_ids_in_sglext`). */
  sglext?: boolean;
  /** false when the harness sent `include_reasoning: false` (the proxy then strips reasoning). */
  reasoning?: boolean;
  /** vLLM's `weight_versions` spans (`return_weight_versions`). */
  weightVersions?: boolean;
  /**
   * Completions `echo` in train mode against vLLM, which sends the echoed prompt's text as ""
   * when asked for ids: the prompt text the proxy puts back in front of choice 0's text.
   */
  echoPrompt?: string;
}

export interface TokenCapture {
  /** The prompt's ids; a Uint32Array when `parseAnswer` lifted them out of the answer's text. */
  promptTokenIds: readonly number[] | Uint32Array | undefined;
  completionTokenIds: number[];
  completionLogprobs: number[];
  /** Whether any chunk carried completion ids (an empty completion still counts). */
  sawCompletionIds: boolean;
  finishReason: string;
  usage: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number; cached_tokens?: number } | undefined;
  model: string;
  /** An error the upstream reported inside a 200 answer (a stream's `data: {"error": …}`). */
  upstreamError?: string;
  /** Whether the echoed prompt text was put back (the first text of choice 0 seen). */
  echoed?: boolean;
  /**
   * The weight-version labels the server reported for choice 0's tokens, in order (vLLM 0.33.0:
   * `choices[i].weight_versions` spans, with `return_weight_versions`; SGLang 0.5.23:
   * `metadata.weight_version`). Undefined when it reported none.
   */
  weightVersions?: string[];
}

/**
 * An empty capture.
 *
 * @example
 * newCapture().completionTokenIds // []
 */
export function newCapture(): TokenCapture {
  return { promptTokenIds: undefined, completionTokenIds: [], completionLogprobs: [], sawCompletionIds: false, finishReason: "", usage: undefined, model: "" };
}

/**
 * Takes ids, logprobs, finish reason, usage and errors out of one answer (a whole JSON body or
 * one stream chunk) into `capture`, and removes from `body` what the harness did not ask for.
 * Returns true when `body` was changed (so the caller re-serializes it).
 *
 * @example
 * const cap = newCapture();
 * const body = { prompt_token_ids: [1], choices: [{ index: 0, token_ids: [2], delta: { content: "x" } }] };
 * captureAndStrip("chat", body, cap, { tokenIds: false, logprobs: false, usage: true }); // true
 * cap.completionTokenIds // [2]
 */
export function captureAndStrip(kind: CaptureKind, body: any, capture: TokenCapture, wants: HarnessWants): boolean {
  let changed = false;
  if (typeof body.model === "string" && capture.model === "") capture.model = body.model;
  if (isIdArray(body.prompt_token_ids)) {
    capture.promptTokenIds ??= body.prompt_token_ids;
    if (!wants.tokenIds) {
      delete body.prompt_token_ids;
      changed = true;
    }
  }
  if (body.usage && typeof body.usage === "object") {
    const u = body.usage;
    capture.usage = {
      prompt_tokens: u.prompt_tokens,
      completion_tokens: u.completion_tokens,
      total_tokens: u.total_tokens,
      cached_tokens: u.prompt_tokens_details?.cached_tokens ?? undefined,
    };
    if (!wants.usage) {
      delete body.usage;
      changed = true;
    }
  } else if (body.usage === null && !wants.usage) {
    delete body.usage;
    changed = true;
  }
  if (body.error !== undefined) {
    const e = engineError(body);
    if (e) capture.upstreamError ??= e.message;
  }
  if (body.sglext && typeof body.sglext === "object" && captureSglext(body, capture, wants)) changed = true;
  const sglangVersion = body.metadata?.weight_version;
  if (typeof sglangVersion === "string" && sglangVersion !== "") capture.weightVersions ??= [sglangVersion];
  if (!Array.isArray(body.choices)) return changed;
  for (const choice of body.choices) {
    if (!choice || typeof choice !== "object") continue;
    const first = (choice.index ?? 0) === 0;
    if (isIdArray(choice.prompt_token_ids)) {
      if (first) capture.promptTokenIds ??= choice.prompt_token_ids;
      if (!wants.tokenIds) {
        delete choice.prompt_token_ids;
        changed = true;
      }
    }
    // vLLM (and SGLang completions) name a choice's sampled ids token_ids; SGLang chat response_token_ids.
    const ids = Array.isArray(choice.token_ids) ? choice.token_ids : Array.isArray(choice.response_token_ids) ? choice.response_token_ids : undefined;
    if (ids) {
      if (first) {
        for (const id of ids) capture.completionTokenIds.push(id);
        capture.sawCompletionIds = true;
      }
      if (!wants.tokenIds) {
        delete choice.token_ids;
        delete choice.response_token_ids;
        changed = true;
      }
    }
    const lp = choice.logprobs;
    if (lp && typeof lp === "object") {
      if (first) {
        if (kind === "chat" && Array.isArray(lp.content)) for (const t of lp.content) capture.completionLogprobs.push(t?.logprob ?? 0);
        if (kind === "completions" && Array.isArray(lp.token_logprobs)) for (const v of lp.token_logprobs) capture.completionLogprobs.push(v ?? 0);
      }
      if (!wants.logprobs) {
        choice.logprobs = null;
        changed = true;
      }
    }
    if (first && typeof choice.finish_reason === "string" && choice.finish_reason !== "") capture.finishReason = choice.finish_reason;
    if (Array.isArray(choice.weight_versions)) {
      if (first) noteWeightVersions(capture, choice.weight_versions);
      if (!wants.weightVersions) {
        choice.weight_versions = null;
        changed = true;
      }
    }
    if (wants.reasoning === false && kind === "chat" && stripReasoning(choice.message ?? choice.delta)) changed = true;
    if (first && wants.echoPrompt !== undefined && !capture.echoed && typeof choice.text === "string") {
      choice.text = wants.echoPrompt + choice.text;
      capture.echoed = true;
      changed = true;
    }
  }
  return changed;
}

/** vLLM's spans (`[{version, start, end}]`, only on a choice's last chunk) as the list of their labels. */
function noteWeightVersions(capture: TokenCapture, spans: unknown[]): void {
  const labels = capture.weightVersions ?? [];
  for (const span of spans) {
    const version = (span as { version?: unknown } | null)?.version;
    if (typeof version === "string" && labels.at(-1) !== version) labels.push(version);
  }
  if (labels.length > 0) capture.weightVersions = labels;
}

/** SGLang's response-level ids: `sglext.input_ids` and `sglext.output_ids[choice]`. */
function captureSglext(body: any, capture: TokenCapture, wants: HarnessWants): boolean {
  const ext = body.sglext;
  let changed = false;
  if (isIdArray(ext.input_ids)) {
    capture.promptTokenIds ??= ext.input_ids;
    if (!wants.sglext) {
      delete ext.input_ids;
      changed = true;
    }
  }
  if (Array.isArray(ext.output_ids)) {
    const first = ext.output_ids[0];
    // Per-choice ids, when the answer has them too, came first and are the same ids.
    if (Array.isArray(first) && !capture.sawCompletionIds) {
      for (const id of first) capture.completionTokenIds.push(id);
      capture.sawCompletionIds = true;
    }
    if (!wants.sglext) {
      delete ext.output_ids;
      changed = true;
    }
  }
  if (changed && Object.keys(ext).length === 0) delete body.sglext;
  return changed;
}

function stripReasoning(message: any): boolean {
  if (!message || typeof message !== "object") return false;
  let changed = false;
  for (const key of ["reasoning", "reasoning_content"]) {
    if (key in message) {
      delete message[key];
      changed = true;
    }
  }
  return changed;
}

/**
 * Whether a stream chunk the proxy stripped has nothing left for the harness (the usage or
 * sglext chunk it asked for itself): then it is not sent.
 *
 * @example
 * emptyAfterStrip({ id: "x", choices: [] }) // true
 */
export function emptyAfterStrip(chunk: any): boolean {
  return Array.isArray(chunk.choices) && chunk.choices.length === 0 && (chunk.usage === undefined || chunk.usage === null) && chunk.sglext === undefined && chunk.error === undefined;
}

/**
 * What a harness request asked for itself (so its answer keeps those fields).
 *
 * @example
 * harnessWants("chat", { logprobs: true, stream: true }) // { tokenIds: false, logprobs: true, usage: false, sglext: false, reasoning: true }
 */
export function harnessWants(kind: CaptureKind, body: any): HarnessWants {
  const logprobs = kind === "chat" ? body.logprobs === true : typeof body.logprobs === "number" && body.logprobs >= 0;
  return {
    tokenIds: body.return_token_ids === true,
    logprobs,
    // Non-stream answers always carry usage; streams only with include_usage.
    usage: body.stream !== true || body.stream_options?.include_usage === true,
    sglext: body.return_input_ids_in_sglext === true || body.return_output_ids_in_sglext === true,
    reasoning: body.include_reasoning !== false,
    weightVersions: body.return_weight_versions === true,
  };
}

/** The token view of a finished call: its status, why, and the logprobs to record. */
export interface TokenVerdict {
  status: TokenStatus;
  /** Why the status is not COMPLETE, or a note on a COMPLETE call; "" otherwise. */
  reason: string;
  /** The completion logprobs to record: one per completion id, or none. */
  logprobs: number[];
}

/**
 * Judges a call's captured ids: COMPLETE only when the prompt and completion ids are both there
 * and agree with the answer's usage counts; PARTIAL (with the reason) when some came back;
 * MISSING when none did. Logprobs are recorded only when there is one per completion id (an
 * echoed prompt's logprobs, which vLLM and SGLang put first, are left out).
 *
 * @example
 * const cap = { ...newCapture(), promptTokenIds: [1, 2], completionTokenIds: [3], sawCompletionIds: true, usage: { prompt_tokens: 2, completion_tokens: 5 } };
 * tokenVerdict(cap, { train: true, ok: true }).status // TokenStatus.PARTIAL ("completion ids: 1, usage.completion_tokens: 5")
 */
export function tokenVerdict(cap: TokenCapture, call: { train: boolean; ok: boolean; failure?: string; echo?: boolean }): TokenVerdict {
  if (!call.train) return { status: TokenStatus.NOT_REQUESTED, reason: "", logprobs: cap.completionLogprobs };
  const prompt = cap.promptTokenIds;
  const ids = cap.completionTokenIds;
  let lps = cap.completionLogprobs;
  let note = "";
  // Completions `echo` puts the prompt's logprobs before the completion's (vLLM, and SGLang with logprobs > 0).
  if (call.echo && lps.length > ids.length && cap.sawCompletionIds) lps = lps.slice(lps.length - ids.length);
  if (lps.length !== ids.length) {
    if (lps.length > 0) note = `logprobs not recorded: the upstream sent ${lps.length} for ${ids.length} completion ids`;
    lps = [];
  }
  const withNote = (reason: string) => (note ? `${reason}; ${note}` : reason);
  if (!prompt && !cap.sawCompletionIds) {
    const why = call.ok ? "the upstream returned no token ids" : `the call failed before any ids came back${call.failure ? `: ${call.failure}` : ""}`;
    return { status: TokenStatus.MISSING, reason: why, logprobs: [] };
  }
  if (!call.ok) return { status: TokenStatus.PARTIAL, reason: withNote(`the call did not finish${call.failure ? `: ${call.failure}` : ""}`), logprobs: lps };
  if (!prompt) return { status: TokenStatus.PARTIAL, reason: withNote("the upstream returned completion ids but no prompt ids"), logprobs: lps };
  if (!cap.sawCompletionIds) return { status: TokenStatus.PARTIAL, reason: withNote("the upstream returned prompt ids but no completion ids"), logprobs: [] };
  const u = cap.usage;
  if (!u || typeof u.prompt_tokens !== "number" || typeof u.completion_tokens !== "number") {
    return { status: TokenStatus.PARTIAL, reason: withNote("the answer has no usage counts to check the ids against"), logprobs: lps };
  }
  const problems: string[] = [];
  if (prompt.length !== u.prompt_tokens) problems.push(`prompt ids: ${prompt.length}, usage.prompt_tokens: ${u.prompt_tokens}`);
  if (ids.length !== u.completion_tokens) problems.push(`completion ids: ${ids.length}, usage.completion_tokens: ${u.completion_tokens}`);
  if (problems.length > 0) return { status: TokenStatus.PARTIAL, reason: withNote(`ids do not agree with usage (${problems.join("; ")})`), logprobs: lps };
  return { status: TokenStatus.COMPLETE, reason: note, logprobs: lps };
}

/** The OpenAI APIs whose streams carry usage only when `stream_options.include_usage` asks. */
const STREAM_USAGE_PATHS = new Set(["/v1/chat/completions", "/v1/completions"]);

/**
 * The upstream request in eval mode: the harness's request unchanged, except that a Chat or
 * Completions stream asks for usage (`stream_options.include_usage`, which OpenAI, vLLM and
 * SGLang honour), so the record has token counts. The usage chunk is then stripped from what
 * the harness receives unless it asked for it (`harnessWants`). Vendor passthrough paths
 * (`/v1/messages`, `/v1/responses`) report usage on their own and are left alone.
 * Returns the same object when nothing had to change.
 *
 * @example
 * evalRequest("/v1/chat/completions", { model: "m", messages: [], stream: true }).stream_options // { include_usage: true }
 * evalRequest("/v1/messages", body) === body // true
 */
export function evalRequest(upstreamPath: string, body: Record<string, any>): Record<string, any> {
  if (body.stream !== true || !STREAM_USAGE_PATHS.has(upstreamPath)) return body;
  if (body.stream_options?.include_usage === true) return body;
  return { ...body, stream_options: { ...(body.stream_options ?? {}), include_usage: true } };
}
