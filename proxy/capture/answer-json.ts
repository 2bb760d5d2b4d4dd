/**
 * An engine's answer (a JSON body, or one stream event) parsed with its prompt token ids read
 * by a dedicated scanner instead of the generic JSON parser.
 *
 * In train mode every answer's first part carries the whole prompt's ids (vLLM's top-level
 * `prompt_token_ids`, SGLang's per choice or `sglext.input_ids`): 40k ids, ~250 KB of text, for
 * a 200 KB prompt. `JSON.parse` turns them into a 40k-element JS array, which the capture copies
 * and the harness's answer drops again. Here each such array is read straight into a
 * Uint32Array and replaced in the text by a placeholder before the rest (a few KB) is parsed;
 * the typed array is put back where the placeholder landed. Anything unexpected (an id that is
 * not a uint32, a placeholder that does not land where ids go) falls back to `JSON.parse` of
 * the whole text, so the result is always what `JSON.parse` gives, with typed arrays for the
 * lifted ids.
 */

/** Ids arrays shorter than this (in characters) are left to JSON.parse: not worth a pass. */
const MIN_LIFT_CHARS = 2048;
const KEYS = ['"prompt_token_ids"', '"input_ids"'] as const;

/** Whether `value` is a token-id array as an answer carries it (a JS array, or a lifted Uint32Array). */
export function isIdArray(value: unknown): value is readonly number[] | Uint32Array {
  return Array.isArray(value) || value instanceof Uint32Array;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * The ids of the array whose `[` is at `open`, and the index after its `]`; undefined for
 * anything but non-negative integers below 2^32 separated by commas (and whitespace).
 */
function scanIds(text: string, open: number): { ids: Uint32Array; end: number } | undefined {
  // At most one id per two characters ("1,").
  const out = new Uint32Array(((text.length - open) >> 1) + 1);
  let n = 0;
  let i = open + 1;
  const length = text.length;
  while (i < length && isSpace(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) === 0x5d) return { ids: out.subarray(0, 0), end: i + 1 };
  for (;;) {
    let value = 0;
    let digits = 0;
    let c = text.charCodeAt(i);
    while (c >= 0x30 && c <= 0x39) {
      value = value * 10 + (c - 0x30);
      digits++;
      c = text.charCodeAt(++i);
    }
    // No digits, a leading zero before more digits, or too large: not an id the way engines write it.
    if (digits === 0 || digits > 10 || value > 0xffffffff || (digits > 1 && text.charCodeAt(i - digits) === 0x30)) return undefined;
    out[n++] = value;
    while (isSpace(c)) c = text.charCodeAt(++i);
    if (c === 0x2c) {
      i++;
      while (i < length && isSpace(text.charCodeAt(i))) i++;
      continue;
    }
    if (c === 0x5d) return { ids: out.slice(0, n), end: i + 1 };
    return undefined;
  }
}

/** Whether the key string starting at `quote` is a member name (after `{` or `,`), not text inside a string. */
function isMemberKey(text: string, quote: number): boolean {
  let k = quote - 1;
  while (k >= 0 && isSpace(text.charCodeAt(k))) k--;
  const c = text.charCodeAt(k);
  // Inside a JSON string a quote is always escaped (`\"`), so `{"` / `,"` only occur as structure.
  return c === 0x7b || c === 0x2c;
}

/** Puts each lifted array back where its placeholder (its index) landed; the number of placements. */
function restore(body: any, lifted: Uint32Array[]): number {
  let placed = 0;
  const at = (holder: any, key: string) => {
    const v = holder?.[key];
    if (typeof v === "number" && Number.isInteger(v) && v >= 0 && v < lifted.length) {
      holder[key] = lifted[v];
      placed++;
    }
  };
  if (body === null || typeof body !== "object") return 0;
  at(body, "prompt_token_ids");
  if (Array.isArray(body.choices)) for (const choice of body.choices) if (choice && typeof choice === "object") at(choice, "prompt_token_ids");
  if (body.sglext && typeof body.sglext === "object") at(body.sglext, "input_ids");
  return placed;
}

/**
 * `JSON.parse(text)`, with prompt-id arrays (`prompt_token_ids`, `sglext.input_ids`) of 2048
 * characters or more as Uint32Arrays, unless `wants` says the harness asked for ids (the
 * answer keeps them then, as JSON). Throws what `JSON.parse` throws.
 *
 * @example
 * const answer = parseAnswer(text); // a vLLM answer to a 200 KB prompt
 * answer.prompt_token_ids instanceof Uint32Array // true
 */
export function parseAnswer(text: string, wants?: { tokenIds: boolean; sglext?: boolean }): any {
  // A harness that asked for ids gets them as JSON arrays: nothing is lifted.
  if (text.length < MIN_LIFT_CHARS || wants?.tokenIds || wants?.sglext) return JSON.parse(text);
  // Where each key names an array long enough to lift, in text order.
  const found: { open: number; quote: number }[] = [];
  for (const key of KEYS) {
    for (let quote = text.indexOf(key); quote >= 0; quote = text.indexOf(key, quote + key.length)) {
      if (!isMemberKey(text, quote)) continue;
      let i = quote + key.length;
      while (isSpace(text.charCodeAt(i))) i++;
      if (text.charCodeAt(i) !== 0x3a) continue;
      i++;
      while (isSpace(text.charCodeAt(i))) i++;
      if (text.charCodeAt(i) !== 0x5b) continue;
      const close = text.indexOf("]", i);
      if (close >= 0 && close - i >= MIN_LIFT_CHARS) found.push({ open: i, quote });
    }
  }
  found.sort((a, b) => a.open - b.open);
  const lifted: Uint32Array[] = [];
  const parts: string[] = [];
  let copied = 0;
  for (const { open, quote } of found) {
    if (quote < copied) continue;
    const scanned = scanIds(text, open);
    if (!scanned) return JSON.parse(text);
    parts.push(text.slice(copied, open), String(lifted.length));
    lifted.push(scanned.ids);
    copied = scanned.end;
  }
  if (lifted.length === 0) return JSON.parse(text);
  parts.push(text.slice(copied));
  const body = JSON.parse(parts.join(""));
  if (restore(body, lifted) !== lifted.length) return JSON.parse(text);
  return body;
}
