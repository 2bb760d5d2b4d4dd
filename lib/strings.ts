/**
 * Strings a long-lived cache may keep.
 */

/**
 * A string of its own, every code unit kept: JavaScriptCore's slices share their source's
 * characters, so a cache keeping a slice keeps the whole text it was cut from (a prompt, a
 * rendered window) alive. A JSON round trip copies the characters, lone surrogates included.
 *
 * @example
 * ownCopy(hugeText.slice(0, 10)) // the same 10 characters, not holding hugeText
 */
export function ownCopy(text: string): string {
  return JSON.parse(JSON.stringify(text));
}
