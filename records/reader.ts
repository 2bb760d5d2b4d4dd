/**
 * Readers: stream records back out of a log in bounded memory (one chunk, or one record when a
 * record is larger, at a time). Safe next to a live writer: its segment is read up to the last
 * complete frame.
 */
import { basename } from "node:path";
import { fromBinary, RecordSchema, type Record } from "../schemas/index.ts";
import { RecorderError } from "./errors.ts";
import { newOutcome, scanFrames, type ScanProblem } from "./scan.ts";
import { listSegments } from "./segments.ts";

export type LoggedRecord = { record: Record; segment: string; offset: number };

/** Damage a reader found: reading of that segment stopped at `offset`. */
export type Corruption = ScanProblem & { segment: string; path: string };

export type ReadOptions = {
  /**
   * Called for each segment that ends in damage. By default this is a warning on stderr, except
   * for an incomplete frame at the end of the newest segment, which is a live writer's
   * in-progress append (or a tail the next open cuts), not damage.
   */
  onCorruption?: (corruption: Corruption) => void;
  /** Read size; records larger than this are read whole. */
  chunkBytes?: number;
};

const warn = (c: Corruption): void => console.warn(`recorder: ${c.path}: ${c.reason}; the rest of this segment is not read`);

/**
 * The records of one segment file, in order. Pass `newest: true` for the segment a live writer
 * may still be appending to: an incomplete last frame there is then not warned about.
 *
 * @example
 * for await (const { record, offset } of readSegment("data/log/seg-00000001.forge")) console.log(offset, record.kind.case);
 */
export async function* readSegment(path: string, options: ReadOptions & { newest?: boolean } = {}): AsyncGenerator<LoggedRecord> {
  const segment = basename(path);
  const outcome = newOutcome();
  const scan = options.chunkBytes ? { chunkBytes: options.chunkBytes } : {};
  for await (const { payload, offset } of scanFrames(path, outcome, scan)) {
    let record: Record;
    try {
      record = fromBinary(RecordSchema, payload);
    } catch (error) {
      // The CRC matched, so these are the bytes that were written: a schema mismatch, not damage.
      throw new RecorderError("BAD_PAYLOAD", path, `recorder: ${path} at offset ${offset}: frame is intact but does not decode as forge.v1.Record (${(error as Error).message}); was it written by an incompatible version?`, { cause: error });
    }
    yield { record, segment, offset };
  }
  const problem = outcome.problem;
  if (!problem) return;
  const corruption = { ...problem, segment, path };
  if (options.onCorruption) options.onCorruption(corruption);
  else if (!(options.newest && problem.kind === "incomplete")) warn(corruption);
}

/**
 * Every record of the log in `dir` (a data directory, or its `log` directory), oldest segment
 * first. The segment list is taken when iteration starts; each segment is read up to its size
 * at the time it is opened.
 *
 * @example
 * for await (const { record, segment, offset } of readRecords("data")) {
 *   if (record.kind.case === "modelCall") console.log(segment, offset, record.kind.value.callId);
 * }
 */
export async function* readRecords(dir: string, options: ReadOptions = {}): AsyncGenerator<LoggedRecord> {
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
