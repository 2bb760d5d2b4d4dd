/**
 * Reading chosen frames of a segment by offset (from a segment index) instead of scanning it:
 * what a reader of one rollout needs. Each frame is checked as a scan checks it (sync marker and
 * header CRC in version 2, the payload's CRC32C); damage is an error unless the caller skips it,
 * as with readRecords.
 */
import { closeSync, openSync, readSync } from "node:fs";
import { basename } from "node:path";
import { crc32c } from "@node-rs/crc32";
import { fromBinary, RecordSchema, type ModelCall, type Record } from "../schemas/index.ts";
import { callTokensOf } from "./call-tokens.ts";
import { RecorderError, ioError } from "./errors.ts";
import { checkedFrameLength, FRAME_HEADER_BYTES, FRAME_HEADER_BYTES_V1, MAX_PAYLOAD_BYTES, SEGMENT_HEADER_BYTES, segmentVersion } from "./frame.ts";
import { describeCorruption, type Corruption, type LoggedRecord, type ReadOptions } from "./reader.ts";

/**
 * The records whose frames start at `offsets` (in the order given) of the segment at `path`.
 *
 * @example
 * for await (const { record } of readRecordsAt("data/log/seg-00000002.forge", [8, 4120])) console.log(record.kind.case);
 */
export async function* readRecordsAt(path: string, offsets: readonly number[], options: ReadOptions = {}): AsyncGenerator<LoggedRecord> {
  const segment = basename(path);
  for (const { payload, offset, bytes } of framesAt(path, offsets, options)) {
    let record: Record;
    try {
      record = fromBinary(RecordSchema, payload);
    } catch (error) {
      throw new RecorderError("BAD_PAYLOAD", path, `recorder: ${path} at offset ${offset}: frame is intact but does not decode as forge.v1.Record (${(error as Error).message})`, { cause: error });
    }
    yield { record, segment, offset, bytes };
  }
}

/**
 * The token view (records/call-tokens.ts) of the ModelCall records among the frames at `offsets`:
 * what rebuilding a rollout's token history needs, without decoding the bodies.
 *
 * @example
 * for (const call of readCallTokensAt("data/log/seg-00000002.forge", offsets)) registry.replayCall(call);
 */
export function* readCallTokensAt(path: string, offsets: readonly number[], options: ReadOptions = {}): Generator<ModelCall> {
  for (const { payload } of framesAt(path, offsets, options)) {
    const call = callTokensOf(payload);
    if (call) yield call;
  }
}

/**
 * The checked payloads of the frames at `offsets`. Synchronous reads: a frame is one or two
 * preads, cheaper than an asynchronous read's round trip when only a few frames are wanted.
 */
function* framesAt(path: string, offsets: readonly number[], options: ReadOptions): Generator<{ payload: Uint8Array; offset: number; bytes: number }> {
  const segment = basename(path);
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (error) {
    throw ioError("open segment", path, error);
  }
  const damaged = (offset: number, length: number, reason: string): void => {
    const corruption: Corruption = { offset, length, kind: "corrupt", reason, tail: false, segment, path };
    if (options.onCorruption) options.onCorruption(corruption);
    else if (options.skipCorrupt) console.warn(`${describeCorruption(corruption)}; skipped`);
    else throw new RecorderError("CORRUPT", path, `${describeCorruption(corruption)}. To read past the damage, pass { skipCorrupt: true }.`);
  };
  try {
    const head = new Uint8Array(SEGMENT_HEADER_BYTES);
    readSync(fd, head, 0, SEGMENT_HEADER_BYTES, 0);
    const version = segmentVersion(head);
    if (version === undefined) throw new RecorderError("BAD_HEADER", path, `recorder: ${path} is not a forge segment (its header is neither FORGESG2 nor FORGESG1)`);
    const headerBytes = version === 2 ? FRAME_HEADER_BYTES : FRAME_HEADER_BYTES_V1;
    const header = new Uint8Array(headerBytes);
    const view = new DataView(header.buffer);
    for (const offset of offsets) {
      const got = readSync(fd, header, 0, headerBytes, offset);
      const length = got < headerBytes ? -1 : version === 2 ? checkedFrameLength(header, view, 0) : view.getUint32(0, true);
      if (length <= 0 || length > MAX_PAYLOAD_BYTES) {
        damaged(offset, headerBytes, `no intact frame header at offset ${offset} (the index names one there)`);
        continue;
      }
      // A fresh buffer per record: protobuf bytes fields are views into it.
      const payload = new Uint8Array(length);
      let read = 0;
      while (read < length) {
        const n = readSync(fd, payload, read, length - read, offset + headerBytes + read);
        if (n === 0) break;
        read += n;
      }
      const expected = view.getUint32(version === 2 ? 8 : 4, true);
      if (read < length || crc32c(payload) >>> 0 !== expected) {
        damaged(offset, headerBytes + length, read < length ? `short frame at offset ${offset}` : `CRC mismatch at offset ${offset}`);
        continue;
      }
      yield { payload, offset, bytes: headerBytes + length };
    }
  } finally {
    closeSync(fd);
  }
}
