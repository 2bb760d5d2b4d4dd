/**
 * Encodes a Record as the buffers of one frame payload without copying its big `bytes` fields.
 *
 * protobuf-es's `toBinary` copies every byte at least twice (the BinaryWriter's fork/join and
 * `finish()`), which for a ModelCall holding a 4 MB screenshot request is ~5 ms. Protobuf lets
 * the fields of a message come in any order, so a record with large bodies is written as
 *
 *   tag(kind) len | toBinary(inner message without the big fields) | tag(field) len body | ...
 *
 * where each body is the caller's own Uint8Array, handed to writev as is. Any protobuf reader
 * (fromBinary, the scanner) decodes it to the same message; only the field order differs from
 * toBinary's. Small records keep one plain toBinary: below the threshold the extra buffers cost
 * more than the copy. A ModelCall's content pieces (a repeated bytes field: a message, a
 * screenshot) are written the same way, each as its own field.
 */
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { BlobSchema, ModelCallSchema, RecordSchema, toBinary, type Record } from "../schemas/index.ts";
import { encodeModelCallRecord } from "./model-call-encoder.ts";

/** Records whose big fields add up to less than this are encoded with one plain toBinary. */
export const SPLIT_THRESHOLD_BYTES = 64 * 1024;

export type EncodedRecord = {
  /** The payload, in order; big fields are the record's own arrays, not copies. */
  parts: Uint8Array[];
  /** Total bytes of `parts`. */
  length: number;
};

const EMPTY = new Uint8Array(0);

/** Field numbers in records.proto: Record.kind cases and their big `bytes` fields. */
const RECORD_FIELD = { modelCall: 1, blob: 2 } as const;
/** [name, field number, repeated]: a repeated field's elements are each written as their own field. */
const MODEL_CALL_BIG = [
  ["requestBody", 7, false],
  ["responseBody", 8, false],
  ["upstreamRequestBody", 30, false],
  ["content", 70, true],
] as const;
const BLOB_BIG = [["data", 3, false]] as const;

/**
 * The payload of `record`'s frame. Throws what toBinary throws for a record that does not encode.
 *
 * @example
 * const { parts, length } = encodeRecord(record);
 * fs.writevSync(fd, [header, ...parts]);
 */
export function encodeRecord(record: Record, threshold = SPLIT_THRESHOLD_BYTES): EncodedRecord {
  const kind = record.kind;
  if (kind.case === "modelCall") {
    // Every model call's record: written by its own encoder (model-call-encoder.ts), same bytes.
    const encoded = encodeModelCallRecord(record, bigFieldsTotal(kind.value, MODEL_CALL_BIG) >= threshold);
    if (encoded) return encoded;
  }
  // Unknown fields of the Record itself would be lost by encoding only its kind.
  if ((kind.case === "modelCall" || kind.case === "blob") && !record.$unknown?.length) {
    const split = kind.case === "modelCall" ? splitFields(kind.value, MODEL_CALL_BIG, threshold) : splitFields(kind.value, BLOB_BIG, threshold);
    if (split) {
      const inner = kind.case === "modelCall" ? toBinary(ModelCallSchema, split.rest as typeof kind.value) : toBinary(BlobSchema, split.rest as typeof kind.value);
      const parts: Uint8Array[] = [EMPTY, inner]; // [0]: the Record's tag and length, once known
      let innerLength = inner.length;
      for (const [field, bytes] of split.big) {
        const key = lengthDelimitedKey(field, bytes.length);
        parts.push(key, bytes);
        innerLength += key.length + bytes.length;
      }
      parts[0] = lengthDelimitedKey(RECORD_FIELD[kind.case], innerLength);
      return { parts, length: parts[0].length + innerLength };
    }
  }
  const payload = toBinary(RecordSchema, record);
  return { parts: [payload], length: payload.length };
}

/**
 * The message with its big fields emptied, and those fields (non-empty ones, in field order;
 * a repeated field's elements in order, empty ones too), when they add up to `threshold` or
 * more; undefined otherwise.
 */
function splitFields<M extends object>(message: M, fields: readonly (readonly [string, number, boolean])[], threshold: number): { rest: M; big: [number, Uint8Array][] } | undefined {
  const values = message as unknown as { [name: string]: unknown };
  let total = 0;
  for (const [name, , repeated] of fields) {
    const value = values[name];
    // Anything but bytes goes to toBinary, which reports it.
    if (repeated) {
      if (!Array.isArray(value)) return undefined;
      for (const element of value) {
        if (!(element instanceof Uint8Array)) return undefined;
        total += element.length;
      }
    } else {
      if (!(value instanceof Uint8Array)) return undefined;
      total += value.length;
    }
  }
  if (total < threshold) return undefined;
  const rest: { [name: string]: unknown } = { ...values };
  const big: [number, Uint8Array][] = [];
  for (const [name, field, repeated] of fields) {
    if (repeated) {
      rest[name] = [];
      // An element is written even when empty: a repeated field keeps its elements' positions.
      for (const element of values[name] as Uint8Array[]) big.push([field, element]);
    } else {
      const value = values[name] as Uint8Array;
      rest[name] = EMPTY; // proto3: an empty bytes field is not written
      if (value.length > 0) big.push([field, value]);
    }
  }
  return { rest: rest as M, big };
}

/** The bytes of a message's big fields (-1 when one is not bytes: toBinary reports it). */
function bigFieldsTotal(message: object, fields: readonly (readonly [string, number, boolean])[]): number {
  const values = message as { [name: string]: unknown };
  let total = 0;
  for (const [name, , repeated] of fields) {
    const value = values[name];
    if (repeated) {
      if (!Array.isArray(value)) return -1;
      for (const element of value) {
        if (!(element instanceof Uint8Array)) return -1;
        total += element.length;
      }
    } else {
      if (!(value instanceof Uint8Array)) return -1;
      total += value.length;
    }
  }
  return total;
}

/** The key of a length-delimited field (wire type 2) and its length, both varints. */
function lengthDelimitedKey(field: number, length: number): Uint8Array {
  return new BinaryWriter().tag(field, WireType.LengthDelimited).uint32(length).finish();
}
