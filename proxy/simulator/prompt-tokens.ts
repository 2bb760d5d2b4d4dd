/**
 * Prompt tokenization by segment, with a bounded cache: harness system prompts (tools
 * included) run to thousands of tokens and repeat on every call of a rollout.
 */
import type { SimTokenizer } from "./tokenizer.ts";

const cache = new Map<string, number[]>();
const CACHE_ENTRIES = 4096;

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
      if (segment.length >= 32) {
        if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
        cache.set(segment, encoded);
      }
    }
    for (const id of encoded) ids.push(id);
  }
  return ids;
}
