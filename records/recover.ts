/**
 * Recovery on open: every segment is scanned. A bad tail on the LAST segment is what a writer
 * killed mid-append leaves: it is cut off (ftruncate to the end of the last good frame). Damage
 * in an older segment is reported and left in place: closed segments are never rewritten, and
 * readers stop at the same point, so nothing after it in later segments is lost.
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { ioError } from "./errors.ts";
import { newOutcome, scanFrames } from "./scan.ts";

export type Recovered = {
  /** Segment file name, e.g. `seg-00000003.forge`. */
  segment: string;
  /** Valid records before the damage. */
  keptRecords: number;
  /** Bytes after the last valid frame. */
  cutBytes: number;
  /** What was found and where, e.g. `short frame at offset 4096: length 2048 but only 100 bytes follow`. */
  reason: string;
  /** True when the bytes were cut from the file (last segment); false when left in place (older segment). */
  truncated: boolean;
};

/**
 * Scans `names` (oldest first) in `logDir`, cuts a torn tail off the last one, and reports
 * every segment that did not end cleanly.
 *
 * @example
 * const recovered = await recoverSegments("data/log", ["seg-00000001.forge"]);
 */
export async function recoverSegments(logDir: string, names: string[]): Promise<Recovered[]> {
  const recovered: Recovered[] = [];
  for (const [index, name] of names.entries()) {
    const path = join(logDir, name);
    const outcome = newOutcome();
    for await (const _ of scanFrames(path, outcome, { reuseBuffer: true })) {
      // Only the CRCs are checked here; the records are decoded by readers.
    }
    if (!outcome.problem) continue;
    const last = index === names.length - 1;
    if (last) {
      let fd: number | undefined;
      try {
        fd = fs.openSync(path, "r+");
        fs.ftruncateSync(fd, outcome.end);
        fs.fsyncSync(fd);
      } catch (error) {
        throw ioError("cut the torn tail of", path, error);
      } finally {
        if (fd !== undefined) fs.closeSync(fd);
      }
    }
    recovered.push({
      segment: name,
      keptRecords: outcome.records,
      cutBytes: outcome.size - outcome.end,
      reason: outcome.problem.reason,
      truncated: last,
    });
  }
  return recovered;
}
