/**
 * Token texts without the tokenizer's decode: each token's text, decoded once per tokenizer,
 * where its bytes are whole UTF-8 characters (a byte-level token may end inside one: an emoji,
 * a rare CJK character). The derender's detokenizer reads them token by token; `decodeIds`
 * joins them for a sequence of whole tokens, which is what the tokenizer's decode gives for it
 * (`decode(ids)` with special tokens kept), and falls back to that decode otherwise.
 */
import type { Tokenizer } from "./tokenizer.ts";

/** Each tokenizer's tokens' text, for tokens whose bytes are whole UTF-8 characters (null: not whole). */
const wholeTexts = new WeakMap<Tokenizer, Map<number, string | null>>();

// A token that is U+FEFF keeps it (TextDecoder drops a leading byte-order mark by default).
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

export function wholeTextsOf(tokenizer: Tokenizer): Map<number, string | null> {
  let texts = wholeTexts.get(tokenizer);
  if (!texts) wholeTexts.set(tokenizer, (texts = new Map()));
  return texts;
}

/** `id`'s text from `texts` (the tokenizer's, looked up once per answer), decoded the first time; undefined when not whole. */
export function wholeText(tokenizer: Tokenizer, texts: Map<number, string | null>, id: number): string | undefined {
  let text = texts.get(id);
  if (text === undefined) {
    const bytes = tokenizer.tokenBytes(id);
    text = completeUtf8(bytes) ? decoder.decode(new Uint8Array(bytes)) : null;
    texts.set(id, text);
  }
  return text ?? undefined;
}

/** Whether bytes end at a UTF-8 character boundary (a held partial character completes). */
export function completeUtf8(bytes: number[]): boolean {
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const b = bytes[bytes.length - back]!;
    if ((b & 0xc0) === 0x80) continue;
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need <= back;
  }
  return bytes.length === 0;
}

/**
 * `tokenizer.decode(ids)` (special tokens kept), from the cached token texts when every token
 * ends on a character boundary: then no character spans two tokens, and the bytes that do not
 * form a character are the same maximal pieces (each one U+FFFD) together as apart.
 *
 * @example
 * decodeIds(tokenizer, tokenizer.encode("<think>\nhi")) // "<think>\nhi"
 */
export function decodeIds(tokenizer: Tokenizer, ids: readonly number[]): string {
  const texts = wholeTextsOf(tokenizer);
  let text = "";
  for (const id of ids) {
    const whole = wholeText(tokenizer, texts, id);
    if (whole === undefined) return tokenizer.decode([...ids]);
    text += whole;
  }
  return text;
}
