/**
 * Prompt tokenization by segment, with a bounded cache: harness system prompts (tools
 * included) run to thousands of tokens and repeat on every call of a rollout.
 */
import type { SimTokenizer } from "./tokenizer.ts";

const cache = new Map<string, number[]>();
const CACHE_ENTRIES = 4096;
/** Bound on the characters held as keys (a bench sends 200 KB prompts). */
const CACHE_CHARS = 16 * 1024 * 1024;
let cachedChars = 0;

/**
 * Concatenated ids of each segment encoded on its own.
 *
 * @example
 * encodeSegments(tokenizer, ["<|im_start|>user\n", "Hello", "<|im_end|>\n"]); // [151644, 872, 198, 9707, 151645, 198]
 */
export function encodeSegments(tokenizer: SimTokenizer, segments: string[]): number[] {
  const ids: number[] = [];
  for (const segment of segments) {
    let encoded = cache.get(segment);
    if (!encoded) {
      encoded = tokenizer.encode(segment);
      if (segment.length >= 32 && segment.length <= CACHE_CHARS / 8) {
        while (cache.size > 0 && (cache.size >= CACHE_ENTRIES || cachedChars + segment.length > CACHE_CHARS)) {
          const oldest = cache.keys().next().value!;
          cachedChars -= oldest.length;
          cache.delete(oldest);
        }
        cache.set(segment, encoded);
        cachedChars += segment.length;
      }
    }
    for (const id of encoded) ids.push(id);
  }
  return ids;
}
