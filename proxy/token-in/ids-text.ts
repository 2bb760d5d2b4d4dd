/**
 * Token ids written into JSON as text already made for them: a call's prompt ids are written
 * once (JSON.stringify of the array) and spliced into the engine request and the Chat answer,
 * instead of serialised again for each (JSON.rawJSON takes only primitives, not arrays).
 */
const SENTINEL = `forge-ids-${crypto.randomUUID()}`;

/** The value to put where the ids go before JSON.stringify. */
export const IDS_PLACEHOLDER: string = SENTINEL;

/**
 * `json` (a JSON.stringify result with IDS_PLACEHOLDER where the ids go) with `idsText` there.
 *
 * @example
 * withIdsText(JSON.stringify({ prompt: IDS_PLACEHOLDER }), "[1,2]") // '{"prompt":[1,2]}'
 */
export function withIdsText(json: string, idsText: string): string {
  const quoted = `"${SENTINEL}"`;
  const at = json.indexOf(quoted);
  if (at < 0) throw new Error("withIdsText: the JSON has no ids placeholder");
  return json.slice(0, at) + idsText + json.slice(at + quoted.length);
}
