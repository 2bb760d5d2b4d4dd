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
  const at = placeholderAt(json, "withIdsText");
  return json.slice(0, at) + idsText + json.slice(at + QUOTED.length);
}

const QUOTED = `"${SENTINEL}"`;
const encoder = new TextEncoder();

function placeholderAt(json: string, caller: string): number {
  const at = json.indexOf(QUOTED);
  if (at < 0) throw new Error(`${caller}: the JSON has no ids placeholder`);
  return at;
}

/**
 * `withIdsText(json, idsText)` as UTF-8 bytes, the ids' text written straight into them: no
 * string of the whole body is made first (the ids are most of an engine request's bytes).
 * `idsText` is a JSON array of ids, ASCII: one byte a character.
 *
 * @example
 * new TextDecoder().decode(withIdsBytes(JSON.stringify({ prompt: IDS_PLACEHOLDER }), "[1,2]")) // '{"prompt":[1,2]}'
 */
export function withIdsBytes(json: string, idsText: string): Uint8Array {
  const at = placeholderAt(json, "withIdsBytes");
  const head = encoder.encode(json.slice(0, at));
  const tail = encoder.encode(json.slice(at + QUOTED.length));
  const out = new Uint8Array(head.length + idsText.length + tail.length);
  out.set(head);
  const { read, written } = encoder.encodeInto(idsText, out.subarray(head.length, head.length + idsText.length));
  if (read !== idsText.length || written !== idsText.length) throw new Error("withIdsBytes: the ids' text is not ASCII");
  out.set(tail, head.length + idsText.length);
  return out;
}
