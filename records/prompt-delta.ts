/**
 * Prompt deltas: a prompt that shares a prefix with one of the rollout's recent calls is
 * stored as (`prefix_of`, `prefix_len`, suffix). The full prompt of a call is
 * `tokens(prefix_of)[0:prefix_len] ++ prompt_token_ids`, tokens(c) = prompt(c) ++ completion(c).
 *
 * Ids may be plain arrays or Uint32Arrays (the proxy reads a long prompt's ids straight into
 * one); the suffix handed back is always a plain array (it is what the record stores).
 */
import { commonPrefix } from "../lib/index.ts";

/** Token ids as the proxy holds them. */
export type TokenIds = readonly number[] | Uint32Array;

export interface PastCall {
  callId: string;
  /** Full prompt ++ completion of that call. */
  tokens: TokenIds;
}

export interface PromptDelta {
  prefixOf: string;
  prefixLen: number;
  suffix: number[];
}

/**
 * Picks the recent call sharing the longest common prefix with `prompt` (latest wins a tie).
 * `known`, when given, is a prefix of `prompt` its caller made it from (token-in mode's chain,
 * proxy/token-in/call.ts): a recent call's ids that are a view of its start are not compared.
 *
 * @example
 * promptDelta([1, 2, 3, 4], [{ callId: "a", tokens: [1, 2, 3] }]) // { prefixOf: "a", prefixLen: 3, suffix: [4] }
 */
export function promptDelta(prompt: TokenIds, recent: readonly PastCall[], known?: TokenIds): PromptDelta {
  let best: PastCall | undefined;
  let bestLen = 0;
  for (let i = recent.length - 1; i >= 0; i--) {
    const past = recent[i]!;
    // A call whose ids are no longer than the best prefix found cannot share a longer one (and a
    // later call wins a tie): in a growing conversation every earlier call is such a call.
    if (past.tokens.length <= bestLen) continue;
    const len = isViewPrefix(past.tokens, known) ? past.tokens.length : commonPrefix(prompt, past.tokens);
    if (len > bestLen) {
      best = past;
      bestLen = len;
    }
  }
  if (!best) return { prefixOf: "", prefixLen: 0, suffix: idsFrom(prompt, 0) };
  return { prefixOf: best.callId, prefixLen: bestLen, suffix: idsFrom(prompt, bestLen) };
}

/**
 * `ids[from:]` as a plain array, copied by index: for a Uint32Array of 10k ids `Array.from`
 * (the iterator protocol) takes ~260 µs, this loop ~10 µs.
 *
 * @example
 * idsFrom(new Uint32Array([1, 2, 3]), 1) // [2, 3]
 */
export function idsFrom(ids: TokenIds, from: number): number[] {
  const out = new Array<number>(Math.max(0, ids.length - from));
  for (let i = from; i < ids.length; i++) out[i - from] = ids[i]!;
  return out;
}

/**
 * Rebuilds a full prompt from a delta against `recent` (the inverse of promptDelta); undefined
 * when the parent is not among them.
 *
 * @example
 * fullPrompt("a", 2, [9], [{ callId: "a", tokens: [1, 2, 3] }]) // [1, 2, 9]
 */
export function fullPrompt(prefixOf: string, prefixLen: number, suffix: readonly number[], recent: readonly PastCall[]): number[] | undefined {
  if (prefixOf === "") return [...suffix];
  const parent = recent.find((p) => p.callId === prefixOf);
  if (!parent || parent.tokens.length < prefixLen) return undefined;
  const out = new Array<number>(prefixLen + suffix.length);
  for (let i = 0; i < prefixLen; i++) out[i] = parent.tokens[i]!;
  for (let i = 0; i < suffix.length; i++) out[prefixLen + i] = suffix[i]!;
  return out;
}

/**
 * `prompt` followed by `completion`, as one Uint32Array (a memory copy, not an array of boxed
 * numbers): what a rollout keeps of a call to find the next call's prefix.
 *
 * @example
 * joinIds([1, 2], [3]) // Uint32Array [1, 2, 3]
 */
export function joinIds(prompt: TokenIds, completion: readonly number[]): Uint32Array {
  const out = new Uint32Array(prompt.length + completion.length);
  out.set(prompt);
  out.set(completion, prompt.length);
  return out;
}

/**
 * Whether `ids` is a prefix of `known` without comparing them: a view of the same memory from
 * the same start, no longer (the rollout's recent calls share their ids this way,
 * proxy/state/rollouts.ts).
 *
 * @example
 * const all = new Uint32Array([1, 2, 3]);
 * isViewPrefix(all.subarray(0, 2), all) // true
 */
export function isViewPrefix(ids: TokenIds, known: TokenIds | undefined): boolean {
  return known instanceof Uint32Array && ids instanceof Uint32Array && ids.buffer === known.buffer && ids.byteOffset === known.byteOffset && ids.length <= known.length;
}

/**
 * Whether `ids` begins with `prefix` (compared natively in blocks for long Uint32Arrays).
 *
 * @example
 * startsWithIds(new Uint32Array([1, 2, 3]), [1, 2]) // true
 */
export function startsWithIds(ids: TokenIds, prefix: TokenIds): boolean {
  return prefix.length <= ids.length && commonPrefix(ids, prefix) === prefix.length;
}
