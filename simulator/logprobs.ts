/**
 * The "sampled" logprobs: pseudo-random negatives derived from the seed, the prompt and the
 * position, so the same request gets the same numbers. Top alternatives share the probability
 * mass the sampled token leaves, so they form a valid (sub-)distribution.
 */
import { mix, unit } from "./hash.ts";
import type { SimTokenizer } from "./model.ts";

export interface TokenLogprob {
  id: number;
  logprob: number;
  /** Sampled token first, then alternatives, `count` entries in all. */
  top: { id: number; logprob: number }[];
}

const VOCAB_TEXT_TOKENS = 151643;

/**
 * Logprobs of each sampled token.
 *
 * @example
 * sampledLogprobs([9707, 151645], 42, 3).map((t) => t.logprob); // two negative numbers, stable per seed/context
 */
export function sampledLogprobs(ids: readonly number[], context: number, topCount: number): TokenLogprob[] {
  return ids.map((id, position) => {
    const h = mix(context, position, id);
    const u = unit(h);
    // Most tokens are near-certain, a few are real choices: the shape of a sampled LLM output.
    const logprob = -(u ** 10 * 5 + 1e-4);
    const top: { id: number; logprob: number }[] = [];
    if (topCount > 0) {
      top.push({ id, logprob });
      let rest = 1 - Math.exp(logprob);
      for (let k = 1; k < topCount; k++) {
        const alt = mix(h, k) % VOCAB_TEXT_TOKENS;
        const share = rest * 0.6;
        rest -= share;
        top.push({ id: alt === id ? (alt + 1) % VOCAB_TEXT_TOKENS : alt, logprob: Math.log(Math.max(share, 1e-12)) });
      }
    }
    return { id, logprob, top };
  });
}

/**
 * A position's candidates as vLLM's engine hands them to its serving layer when asked for `k`
 * top logprobs (its Logprobs dict): the sampled token first, then the k most likely tokens but
 * it, so k entries when the sampled token is one of the k most likely and k + 1 when not. `l`
 * holds k alternatives (`sampledLogprobs` with k + 1). vLLM's completions route writes them all
 * (`completion_top_logprobs_limit`: the first k + 1), its generate route too, its chat route the
 * first k (the simulator's chat answers take `sampledLogprobs` with k, the same k).
 *
 * @example
 * vllmCandidates(sampledLogprobs([9707], 42, 3)[0]!, 2).length // 2 or 3
 */
export function vllmCandidates(l: TokenLogprob, k: number): TokenLogprob["top"] {
  if (k <= 0 || l.top.length <= 1) return [{ id: l.id, logprob: l.logprob }];
  const kth = l.top[k];
  return kth !== undefined && l.logprob >= kth.logprob ? l.top.slice(0, k) : l.top.slice(0, k + 1);
}

const tokenTextCache = new Map<number, string>();

/** `{token, logprob, bytes, top_logprobs}` as OpenAI/vLLM write a chat logprob entry. */
export function logprobEntry(tokenizer: SimTokenizer, l: TokenLogprob) {
  const entry = (id: number, logprob: number) => ({ token: tokenText(tokenizer, id), logprob, bytes: tokenizer.tokenBytes(id) });
  return { ...entry(l.id, l.logprob), top_logprobs: l.top.map((t) => entry(t.id, t.logprob)) };
}

export function tokenText(tokenizer: SimTokenizer, id: number): string {
  let text = tokenTextCache.get(id);
  if (text === undefined) {
    text = tokenizer.decode([id]);
    if (tokenTextCache.size < 200_000) tokenTextCache.set(id, text);
  }
  return text;
}
