/**
 * Prompt deltas: a prompt that shares a prefix with one of the rollout's recent calls is
 * stored as (`prefix_of`, `prefix_len`, suffix). The full prompt of a call is
 * `tokens(prefix_of)[0:prefix_len] ++ prompt_token_ids`, tokens(c) = prompt(c) ++ completion(c).
 */

export interface PastCall {
  callId: string;
  /** Full prompt ++ completion of that call. */
  tokens: number[];
}

export interface PromptDelta {
  prefixOf: string;
  prefixLen: number;
  suffix: number[];
}

/**
 * Picks the recent call sharing the longest common prefix with `prompt` (latest wins a tie).
 *
 * @example
 * promptDelta([1, 2, 3, 4], [{ callId: "a", tokens: [1, 2, 3] }]) // { prefixOf: "a", prefixLen: 3, suffix: [4] }
 */
export function promptDelta(prompt: number[], recent: readonly PastCall[]): PromptDelta {
  let best: PastCall | undefined;
  let bestLen = 0;
  for (let i = recent.length - 1; i >= 0; i--) {
    const past = recent[i]!;
    const len = commonPrefix(prompt, past.tokens);
    if (len > bestLen) {
      best = past;
      bestLen = len;
    }
  }
  if (!best) return { prefixOf: "", prefixLen: 0, suffix: prompt };
  return { prefixOf: best.callId, prefixLen: bestLen, suffix: prompt.slice(bestLen) };
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
  return parent.tokens.slice(0, prefixLen).concat(suffix);
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
