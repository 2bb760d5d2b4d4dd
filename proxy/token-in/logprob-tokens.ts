/**
 * The token texts of a sampled position's logprob entries as vLLM 0.33.0 writes them
 * (`vllm/v1/engine/logprobs.py`): each id decoded alone (`convert_ids_list_to_tokens`), and a
 * text that ends in U+FFFD (a byte-level token that cuts a UTF-8 character) corrected with up
 * to four sampled tokens before it (`_verify_tokens`, `_correct_decoded_token`): the token that
 * completes the character gets its whole text, the ones before it "". The chat route writes each
 * entry's `bytes` from that text. Byte-level BPE tokenizers (the models model/ serves): vLLM's
 * restoring of a stripped leading space applies to SentencePiece (Metaspace) tokenizers only.
 */

const REPLACEMENT = "\ufffd";
/** How many sampled tokens before a position vLLM reads (`_get_sampled_context_ids`: enough for any UTF-8 character). */
const LOGPROB_CONTEXT = 4;

type Decode = (ids: number[]) => string;

/**
 * The text vLLM gives `id` at a position after the sampled ids `context` (the answer's, oldest
 * first; only the last four are read).
 *
 * @example
 * logprobTokenText(decode, 222, [20074, 11162, 99]) // " 🦀" (the token that completes the emoji)
 */
export function logprobTokenText(decode: Decode, id: number, context: readonly number[]): string {
  const text = decode([id]);
  return text.endsWith(REPLACEMENT) ? correctedText(decode, id, context) : text;
}

/** `_correct_decoded_token`: the text `id` completes after the shortest context that completes it, or "". */
function correctedText(decode: Decode, id: number, context: readonly number[]): string {
  const most = Math.min(context.length, LOGPROB_CONTEXT);
  for (let n = 1; n <= most; n++) {
    const before = context.slice(context.length - n);
    const whole = decode([...before, id]);
    if (whole.endsWith(REPLACEMENT)) continue;
    // Context tokens that cut the same character gave "" when they came: their text is this token's.
    let clean = before.length;
    while (clean > 0 && decode([before[clean - 1]!]).endsWith(REPLACEMENT)) clean--;
    const prefix = clean > 0 ? decode(before.slice(0, clean)) : "";
    if (whole.startsWith(prefix)) return whole.slice(prefix.length);
    // A tokenizer that normalizes: past the longest common prefix, in characters as Python counts them.
    const a = Array.from(prefix);
    const b = Array.from(whole);
    let common = 0;
    while (common < a.length && common < b.length && a[common] === b[common]) common++;
    return b.slice(common).join("");
  }
  return "";
}

/** The last `LOGPROB_CONTEXT` ids of `before` then `ids`: the context after them. */
export function contextAfter(before: readonly number[], ids: readonly number[]): number[] {
  return [...before.slice(-LOGPROB_CONTEXT), ...ids.slice(-LOGPROB_CONTEXT)].slice(-LOGPROB_CONTEXT);
}
