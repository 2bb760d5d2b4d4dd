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

/** Answers shorter than this (in characters) are left to JSON.parse: nothing in them is worth a pass. */
const MIN_LIFT_CHARS = 2048;
const KEYS = ['"prompt_token_ids"', '"input_ids"'] as const;
/** The end every key of KEYS shares: what the pass searches for. */
const KEY_END = '_ids"';

/** Whether `value` is a token-id array as an answer carries it (a JS array, or a lifted Uint32Array). */
export function isIdArray(value: unknown): value is readonly number[] | Uint32Array {
  return Array.isArray(value) || value instanceof Uint32Array;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * The last prompt-id array a rollout's answer carried: its text (from `[` to `]`), its ids and
 * where each id ends in the text. The next call's prompt starts with the same ids, so its text
 * starts with the same characters: that much is compared (a native compare), not parsed again.
 */
export type IdsMemo = { text?: string; ids?: Uint32Array; ends?: Uint32Array };

/** Compared per step when looking for where two id texts part (native compares of this size). */
const COMPARE_BLOCK = 4096;

/** Length of the common prefix of `text` from `at` and `prev`. */
function commonChars(text: string, at: number, prev: string): number {
  // The same array again (a rollout's calls with one prompt): one native compare.
  if (text.startsWith(prev, at)) return prev.length;
  const max = Math.min(prev.length, text.length - at);
  let lo = 0;
  // Block by block while whole blocks agree, then halving inside the first block that differs.
  while (lo + COMPARE_BLOCK <= max && text.startsWith(prev.substring(lo, lo + COMPARE_BLOCK), at + lo)) lo += COMPARE_BLOCK;
  let hi = Math.min(max, lo + COMPARE_BLOCK);
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (text.startsWith(prev.substring(lo, mid), at + lo)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * The ids of the array whose `[` is at `open`, and the index after its `]`; undefined for
 * anything but non-negative integers below 2^32 separated by commas (and whitespace).
 * Engines write ids compactly (`[1,2,3]`): that form is read by one tight loop, after the
 * part it shares with `memo`'s array (taken from there); anything else (spaces, newlines) by a
 * slower loop. `memo` is updated to this array.
 */
function scanIds(text: string, open: number, memo?: IdsMemo): { ids: Uint32Array; end: number } | undefined {
  let reused = 0;
  let i = open + 1;
  const prev = memo?.text;
  if (prev && memo.ids && memo.ends) {
    const common = commonChars(text, open, prev);
    if (common === prev.length) {
      // The same array again.
      return { ids: memo.ids, end: open + prev.length };
    }
    // Ids followed by a comma inside the common part are the same ids.
    const ends = memo.ends;
    let lo = 0;
    let hi = Math.min(ends.length - 1, memo.ids.length - 1);
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ends[mid]! < common) lo = mid + 1;
      else hi = mid;
    }
    reused = lo;
    if (reused > 0) i = open + ends[reused - 1]! + 1;
  }
  // Sized for four characters per id (engines' ids run 5-7 with the comma), grown when short.
  let capacity = reused + Math.max(1024, (text.length - i) >> 2);
  let out = new Uint32Array(capacity);
  let outEnds = new Uint32Array(capacity);
  if (reused > 0) {
    out.set(memo!.ids!.subarray(0, reused));
    outEnds.set(memo!.ends!.subarray(0, reused));
  }
  let n = reused;
  let value = 0;
  let digits = 0;
  for (;;) {
    const c = text.charCodeAt(i++);
    if (c >= 0x30 && c <= 0x39) {
      // A leading zero before more digits is not JSON; 11 digits are past any uint32.
      if (digits === 1 && value === 0) return undefined;
      value = value * 10 + (c - 0x30);
      digits++;
    } else if ((c === 0x2c || c === 0x5d) && digits > 0 && digits <= 10 && value <= 0xffffffff) {
      if (n === capacity) {
        capacity *= 2;
        const grown = new Uint32Array(capacity);
        grown.set(out);
        out = grown;
        const grownEnds = new Uint32Array(capacity);
        grownEnds.set(outEnds);
        outEnds = grownEnds;
      }
      outEnds[n] = i - 1 - open;
      out[n++] = value;
      if (c === 0x5d) break;
      value = 0;
      digits = 0;
    } else if (c === 0x5d && digits === 0 && n === 0) {
      break;
    } else if (isSpace(c)) {
      const spaced = scanSpaced(text, open, new Uint32Array(((text.length - open) >> 1) + 1));
      if (memo) memo.text = undefined; // spaced arrays are not remembered
      return spaced;
    } else {
      return undefined;
    }
  }
  // Copies of their used part: the buffers were sized for the worst case (one id per two characters).
  const ids = out.slice(0, n);
  if (memo) {
    memo.text = text.substring(open, i);
    memo.ids = ids;
    memo.ends = outEnds.slice(0, n);
  }
  return { ids, end: i };
}

/** scanIds for arrays with whitespace between their elements. */
function scanSpaced(text: string, open: number, out: Uint32Array): { ids: Uint32Array; end: number } | undefined {
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
    if (digits === 0 || digits > 10 || value > 0xffffffff || (digits > 1 && text.charCodeAt(i - digits) === 0x30)) return undefined;
    out[n++] = value;
    while (isSpace(c)) c = text.charCodeAt(++i);
    if (c === 0x2c) {
      i++;
      while (i < length && isSpace(text.charCodeAt(i))) i++;
      continue;
    }
    if (c === 0x5d) return { ids: out.subarray(0, n), end: i + 1 };
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
 * `JSON.parse(text)`, with prompt-id arrays (`prompt_token_ids`, `sglext.input_ids`) as
 * Uint32Arrays in answers of 2048 characters or more, unless `wants` says the harness asked for ids (the
 * answer keeps them then, as JSON). `memo` is the rollout's last id array (`IdsMemo`): the part
 * of this one that repeats it is not parsed again. Throws what `JSON.parse` throws.
 *
 * @example
 * const answer = parseAnswer(text); // a vLLM answer to a 200 KB prompt
 * answer.prompt_token_ids instanceof Uint32Array // true
 */
export function parseAnswer(text: string, wants?: { tokenIds: boolean; sglext?: boolean }, memo?: IdsMemo): any {
  // A harness that asked for ids gets them as JSON arrays: nothing is lifted.
  if (text.length < MIN_LIFT_CHARS || wants?.tokenIds || wants?.sglext) return JSON.parse(text);
  // One pass in text order over the end both keys share (`_ids"`): each occurrence is checked
  // for either key, an id array is lifted and the search goes on after it (never through it
  // again). One search, not one per key: a key that is not there (SGLang's `input_ids` in a
  // vLLM answer) would otherwise be searched for through the whole text, ids included.
  const lifted: Uint32Array[] = [];
  const parts: string[] = [];
  let copied = 0;
  let at = text.indexOf(KEY_END);
  while (at >= 0) {
    let resume = at + KEY_END.length;
    const key = KEYS.find((k) => resume >= k.length && text.startsWith(k, resume - k.length));
    const quote = key === undefined ? -1 : resume - key.length;
    if (key !== undefined && isMemberKey(text, quote)) {
      let i = resume;
      while (isSpace(text.charCodeAt(i))) i++;
      if (text.charCodeAt(i) === 0x3a) {
        i++;
        while (isSpace(text.charCodeAt(i))) i++;
        if (text.charCodeAt(i) === 0x5b) {
          const scanned = scanIds(text, i, memo);
          if (!scanned) return JSON.parse(text);
          parts.push(text.slice(copied, i), String(lifted.length));
          lifted.push(scanned.ids);
          copied = scanned.end;
          resume = scanned.end;
        }
      }
    }
    at = text.indexOf(KEY_END, resume);
  }
  if (lifted.length === 0) return JSON.parse(text);
  parts.push(text.slice(copied));
  const body = JSON.parse(parts.join(""));
  if (restore(body, lifted) !== lifted.length) return JSON.parse(text);
  return body;
}
