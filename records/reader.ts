/**
 * Readers: stream records back out of a log in bounded memory (one chunk, or one record when a
 * record is larger, at a time). Safe next to a live writer: its segment is read up to the last
 * complete frame.
 *
 * Damage is an error by default: a reader that is not told what to do with it throws
 * RecorderError (code CORRUPT) naming the segment, the offset and the way to skip it, so an
 * export never silently trains on a log with holes. With `skipCorrupt` (or an `onCorruption`
 * callback) reading resynchronises after the damaged bytes and goes on.
 */
import { basename } from "node:path";
import { fromBinary, RecordSchema, type Record } from "../schemas/index.ts";
import { RecorderError } from "./errors.ts";
import { FRAME_HEADER_BYTES, FRAME_HEADER_BYTES_V1 } from "./frame.ts";
import { newOutcome, scanFrames, type Damage } from "./scan.ts";
import { listSegments } from "./segments.ts";
import { dataDirsOf } from "./shards.ts";

/** A record as read: where its frame starts and how many bytes the frame takes (header included). */
export type LoggedRecord = { record: Record; segment: string; offset: number; bytes?: number };

/** A damaged byte range a reader skipped: `length` bytes from `offset` of `segment`. */
export type Corruption = Damage & { segment: string; path: string };

export type ReadOptions = {
  /**
   * Called for each damaged range; reading then goes on after it. Not called for an incomplete
   * frame at the end of the newest segment: that is a live writer's append in progress (or a
   * tail the next open cuts), not damage. Takes precedence over `skipCorrupt`.
   */
  onCorruption?: (corruption: Corruption) => void;
  /**
   * Without `onCorruption`: false (default) throws RecorderError (code CORRUPT) at the first
   * damaged range; true warns on stderr and reads on past it.
   */
  skipCorrupt?: boolean;
  /** Read size; records larger than this are read whole. */
  chunkBytes?: number;
};

/**
 * The message for a damaged range, naming the fix.
 *
 * @example
 * describeCorruption(c) // "recorder: data/log/seg-00000002.forge: CRC mismatch at offset 4096 (...): 2100 damaged bytes"
 */
export function describeCorruption(c: Corruption): string {
  return `recorder: ${c.path}: ${c.reason}: ${c.length} damaged bytes${c.tail ? " at the end of the segment" : ""}`;
}

const warn = (c: Corruption): void => console.warn(`${describeCorruption(c)}; skipped`);

function refuse(c: Corruption): never {
  throw new RecorderError(
    "CORRUPT",
    c.path,
    `${describeCorruption(c)}. The records in those bytes are lost (a copy is kept in log/quarantine/ once the proxy has opened the log); the records around them are intact. To read past the damage, pass --skip-corrupt (forge export, forge analyze) or { skipCorrupt: true } (readRecords).`,
  );
}

/**
 * The records of one segment file, in order. Pass `newest: true` for the segment a live writer
 * may still be appending to: an incomplete last frame there is then not damage.
 *
 * @example
 * for await (const { record, offset } of readSegment("data/log/seg-00000001.forge", { skipCorrupt: true })) console.log(offset, record.kind.case);
 */
export async function* readSegment(path: string, options: ReadOptions & { newest?: boolean } = {}): AsyncGenerator<LoggedRecord> {
  const segment = basename(path);
  const outcome = newOutcome();
  const onDamage = (damage: Damage): void => {
    if (options.newest && damage.tail && damage.kind === "incomplete") return;
    const corruption = { ...damage, segment, path };
    if (options.onCorruption) options.onCorruption(corruption);
    else if (options.skipCorrupt) warn(corruption);
    else refuse(corruption);
  };
  const scan = { onDamage, ...(options.chunkBytes ? { chunkBytes: options.chunkBytes } : {}) };
  for await (const { payload, offset } of scanFrames(path, outcome, scan)) {
    let record: Record;
    try {
      record = fromBinary(RecordSchema, payload);
    } catch (error) {
      // The CRC matched, so these are the bytes that were written: a schema mismatch, not damage.
      throw new RecorderError("BAD_PAYLOAD", path, `recorder: ${path} at offset ${offset}: frame is intact but does not decode as forge.v1.Record (${(error as Error).message}); was it written by an incompatible version?`, { cause: error });
    }
    yield { record, segment, offset, bytes: (outcome.version === 1 ? FRAME_HEADER_BYTES_V1 : FRAME_HEADER_BYTES) + payload.length };
  }
}

/**
 * Every record of the log in `dir` (a data directory, or its `log` directory), oldest segment
 * first; of each log in turn for several directories or a sharded data root (`shard-N/` dirs). The segment list is taken when iteration starts; each segment is read up to its size
 * at the time it is opened.
 *
 * @example
 * for await (const { record, segment, offset } of readRecords("data")) {
 *   if (record.kind.case === "modelCall") console.log(segment, offset, record.kind.value.callId);
 * }
 */
export async function* readRecords(dir: string | readonly string[], options: ReadOptions = {}): AsyncGenerator<LoggedRecord> {
  // Several data directories, or a sharded data root (records/shards.ts): each read in turn.
  const dirs = (typeof dir === "string" ? [dir] : dir).flatMap(dataDirsOf);
  for (const one of dirs) yield* readOneLog(one, options);
}

async function* readOneLog(dir: string, options: ReadOptions): AsyncGenerator<LoggedRecord> {
  const segments = await listSegments(dir);
  for (const [index, info] of segments.entries()) {
    try {
      yield* readSegment(info.path, { ...options, newest: index === segments.length - 1 });
    } catch (error) {
      // A writer removes its segment at close when it holds no record.
      if (error instanceof RecorderError && (error.errno === "ENOENT")) continue;
      throw error;
    }
  }
}
