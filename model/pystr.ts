/**
 * Python's string methods where they differ from JavaScript's: what counts as whitespace for
 * `str.strip()` (Python's `str.isspace`: JavaScript's `\s` without U+FEFF, with U+001C–U+001F
 * and U+0085), and `strip(chars)` with a set of characters.
 */
const PY_WS = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

/** Python's `str.isspace()` for one character. */
export const isPySpace = (ch: string): boolean => PY_WS.test(ch);

/** Python's `str.strip()`, `lstrip()`, `rstrip()` without arguments (linear, no regex backtracking). */
export function pyStrip(text: string, side: "both" | "start" | "end" = "both"): string {
  let a = 0;
  let b = text.length;
  if (side !== "end") while (a < b && PY_WS.test(text[a]!)) a++;
  if (side !== "start") while (b > a && PY_WS.test(text[b - 1]!)) b--;
  return a === 0 && b === text.length ? text : text.slice(a, b);
}
export const pyLstrip = (text: string): string => pyStrip(text, "start");
export const pyRstrip = (text: string): string => pyStrip(text, "end");

/**
 * Python's `str.strip(chars)` / `lstrip(chars)` / `rstrip(chars)`: remove any of `chars` from the ends.
 *
 * @example
 * stripChars("\n\nhi\n", "\n"); // "hi"
 */
export function stripChars(text: string, chars: string, side: "both" | "start" | "end" = "both"): string {
  let a = 0;
  let b = text.length;
  if (side !== "end") while (a < b && chars.includes(text[a]!)) a++;
  if (side !== "start") while (b > a && chars.includes(text[b - 1]!)) b--;
  return text.slice(a, b);
}
