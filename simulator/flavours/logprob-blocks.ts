/** Logprob blocks both engines write alike: chat's `{content: [...]}` and completions' parallel lists. */
import { logprobEntry, tokenText, vllmCandidates, type TokenLogprob } from "../logprobs.ts";
import { IM_END, type SimTokenizer } from "../model.ts";

/**
 * Chat's `logprobs` of a token range.
 *
 * @example
 * chatLogprobs(tokenizer, choice.logprobs.slice(0, 3)) // { content: [{ token, logprob, bytes, top_logprobs }, ...] }
 */
export function chatLogprobs(tokenizer: SimTokenizer, logprobs: TokenLogprob[]) {
  return { content: logprobs.map((l) => logprobEntry(tokenizer, l)) };
}

/**
 * Which of a position's candidates (`sampledLogprobs` with k + 1: the sampled token, then k
 * alternatives) an engine's completions route writes for `logprobs: k`: vLLM's dict (the
 * sampled token and the k most likely but it, `vllmCandidates`) or the simulator's SGLang
 * answer (the sampled token and k − 1 alternatives, k entries; at least the sampled one).
 */
export type CompletionTop = { engine: "vllm" | "sglang"; k: number };

const candidatesOf = (l: TokenLogprob, top: CompletionTop): TokenLogprob["top"] =>
  top.engine === "vllm" ? vllmCandidates(l, top.k) : [{ id: l.id, logprob: l.logprob }, ...l.top.slice(1, top.k)];

/**
 * Completions' `logprobs` of a token range: `tokens`, `token_logprobs`, `top_logprobs` (the
 * sampled token first, `top` saying which candidates) and `text_offset` from `offset0`; a null
 * entry (the first prompt token of an echo) has null logprobs; `asTokenIds` (vLLM's
 * `return_tokens_as_token_ids`) names each token `token_id:N`, and the offsets advance by those
 * names as vLLM's do.
 *
 * @example
 * completionLogprobs(tokenizer, choice.logprobs, 0, { engine: "vllm", k: 0 }).token_logprobs
 */
export function completionLogprobs(tokenizer: SimTokenizer, entries: (TokenLogprob | null)[], offset0: number, top: CompletionTop, ids?: number[], asTokenIds = false) {
  const offsets: number[] = [];
  let offset = offset0;
  const tokens: string[] = [];
  const name = (id: number) => (asTokenIds ? `token_id:${id}` : tokenText(tokenizer, id));
  entries.forEach((l, i) => {
    const id = l?.id ?? ids?.[i] ?? 0;
    offsets.push(offset);
    const text = name(id);
    tokens.push(text);
    offset += id === IM_END && !asTokenIds ? 0 : text.length;
  });
  return {
    text_offset: offsets,
    token_logprobs: entries.map((l) => (l ? l.logprob : null)),
    tokens,
    top_logprobs: entries.map((l) =>
      l ? Object.fromEntries(candidatesOf(l, top).map((t) => [name(t.id), t.logprob] as const)) : null,
    ),
  };
}
