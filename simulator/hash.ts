/**
 * Small deterministic hashes: everything the simulator "samples" (which variant a conversation
 * plays, logprobs, tool-call ids) is a pure function of the seed and the request, so a run can
 * be replayed exactly.
 */

/** 32-bit FNV-1a over a string, folded with a starting state. */
export function hashString(text: string, state = 0x811c9dc5): number {
  let h = state >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** Mixes integers into one 32-bit state (murmur3's finaliser after each word). */
export function mix(...words: number[]): number {
  let h = 0x9e3779b9;
  for (const word of words) {
    h = Math.imul(h ^ (word >>> 0), 0x85ebca6b) >>> 0;
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35) >>> 0;
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** Hash of a token id list (order-sensitive). */
export function hashIds(ids: readonly number[], state = 0x811c9dc5): number {
  let h = state >>> 0;
  for (const id of ids) h = mix(h, id);
  return h;
}

/** A number in [0, 1) from a 32-bit hash. */
export function unit(hash: number): number {
  return (hash >>> 0) / 0x1_0000_0000;
}

/**
 * Deterministic id such as `call_…` (24 base-62 characters from the given words).
 *
 * @example
 * hashId("call_", 42, 7); // "call_…" — the same every time
 */
export function hashId(prefix: string, ...words: number[]): string {
  const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  let out = prefix;
  let state = mix(...words);
  for (let i = 0; i < 24; i++) {
    state = mix(state, i);
    out += alphabet[state % 62];
  }
  return out;
}
