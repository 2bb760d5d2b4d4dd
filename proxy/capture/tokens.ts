/**
 * Token capture from vLLM-style OpenAI answers, and the stripping of the fields the proxy
 * added in train mode from what the harness receives.
 *
 * vLLM (`return_token_ids: true`): chat has top-level `prompt_token_ids` (first chunk when
 * streaming) and `choices[i].token_ids` (per chunk); completions put `prompt_token_ids` and
 * `token_ids` on each choice. Logprobs: chat `choices[i].logprobs.content[].logprob`,
 * completions `choices[i].logprobs.token_logprobs`. Only choice 0 is recorded (agents use n=1).
 * Ids are never made up by re-tokenizing text: absent ids stay absent.
 */

export type CaptureKind = "chat" | "completions";

/** What the harness itself asked for, so those fields are left in its answer. */
export interface HarnessWants {
  tokenIds: boolean;
  logprobs: boolean;
  usage: boolean;
}

export interface TokenCapture {
  promptTokenIds: number[] | undefined;
  completionTokenIds: number[];
  completionLogprobs: number[];
  /** Whether any chunk carried completion ids (an empty completion still counts). */
  sawCompletionIds: boolean;
  finishReason: string;
  usage: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number; cached_tokens?: number } | undefined;
  model: string;
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
 * Takes ids, logprobs, finish reason and usage out of one answer (a whole JSON body or one
 * stream chunk) into `capture`, and removes from `body` what the harness did not ask for.
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
  if (kind === "chat" && Array.isArray(body.prompt_token_ids)) {
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
  if (!Array.isArray(body.choices)) return changed;
  for (const choice of body.choices) {
    if (!choice || typeof choice !== "object") continue;
    const first = (choice.index ?? 0) === 0;
    if (kind === "completions" && Array.isArray(choice.prompt_token_ids)) {
      if (first) capture.promptTokenIds ??= choice.prompt_token_ids;
      if (!wants.tokenIds) {
        delete choice.prompt_token_ids;
        changed = true;
      }
    }
    if (Array.isArray(choice.token_ids)) {
      if (first) {
        for (const id of choice.token_ids) capture.completionTokenIds.push(id);
        capture.sawCompletionIds = true;
      }
      if (!wants.tokenIds) {
        delete choice.token_ids;
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
  }
  return changed;
}

/**
 * What a harness request asked for itself (so its answer keeps those fields).
 *
 * @example
 * harnessWants("chat", { logprobs: true, stream: true }) // { tokenIds: false, logprobs: true, usage: false }
 */
export function harnessWants(kind: CaptureKind, body: any): HarnessWants {
  const logprobs = kind === "chat" ? body.logprobs === true : typeof body.logprobs === "number" && body.logprobs >= 0;
  return {
    tokenIds: body.return_token_ids === true,
    logprobs,
    // Non-stream answers always carry usage; streams only with include_usage.
    usage: body.stream !== true || body.stream_options?.include_usage === true,
  };
}

/**
 * The upstream request in train mode: token ids, logprobs and stream usage asked for.
 * Returns the same object when nothing had to change.
 *
 * @example
 * trainRequest("chat", { model: "m", messages: [] }).return_token_ids // true
 */
export function trainRequest(kind: CaptureKind, body: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = { ...body, return_token_ids: true };
  if (kind === "chat") {
    if (body.logprobs !== true) out.logprobs = true;
  } else if (typeof body.logprobs !== "number") {
    // Completions take the number of top alternatives; 0 gives the sampled token's logprob.
    out.logprobs = 0;
  }
  if (body.stream === true && body.stream_options?.include_usage !== true) {
    out.stream_options = { ...(body.stream_options ?? {}), include_usage: true };
  }
  return out;
}
