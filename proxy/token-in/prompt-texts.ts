/**
 * A prompt's ids as JSON text, continued from the chain's last call (docs/performance.md, issue
 * 32): a call's prompt is its chain's tokens (the last prompt and its completion) and what the
 * template appends, and the last prompt's text was written for that call's engine request; so
 * the text of the chain's last prompt is kept, keyed by the chain's tokens, and the next call
 * writes only the ids after it instead of all of them (JSON.stringify of ~8k ids is ~40 µs).
 *
 * Shared by the shard's rollouts and bounded by characters (MAX_CHARS: ~4 MiB of text, and the
 * chains' token arrays it keys by, ~3 MiB at most): a shard whose rollouts in flight hold more
 * misses, and writes the whole text as before. An entry goes when its chain moves on.
 */
import { idsFrom, type TokenIds } from "../../records/index.ts";
import { WeighedMap } from "../../lib/index.ts";
import { idArray } from "./engine-request.ts";

const MAX_CHARS = 4 * 1024 * 1024;
const held = new WeighedMap<TokenIds, { text: string; length: number }>(MAX_CHARS, MAX_CHARS / 4);

/**
 * The JSON text of `prompt` (`JSON.stringify(prompt)`), from the text kept for `base` (the
 * chain's tokens, which `prompt` begins with) when there is one.
 *
 * @example
 * chainPromptText([1, 2, 3], chain.tokens) // "[1,2,3]", written from "[1,2]" when that was kept for chain.tokens
 */
export function chainPromptText(prompt: TokenIds, base: TokenIds | undefined): string {
  const kept = base === undefined ? undefined : held.get(base);
  if (!kept || kept.length > prompt.length) return JSON.stringify(idArray(prompt));
  if (kept.length === prompt.length) return kept.text;
  const rest = JSON.stringify(idsFrom(prompt, kept.length));
  return kept.length === 0 ? rest : `${kept.text.slice(0, -1)},${rest.slice(1)}`;
}

/**
 * Keeps `text`, the JSON text of `tokens`' first `length` ids, for the chain's next call; drops
 * the text kept for `previous` (the tokens the chain had before).
 *
 * @example
 * keepPromptText(chainTokens, plan.prompt.length, promptText, plan.chain?.tokens);
 */
export function keepPromptText(tokens: TokenIds, length: number, text: string, previous: TokenIds | undefined): void {
  if (previous !== undefined) held.delete(previous);
  held.set(tokens, { text, length }, text.length);
}
