/** Token id sequences compared from the start: the prompt deltas of the recorder, the alignment of samples. */

/** Ids compared per native step when both sides are Uint32Arrays. */
const BLOCK = 1024;

/**
 * Length of the longest common prefix of `a` and `b`.
 *
 * @example
 * commonPrefix([1, 2, 3], [1, 2, 4]) // 2
 */
export function commonPrefix(a: readonly number[] | Uint32Array, b: readonly number[] | Uint32Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  if (n >= BLOCK && a instanceof Uint32Array && b instanceof Uint32Array) {
    // Whole blocks by a native compare of their bytes (a 40k-id prompt: ~40 compares), then id by id.
    const bytesA = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
    const bytesB = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    // The whole common length in one compare first: a prompt that repeats or extends an earlier one.
    if (bytesA.compare(bytesB, 0, n * 4, 0, n * 4) === 0) return n;
    while (i + BLOCK <= n && bytesA.compare(bytesB, i * 4, (i + BLOCK) * 4, i * 4, (i + BLOCK) * 4) === 0) i += BLOCK;
  }
  while (i < n && a[i] === b[i]) i++;
  return i;
}
