/** Logprob blocks both engines write alike: chat's `{content: [...]}` and completions' parallel lists. */
import { logprobEntry, tokenText, type TokenLogprob } from "../logprobs.ts";
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
 * Completions' `logprobs` of a token range: `tokens`, `token_logprobs`, `top_logprobs` (the
 * sampled token first) and `text_offset` from `offset0`; a null entry (the first prompt token
 * of an echo) has null logprobs; `asTokenIds` (vLLM's `return_tokens_as_token_ids`) names each
 * token `token_id:N`, and the offsets advance by those names as vLLM's do.
 *
 * @example
 * completionLogprobs(tokenizer, choice.logprobs, 0).token_logprobs
 */
export function completionLogprobs(tokenizer: SimTokenizer, entries: (TokenLogprob | null)[], offset0: number, ids?: number[], asTokenIds = false) {
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
      l ? Object.fromEntries([[name(l.id), l.logprob], ...l.top.slice(1).map((t) => [name(t.id), t.logprob] as const)]) : null,
    ),
  };
}
