/** The byte-level BPE alphabet of GPT-2-style tokenizers (Qwen3's among them). */

/**
 * GPT-2's bytes_to_unicode, inverted: the byte-level BPE alphabet back to bytes.
 *
 * @example
 * byteDecoder().get("Ġ") // 32 (a space)
 */
export function byteDecoder(): Map<string, number> {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const map = new Map<string, number>();
  for (const b of printable) map.set(String.fromCharCode(b), b);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    if (!printable.includes(b)) map.set(String.fromCharCode(256 + extra++), b);
  }
  return map;
}
