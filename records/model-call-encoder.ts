/**
 * A ModelCall record's protobuf encoding, written for the message instead of by protobuf-es's
 * reflective `toBinary`.
 *
 * Every model call ends with one of these; `toBinary` (a writer per field, a fork/join per
 * sub-message and packed list, a chunk list joined by `finish()`) was 4–8 % of the proxy's
 * samples in every row of `bench/nginx.ts --floor`. This encoder writes the fields in field
 * number order into one reused scratch buffer, so its bytes are exactly `toBinary`'s (the unit
 * test compares them byte for byte); bytes fields of `splitAt` bytes or more are not copied but
 * handed on as parts of their own, as `encodeRecord` did before.
 *
 * Anything it does not expect (unknown fields, a value `toBinary` would reject or coerce, a
 * message of another type) makes it return undefined, and the caller encodes with `toBinary`,
 * which then reports the error as it always did.
 */
import type { ModelCall, Record } from "../schemas/index.ts";

/** Why a record is left to toBinary; never leaves this file. */
const DECLINE = Symbol("decline");

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;
const FLOAT32_MAX = 3.4028234663852886e38;

const utf8 = new TextEncoder();
let buf = new Uint8Array(64 * 1024);
let view = new DataView(buf.buffer);
let pos = 0;
/** Parts handed on (copies of the scratch buffer's segments and big bytes fields), in order. */
let parts: Uint8Array[] = [];
/** Where the scratch buffer's current segment starts. */
let segmentStart = 0;
/** Whether the big fields (bodies, content pieces) are parts of their own. */
let splitBig = false;

function ensure(n: number): void {
  if (pos + n <= buf.length) return;
  let size = buf.length * 2;
  while (size < pos + n) size *= 2;
  const next = new Uint8Array(size);
  next.set(buf.subarray(0, pos));
  buf = next;
  view = new DataView(buf.buffer);
}

function varint(value: number): void {
  ensure(5);
  while (value > 0x7f) {
    buf[pos++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  buf[pos++] = value;
}

function varintSize(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5;
}

function uint32Value(value: unknown): number {
  if (typeof value !== "number" || value >>> 0 !== value) throw DECLINE;
  return value;
}

function tag(field: number, wire: number): void {
  varint((field << 3) | wire);
}

function uint32(field: number, value: number): void {
  if (uint32Value(value) === 0) return;
  tag(field, WIRE_VARINT);
  varint(value);
}

/** An enum (int32 on the wire); a negative value (10 bytes) is left to toBinary. */
function enumField(field: number, value: number): void {
  if (typeof value !== "number" || (value | 0) !== value || value < 0) throw DECLINE;
  if (value === 0) return;
  tag(field, WIRE_VARINT);
  varint(value);
}

function double(field: number, value: number, always = false): void {
  if (typeof value !== "number") throw DECLINE;
  if (!always && Object.is(value, 0)) return;
  tag(field, WIRE_FIXED64);
  ensure(8);
  view.setFloat64(pos, value, true);
  pos += 8;
}

function bool(field: number, value: boolean, always = false): void {
  if (typeof value !== "boolean") throw DECLINE;
  if (!always && !value) return;
  tag(field, WIRE_VARINT);
  ensure(1);
  buf[pos++] = value ? 1 : 0;
}

/** A string's bytes with their length before them (the length's size guessed, then fixed). */
function stringValue(value: string): void {
  const guess = varintSize(value.length);
  ensure(guess + value.length * 3);
  const start = pos + guess;
  let written: number;
  if (value.length < 64) {
    // Short strings (ids, names, enums' text): a loop beats encodeInto's call for ASCII.
    let i = 0;
    for (; i < value.length; i++) {
      const code = value.charCodeAt(i);
      if (code > 0x7f) break;
      buf[start + i] = code;
    }
    written = i === value.length ? i : utf8.encodeInto(value, buf.subarray(start)).written;
  } else {
    written = utf8.encodeInto(value, buf.subarray(start)).written;
  }
  const size = varintSize(written);
  if (size !== guess) buf.copyWithin(pos + size, start, start + written);
  varint(written);
  pos += written;
}

function string(field: number, value: string, always = false): void {
  if (typeof value !== "string") throw DECLINE;
  if (!always && value === "") return;
  tag(field, WIRE_LEN);
  stringValue(value);
}

function bytes(field: number, value: Uint8Array, always = false, big = false): void {
  if (!(value instanceof Uint8Array)) throw DECLINE;
  if (!always && value.length === 0) return;
  tag(field, WIRE_LEN);
  varint(value.length);
  if (big && splitBig && value.length > 0) {
    // The caller's own array goes to writev as is.
    parts.push(buf.slice(segmentStart, pos), value);
    segmentStart = pos;
    return;
  }
  ensure(value.length);
  buf.set(value, pos);
  pos += value.length;
}

/** Starts a length-delimited value whose length is not known yet: one byte reserved for it. */
function open(field: number): number {
  tag(field, WIRE_LEN);
  ensure(1);
  return pos++;
}

/** Writes the length of the value opened at `at`, moving it when its length needs more than one byte. */
function close(at: number): void {
  const length = pos - at - 1;
  if (length < 0x80) {
    buf[at] = length;
    return;
  }
  const size = varintSize(length);
  ensure(size - 1);
  buf.copyWithin(at + size, at + 1, pos);
  const end = pos + size - 1;
  pos = at;
  varint(length);
  pos = end;
}

function packedUint32(field: number, values: ArrayLike<number>): void {
  if (values.length === 0) return;
  const at = open(field);
  ensure(values.length * 5);
  if (values instanceof Uint32Array) {
    for (let i = 0; i < values.length; i++) {
      let value = values[i]!;
      while (value > 0x7f) {
        buf[pos++] = (value & 0x7f) | 0x80;
        value >>>= 7;
      }
      buf[pos++] = value;
    }
  } else {
    for (let i = 0; i < values.length; i++) {
      let value = values[i]!;
      if (typeof value !== "number" || value >>> 0 !== value) throw DECLINE;
      while (value > 0x7f) {
        buf[pos++] = (value & 0x7f) | 0x80;
        value >>>= 7;
      }
      buf[pos++] = value;
    }
  }
  close(at);
}

function packedFloat(field: number, values: ArrayLike<number>): void {
  if (values.length === 0) return;
  tag(field, WIRE_LEN);
  varint(values.length * 4);
  ensure(values.length * 4);
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    // toBinary rejects a finite value that float32 cannot hold; NaN and infinities pass.
    if (typeof value !== "number" || (Number.isFinite(value) && (value > FLOAT32_MAX || value < -FLOAT32_MAX))) throw DECLINE;
    view.setFloat32(pos, value, true);
    pos += 4;
  }
}

type Sub = { $typeName?: string; $unknown?: unknown[] };

function plain(message: Sub | undefined, typeName: string): void {
  if (message === undefined) return;
  if (message === null || typeof message !== "object" || message.$typeName !== typeName || message.$unknown?.length) throw DECLINE;
}

function modelCall(m: ModelCall): void {
  plain(m as Sub, "forge.v1.ModelCall");
  string(1, m.rolloutId);
  uint32(2, m.seq);
  string(3, m.callId);
  double(4, m.startUnixMs);
  double(5, m.endUnixMs);
  enumField(6, m.protocol);
  bytes(7, m.requestBody, false, true);
  bytes(8, m.responseBody, false, true);
  string(9, m.model);
  string(10, m.upstream);
  uint32(11, m.policyVersion);
  bool(12, m.stream);
  uint32(13, m.httpStatus);
  enumField(14, m.status);
  string(15, m.error);
  usage(16, m.usage);
  double(17, m.latencyMs);
  double(18, m.ttftMs);
  packedUint32(19, m.promptTokenIds);
  packedUint32(20, m.completionTokenIds);
  packedFloat(21, m.completionLogprobs);
  string(22, m.finishReason);
  enumField(23, m.tokenStatus);
  string(24, m.prefixOf);
  uint32(25, m.prefixLen);
  uint32(26, m.promptLen);
  headers(27, m.requestHeaders);
  session(28, m.session);
  for (const ref of m.blobRefs) string(29, ref, true);
  bytes(30, m.upstreamRequestBody, false, true);
  uint32(31, m.upstreamAttempts);
  bytes(32, m.upstreamRequestPatch);
  string(40, m.tokenStatusReason);
  sampling(41, m.sampling);
  enumField(42, m.engine);
  string(43, m.engineVersion);
  enumField(44, m.logprobsMode);
  enumField(50, m.tokenMode);
  string(51, m.chainId);
  string(52, m.chainParent);
  enumField(53, m.chainStart);
  string(54, m.chainStartDetail);
  uint32(55, m.renderedTokens);
  bytes(56, m.engineRequest);
  bytes(57, m.chainAnswer);
  // A repeated bytes field: every element is written, empty ones too.
  for (const piece of m.content) bytes(70, piece, true, true);
  storedBody(71, m.requestStored);
  storedBody(72, m.upstreamStored);
  string(80, m.servedWeightVersion);
  string(81, m.policyVersionMismatch);
}

function usage(field: number, u: ModelCall["usage"]): void {
  if (u === undefined) return;
  plain(u as Sub, "forge.v1.Usage");
  const at = open(field);
  uint32(1, u.promptTokens);
  uint32(2, u.completionTokens);
  uint32(3, u.totalTokens);
  uint32(4, u.cachedTokens);
  close(at);
}

function headers(field: number, list: ModelCall["requestHeaders"]): void {
  for (const header of list) {
    plain(header as Sub, "forge.v1.Header");
    const at = open(field);
    string(1, header.name);
    string(2, header.value);
    close(at);
  }
}

function session(field: number, map: ModelCall["session"]): void {
  if (map === null || typeof map !== "object") throw DECLINE;
  for (const key of Object.keys(map)) {
    // A map entry writes its key and value even when empty.
    const at = open(field);
    string(1, key, true);
    string(2, map[key]!, true);
    close(at);
  }
}

function sampling(field: number, s: ModelCall["sampling"]): void {
  if (s === undefined) return;
  plain(s as Sub, "forge.v1.SamplingParams");
  const at = open(field);
  // proto3 `optional`: written when set, zero or not.
  if (s.temperature !== undefined) double(1, s.temperature, true);
  if (s.topP !== undefined) double(2, s.topP, true);
  if (s.topK !== undefined) {
    if (typeof s.topK !== "number" || (s.topK | 0) !== s.topK || s.topK < 0) throw DECLINE;
    tag(3, WIRE_VARINT);
    varint(s.topK);
  }
  if (s.minP !== undefined) double(4, s.minP, true);
  if (s.maxTokens !== undefined) {
    tag(5, WIRE_VARINT);
    varint(uint32Value(s.maxTokens));
  }
  if (s.seed !== undefined) double(6, s.seed, true);
  if (s.presencePenalty !== undefined) double(7, s.presencePenalty, true);
  if (s.frequencyPenalty !== undefined) double(8, s.frequencyPenalty, true);
  if (s.repetitionPenalty !== undefined) double(9, s.repetitionPenalty, true);
  if (s.minTokens !== undefined) {
    tag(10, WIRE_VARINT);
    varint(uint32Value(s.minTokens));
  }
  for (const stop of s.stop) string(11, stop, true);
  packedUint32(12, s.stopTokenIds);
  if (s.ignoreEos !== undefined) bool(13, s.ignoreEos, true);
  if (s.n !== undefined) {
    tag(14, WIRE_VARINT);
    varint(uint32Value(s.n));
  }
  string(15, s.constraintsJson);
  enumField(21, s.temperatureSource);
  enumField(22, s.topPSource);
  enumField(23, s.topKSource);
  enumField(24, s.minPSource);
  enumField(25, s.maxTokensSource);
  enumField(26, s.seedSource);
  enumField(27, s.presencePenaltySource);
  enumField(28, s.frequencyPenaltySource);
  enumField(29, s.repetitionPenaltySource);
  enumField(30, s.minTokensSource);
  enumField(31, s.stopSource);
  enumField(32, s.nSource);
  enumField(33, s.ignoreEosSource);
  close(at);
}

function storedBody(field: number, stored: ModelCall["requestStored"]): void {
  if (stored === undefined) return;
  plain(stored as Sub, "forge.v1.StoredBody");
  const at = open(field);
  uint32(1, stored.prefixSeq);
  uint32(2, stored.prefixItems);
  bytes(3, stored.literal);
  packedUint32(4, stored.items);
  uint32(5, stored.length);
  close(at);
}

/**
 * The payload parts of a Record holding a ModelCall, or undefined where toBinary must encode
 * it (see the file's comment). With `split`, the non-empty bodies and content pieces are parts
 * of their own, the caller's arrays; without it the payload is one part.
 *
 * @example
 * const encoded = encodeModelCallRecord(record, false) ?? { parts: [toBinary(RecordSchema, record)] };
 */
export function encodeModelCallRecord(record: Record, split: boolean): { parts: Uint8Array[]; length: number } | undefined {
  if (record.kind.case !== "modelCall" || record.$unknown?.length || record.$typeName !== "forge.v1.Record") return undefined;
  pos = 0;
  segmentStart = 0;
  parts = [];
  splitBig = split;
  try {
    modelCall(record.kind.value);
  } catch (error) {
    if (error === DECLINE) return undefined;
    throw error;
  } finally {
    splitBig = false;
  }
  const out = parts;
  parts = [];
  let inner = pos - segmentStart;
  for (const part of out) inner += part.length;
  // The Record's own field: kind model_call = 1, length-delimited.
  const keySize = 1 + varintSize(inner);
  if (out.length === 0) {
    // No split: one array, the key in front of the message.
    const whole = new Uint8Array(keySize + inner);
    whole[0] = (1 << 3) | WIRE_LEN;
    writeVarintAt(whole, 1, inner);
    whole.set(buf.subarray(0, pos), keySize);
    return { parts: [whole], length: whole.length };
  }
  out.push(buf.slice(segmentStart, pos));
  const key = new Uint8Array(keySize);
  key[0] = (1 << 3) | WIRE_LEN;
  writeVarintAt(key, 1, inner);
  return { parts: [key, ...out], length: keySize + inner };
}

function writeVarintAt(target: Uint8Array, at: number, value: number): void {
  while (value > 0x7f) {
    target[at++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  target[at] = value;
}
