/**
 * Adds top-level fields to a JSON object's bytes without parsing and re-serialising the whole
 * body: in train mode the upstream request is the harness's body plus `return_token_ids`,
 * `logprobs` and `stream_options`, and re-serialising a 4 MB screenshot request for three
 * fields costs more than the rest of the call.
 */
import { concatBytes } from "../../lib/index.ts";

const encoder = new TextEncoder();
const CLOSE_BRACE = 0x7d;
const OPEN_BRACE = 0x7b;

/**
 * `json` (the bytes of a JSON object, already parsed as `parsed`) with `fields` added after its
 * last member, or undefined when that cannot be done by appending: a field already present
 * (replacing it needs a real re-serialisation; duplicate keys are read differently by different
 * servers) or bytes that do not end with the object's `}`.
 *
 * @example
 * appendFields(new TextEncoder().encode('{"a":1}'), { a: 1 }, { b: true }) // bytes of {"a":1,"b":true}
 */
export function appendFields(json: Uint8Array, parsed: Record<string, unknown>, fields: Record<string, unknown>): Uint8Array | undefined {
  const parts = appendedParts(json, parsed, fields);
  if (!parts) return undefined;
  if (parts.length === 1) return parts[0];
  const [head, members] = parts as [Uint8Array, Uint8Array];
  // Not zero-filled first: every byte is written just below (a 4 MB body: 0.9 against 1.6 ms).
  const out = Buffer.allocUnsafeSlow(head.length + members.length); // its own memory, not a view into Buffer's shared pool
  out.set(head, 0);
  out.set(members, head.length);
  return out;
}

/** Bodies at least this long are sent as their parts (`appendFieldsBody`). */
export const PARTS_MIN_BYTES = 64 * 1024;

/**
 * A request body sent as the harness's bytes (up to its closing brace) and the appended members,
 * never joined into one buffer: `fetch` reads them from a stream made for each attempt (the
 * client tries the next upstream on a refused connection), with their length declared, so the
 * upstream gets one Content-Length body as it would from bytes. A Blob of the parts, the way
 * before, copied them into the Blob's own store: 4 MB a screenshot call (docs/performance.md,
 * issue 32, fourteenth session).
 */
export class BodyParts {
  readonly byteLength: number;
  constructor(readonly parts: readonly Uint8Array[]) {
    let n = 0;
    for (const part of parts) n += part.byteLength;
    this.byteLength = n;
  }

  /** A fresh stream of the parts (the views themselves, not copies). */
  stream(): ReadableStream<Uint8Array> {
    const parts = this.parts;
    return new ReadableStream({
      start(controller) {
        for (const part of parts) controller.enqueue(part);
        controller.close();
      },
    });
  }

  /** The parts joined (tests, and a reader that needs the bytes whole). */
  bytes(): Uint8Array {
    return concatBytes(this.parts);
  }
}

/**
 * `appendFields` as a request body for `fetch`: a body of 64 KB or more is its parts
 * (`BodyParts`), so the body is not copied into a new buffer before `fetch` reads it (a 4 MB
 * screenshot request: the copy was 18 % of the proxy's samples).
 *
 * @example
 * const body = appendFieldsBody(bytes, parsed, { return_token_ids: true }); // Uint8Array, or BodyParts for a large body
 */
export function appendFieldsBody(json: Uint8Array, parsed: Record<string, unknown>, fields: Record<string, unknown>): Uint8Array | BodyParts | undefined {
  if (json.length < PARTS_MIN_BYTES) return appendFields(json, parsed, fields);
  const parts = appendedParts(json, parsed, fields);
  if (!parts) return undefined;
  return parts.length === 1 ? parts[0] : new BodyParts(parts);
}

/** The parts of the body with `fields` appended: [json] when there is nothing to add, else [head, members]. */
function appendedParts(json: Uint8Array, parsed: Record<string, unknown>, fields: Record<string, unknown>): Uint8Array[] | undefined {
  const keys = Object.keys(fields);
  if (keys.length === 0) return [json];
  for (const key of keys) if (Object.hasOwn(parsed, key)) return undefined;
  const close = lastNonSpace(json, json.length);
  if (close < 0 || json[close] !== CLOSE_BRACE) return undefined;
  const beforeClose = lastNonSpace(json, close);
  if (beforeClose < 0) return undefined;
  const empty = json[beforeClose] === OPEN_BRACE && Object.keys(parsed).length === 0;
  // `{"b":true}` → `,"b":true}` (or `"b":true}` into an empty object).
  const members = encoder.encode(JSON.stringify(fields).slice(empty ? 1 : 0));
  if (!empty) members[0] = 0x2c; // ","
  return [json.subarray(0, close), members];
}

/** Index of the last byte before `end` that is not JSON whitespace, or -1. */
function lastNonSpace(bytes: Uint8Array, end: number): number {
  let i = end - 1;
  while (i >= 0 && (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09)) i--;
  return i;
}
