/**
 * A token-in engine answer read as steps of sampled tokens: vLLM 0.33.0's `/v1/completions`
 * (the ids as `logprobs.tokens` `token_id:N` on `return_tokens_as_token_ids`, or
 * `choices[0].token_ids`; `logprobs.token_logprobs`, `finish_reason` with
 * `stop_reason`: null for the end-of-turn token, a token id, or a stop string; one chunk per
 * step when streamed) and SGLang 0.5.23's `/generate` (`output_ids`, `meta_info.finish_reason`
 * `{type, matched}`, `meta_info.output_token_logprobs` rows `[logprob, id, text]`; streamed,
 * every event holds everything so far, or only what is new on a server started with
 * `--incremental-streaming-output`), and vLLM's `/inference/v1/generate` (a prompt with
 * images: `choices[0].token_ids`, `logprobs.content` rows `{token_id, logprob, top_logprobs}`,
 * the expanded prompt as the top-level `prompt_token_ids`, on the first chunk when streamed).
 * docs/engines.md has the contracts.
 */
import type { EngineFinish } from "../../model/index.ts";
import type { EngineKind } from "../engines/kinds.ts";

export interface EngineStep {
  /** Tokens sampled in this step. */
  ids: number[];
  /** Their logprobs (NaN where the engine sent none). */
  logprobs: number[];
  /** Their top alternatives, when asked: per token, [token id or text, logprob]. */
  top?: { token: number | string; logprob: number }[][];
  /** The prompt ids the engine echoed (first step; a Uint32Array when read by parseAnswer). */
  promptIds?: readonly number[] | Uint32Array;
  /** On the last step. */
  finish?: StepFinish;
  /** vLLM's `weight_versions` spans (asked for with `return_weight_versions`; on the last step). */
  weightVersions?: unknown[];
  /** Why the engine's answer cannot be read as sampled ids (the call fails with it). */
  unreadable?: string;
}

export interface StepFinish extends EngineFinish {
  /** vLLM's `stop_reason` (null: the end-of-turn token or max_tokens), or SGLang's `matched`. */
  stopReason: number | string | null;
  /** An engine abort (`finish_reason` "abort"): the message to fail the call with. */
  aborted?: string;
}

/**
 * The steps of a stream's events read but not derendered yet, as one step: vLLM 0.33.0 merges
 * the outputs of a streamed request that its chat route has not taken yet the same way
 * (`RequestOutputCollector.put`, vllm/v1/engine/output_processor.py; `RequestOutput.add` with
 * `aggregate`, vllm/outputs.py): the ids and logprobs joined, the finish and the weight versions
 * the last step's, the prompt the first's.
 *
 * @example
 * const pending = new StepCollector();
 * pending.add({ ids: [1], logprobs: [-0.5] }); pending.add({ ids: [2], logprobs: [-1], finish });
 * pending.take() // { ids: [1, 2], logprobs: [-0.5, -1], finish }
 */
export class StepCollector {
  private step: EngineStep | undefined;
  /** Whether `step`'s arrays are the collector's own (a step added alone is kept as it came). */
  private owned = false;

  /** Whether a step holding the answer's finish is waiting (nothing after it counts). */
  get finished(): boolean {
    return this.step?.finish !== undefined;
  }

  add(later: EngineStep): void {
    const step = this.step;
    if (!step) {
      this.step = later;
      return;
    }
    if (!this.owned) {
      this.step = { ...step, ids: step.ids.slice(), logprobs: step.logprobs.slice(), ...(step.top ? { top: step.top.slice() } : {}) };
      this.owned = true;
    }
    const into = this.step!;
    for (const id of later.ids) into.ids.push(id);
    for (const logprob of later.logprobs) into.logprobs.push(logprob);
    if (later.top) {
      into.top ??= [];
      for (const row of later.top) into.top.push(row);
    }
    into.promptIds ??= later.promptIds;
    if (later.finish) into.finish = later.finish;
    if (later.weightVersions) into.weightVersions = later.weightVersions;
  }

  /** The waiting steps as one, or undefined when none waits; the collector is then empty. */
  take(): EngineStep | undefined {
    const step = this.step;
    this.step = undefined;
    this.owned = false;
    return step;
  }
}

/** Reads one answer (a whole JSON body, or one stream event) into the step it adds. */
export interface EngineAnswerReader {
  read(event: any): EngineStep | undefined;
  /** Usage the engine reported (vLLM's usage chunk, SGLang's meta_info counts), if any. */
  usage(): { prompt_tokens: number; completion_tokens: number } | undefined;
}

/**
 * A reader for `kind`'s answers (vLLM's shape for a server not identified).
 *
 * @example
 * const r = engineAnswerReader("vllm");
 * r.read({ choices: [{ token_ids: [9707, 151645], finish_reason: "stop", stop_reason: null }] })!.finish // { reason: "stop", stopToken: true, stopReason: null }
 */
export function engineAnswerReader(kind: EngineKind, o: { top: boolean; generate?: boolean } = { top: true }): EngineAnswerReader {
  if (kind === "sglang") return sglangReader();
  return o.generate ? vllmGenerateReader(o.top) : vllmReader(o.top);
}

/** vLLM's `/inference/v1/generate` answers (`GenerateTokensResponse`, its stream chunks). */
function vllmGenerateReader(top: boolean): EngineAnswerReader {
  let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
  let promptSeen = false;
  return {
    usage: () => usage,
    read(event) {
      usage = openAiUsage(event) ?? usage;
      const choice = firstChoice(event);
      if (!choice) return undefined;
      const ids: number[] = Array.isArray(choice.token_ids) ? choice.token_ids : [];
      const rows: any[] = Array.isArray(choice.logprobs?.content) ? choice.logprobs.content : [];
      // Loops, not map closures: this runs once per engine event.
      const logprobs = new Array<number>(ids.length);
      for (let i = 0; i < ids.length; i++) {
        const logprob = rows[i]?.logprob;
        logprobs[i] = typeof logprob === "number" ? logprob : Number.NaN;
      }
      const step: EngineStep = { ids, logprobs };
      if (top && rows.length > 0) step.top = ids.map((_, i) => (Array.isArray(rows[i]?.top_logprobs) ? rows[i].top_logprobs : []).map((t: any) => ({ token: t.token_id as number, logprob: t.logprob as number })));
      // The prompt it ran comes once (the first chunk of a stream).
      if (!promptSeen && (Array.isArray(event.prompt_token_ids) || event.prompt_token_ids instanceof Uint32Array)) {
        step.promptIds = event.prompt_token_ids;
        promptSeen = true;
      }
      if (Array.isArray(choice.weight_versions)) step.weightVersions = choice.weight_versions;
      const finish = finishOf(choice);
      if (finish) step.finish = finish;
      return step;
    },
  };
}

/** `top`: whether the answer's logprob entries show alternatives (the harness asked for logprobs); vLLM sends the sampled token's as one. */
function vllmReader(top: boolean): EngineAnswerReader {
  let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
  return {
    usage: () => usage,
    read(event) {
      usage = openAiUsage(event) ?? usage;
      const choice = firstChoice(event);
      if (!choice) return undefined;
      const lp = choice.logprobs;
      // The ids are the logprobs' tokens as `token_id:N` (return_tokens_as_token_ids), or token_ids where an engine sends them.
      const ids = Array.isArray(choice.token_ids) ? (choice.token_ids as number[]) : placeholderIds(lp?.tokens);
      if (typeof ids === "string") return { ids: [], logprobs: [], unreadable: ids };
      const given = lp?.token_logprobs;
      const logprobs = new Array<number>(ids.length);
      for (let i = 0; i < ids.length; i++) logprobs[i] = typeof given?.[i] === "number" ? given[i] : Number.NaN;
      const step: EngineStep = { ids, logprobs };
      if (top && Array.isArray(lp?.top_logprobs)) {
        step.top = ids.map((_, i) => Object.entries((lp.top_logprobs[i] ?? {}) as Record<string, number>).map(([token, logprob]) => ({ token: tokenOf(token), logprob })));
      }
      if (Array.isArray(choice.prompt_token_ids) || choice.prompt_token_ids instanceof Uint32Array) step.promptIds = choice.prompt_token_ids;
      if (Array.isArray(choice.weight_versions)) step.weightVersions = choice.weight_versions;
      const finish = finishOf(choice);
      if (finish) step.finish = finish;
      return step;
    },
  };
}

function sglangReader(): EngineAnswerReader {
  // Streamed events are cumulative: what is new is what lies past what was seen.
  let seen = 0;
  let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
  return {
    usage: () => usage,
    read(event) {
      if (!event || typeof event !== "object" || !Array.isArray(event.output_ids)) return undefined;
      const meta = event.meta_info ?? {};
      const all: number[] = event.output_ids;
      // What is new: the last `fresh` ids of the event and of its logprob rows, whether it holds
      // everything so far (SGLang's default) or only what is new (--incremental-streaming-output);
      // meta_info.completion_tokens counts all sampled so far either way.
      const total = typeof meta.completion_tokens === "number" && meta.completion_tokens >= seen ? meta.completion_tokens : Math.max(seen, all.length);
      const fresh = total - seen;
      const ids = all.slice(Math.max(0, all.length - fresh));
      const rows: unknown[] = Array.isArray(meta.output_token_logprobs) ? meta.output_token_logprobs : [];
      const rowAt = rows.length - ids.length;
      const logprobs = ids.map((_, i) => {
        const row = rows[rowAt + i];
        return Array.isArray(row) && typeof row[0] === "number" ? row[0] : Number.NaN;
      });
      const step: EngineStep = { ids, logprobs };
      if (Array.isArray(meta.output_top_logprobs)) {
        const top: unknown[] = meta.output_top_logprobs;
        const topAt = top.length - ids.length;
        step.top = ids.map((_, i) => ((top[topAt + i] ?? []) as unknown[]).filter(Array.isArray).map((r: any) => ({ token: r[1] as number, logprob: r[0] as number })));
      }
      if (seen === 0 && (Array.isArray(event.prompt_token_ids) || event.prompt_token_ids instanceof Uint32Array)) step.promptIds = event.prompt_token_ids;
      seen += ids.length;
      if (typeof meta.prompt_tokens === "number" && typeof meta.completion_tokens === "number") usage = { prompt_tokens: meta.prompt_tokens, completion_tokens: meta.completion_tokens };
      const f = meta.finish_reason;
      if (f && typeof f === "object") {
        const matched = f.matched ?? null;
        if (f.type === "abort") step.finish = { reason: "abort", stopToken: false, stopReason: null, aborted: String(f.message ?? "the engine aborted the request") };
        else step.finish = { reason: f.type === "length" ? "length" : "stop", stopToken: f.type === "stop" && typeof matched !== "string", stopReason: typeof matched === "string" || typeof matched === "number" ? matched : null };
      }
      return step;
    },
  };
}

const PLACEHOLDER = "token_id:";

/**
 * The sampled ids of a vLLM completions choice asked with `return_tokens_as_token_ids`: its
 * logprobs' `tokens`, each `token_id:N` (vLLM's `format_token_id_placeholder`); none for a chunk
 * without logprobs (a usage or held-back chunk). What else is there is a string saying why the ids
 * cannot be read.
 */
function placeholderIds(tokens: unknown): number[] | string {
  if (tokens === undefined || tokens === null) return [];
  if (!Array.isArray(tokens)) return `vLLM's logprobs.tokens is ${JSON.stringify(tokens).slice(0, 80)}, not a list`;
  const ids = new Array<number>(tokens.length);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    const id = typeof t === "string" && t.startsWith(PLACEHOLDER) ? placeholderId(t) : -1;
    if (id < 0) {
      return `vLLM's logprobs.tokens[${i}] is ${JSON.stringify(t)?.slice(0, 80)}, not "token_id:N": the engine ignored return_tokens_as_token_ids (token-in mode needs vLLM ≥ 0.13.0; OpenForge follows 0.33.0, docs/engines.md)`;
    }
    ids[i] = id;
  }
  return ids;
}

/**
 * N of `token_id:N` as vLLM writes it (`f"token_id:{token_id}"`: decimal digits, no sign or
 * leading zero), or -1. Read by character: one per sampled token, no substring or number text made.
 */
function placeholderId(text: string): number {
  const start = PLACEHOLDER.length;
  const end = text.length;
  // A token id is below 2^32: at most 10 digits.
  if (end === start || end - start > 10 || (text.charCodeAt(start) === 0x30 && end - start > 1)) return -1;
  let id = 0;
  for (let i = start; i < end; i++) {
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return -1;
    id = id * 10 + digit;
  }
  return id;
}

/** A top alternative's key: its id when written as `token_id:N`, else the text vLLM wrote. */
function tokenOf(key: string): number | string {
  const id = key.startsWith(PLACEHOLDER) ? placeholderId(key) : -1;
  return id < 0 ? key : id;
}

/** A vLLM choice's finish (both routes write it the same way), or undefined while it streams on. */
function finishOf(choice: any): EngineStep["finish"] | undefined {
  if (typeof choice.finish_reason !== "string" || choice.finish_reason === "") return undefined;
  const stopReason = choice.stop_reason ?? null;
  const reason = choice.finish_reason;
  const finish: NonNullable<EngineStep["finish"]> = { reason, stopReason, stopToken: reason === "stop" && typeof stopReason !== "string" };
  if (reason === "abort") finish.aborted = "the engine aborted the request";
  return finish;
}

/** An OpenAI-shaped event's token usage, when it carries one (vLLM sends it in the last chunk). */
function openAiUsage(event: any): { prompt_tokens: number; completion_tokens: number } | undefined {
  if (!event?.usage || typeof event.usage.prompt_tokens !== "number") return undefined;
  return { prompt_tokens: event.usage.prompt_tokens, completion_tokens: event.usage.completion_tokens };
}

/** Choice 0 of an OpenAI-shaped event (the proxy asks for one), or undefined. */
function firstChoice(event: any): any {
  const choices = event?.choices;
  if (!Array.isArray(choices)) return undefined;
  for (const c of choices) if ((c?.index ?? 0) === 0) return c;
  return undefined;
}
