/**
 * Token alignment between what a sample holds and a new call's prompt (docs/trajectories.md).
 */

export type RealignRule = {
  thinkOpen: number;
  thinkClose: number;
  thinkTrailing: ReadonlySet<number>;
  /** Index in `held` where the response starts; stripped blocks must lie in the response. */
  responseStart: number;
  /** response_mask of the held sample; a stripped block's tokens must all be sampled (1). */
  mask: readonly number[];
};

/**
 * Whether `prompt` equals `held` with some reasoning blocks removed, followed by new tokens.
 * Returns where the new tokens start in `prompt` and how many held tokens were stripped, or
 * undefined when anything else differs (a fork).
 *
 * @example
 * // held: [1, <think>, 7, </think>, 9], prompt: [1, 9, 4] → { consumed: 2, stripped: 3 }
 * matchWithStrippedThink(held, prompt, rule);
 */
export function matchWithStrippedThink(
  held: readonly number[],
  prompt: readonly number[],
  rule: RealignRule,
): { consumed: number; stripped: number } | undefined {
  let i = 0;
  let j = 0;
  let stripped = 0;
  while (i < held.length) {
    if (j < prompt.length && held[i] === prompt[j]) {
      i++;
      j++;
      continue;
    }
    if (held[i] !== rule.thinkOpen || i < rule.responseStart) return undefined;
    let close = i + 1;
    while (close < held.length && held[close] !== rule.thinkClose) close++;
    if (close >= held.length) return undefined;
    // Only the policy's own reasoning may disappear: every stripped token must have been sampled.
    for (let k = i; k <= close; k++) if (rule.mask[k - rule.responseStart] !== 1) return undefined;
    let end = close + 1;
    while (end < held.length && rule.thinkTrailing.has(held[end]!) && !(j < prompt.length && held[end] === prompt[j])) end++;
    stripped += end - i;
    i = end;
  }
  return { consumed: j, stripped };
}
