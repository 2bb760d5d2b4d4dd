/**
 * Recovery on open: every segment is scanned. Every damaged byte range is first copied aside to
 * `log/quarantine/` (nothing the disk still holds is thrown away), then:
 *
 * - damage at the very end of the LAST segment, with no intact frame after it, is the torn final
 *   frame a writer killed mid-append leaves: it is cut off (ftruncate to the end of the last good
 *   frame);
 * - any other damage is left in place: closed segments are never rewritten, and readers skip
 *   the damaged bytes (v2 segments resynchronise on the next intact frame), so the records
 *   after it are not lost.
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { syncDir, writeFileAtomic } from "./durable-file.ts";
import { ioError } from "./errors.ts";
import { newOutcome, scanFrames, type Damage } from "./scan.ts";

export type Recovered = {
  /** Segment file name, e.g. `seg-00000003.forge`. */
  segment: string;
  /** Where the damaged bytes start. */
  offset: number;
  /** How many bytes are damaged (up to the next intact frame, or the end of the file). */
  bytes: number;
  /** Valid records in the segment (before and after the damage). */
  keptRecords: number;
  /** Bytes cut from the end of the file: the torn final frame of the last segment; 0 otherwise. */
  cutBytes: number;
  /** What was found and where, e.g. `short frame at offset 4096: length 2048 but only 100 bytes follow`. */
  reason: string;
  /** True when the bytes were cut from the file (last segment); false when left in place. */
  truncated: boolean;
  /** The copy of the damaged bytes, `DIR/log/quarantine/seg-00000003.forge.at-4096.len-2148`. */
  quarantine: string;
};

/** The quarantine folder of a log directory. */
export function quarantineDir(logDir: string): string {
  return join(logDir, "quarantine");
}

/**
 * Scans `names` (oldest first) in `logDir`, quarantines every damaged range, cuts a torn final
 * frame off `lastSegment` (the log's newest, by default the last name), and reports each damaged range.
 *
 * @example
 * const recovered = await recoverSegments("data/log", ["seg-00000001.forge"]);
 */
export async function recoverSegments(logDir: string, names: string[], lastSegment = names.at(-1)): Promise<Recovered[]> {
  const recovered: Recovered[] = [];
  for (const name of names) {
    const path = join(logDir, name);
    const outcome = newOutcome();
    for await (const _ of scanFrames(path, outcome, { reuseBuffer: true })) {
      // Only the CRCs are checked here; the records are decoded by readers.
    }
    // Only the log's last segment can end in a torn frame (when some were left out of the scan, it is the log's, not the list's).
    const last = name === lastSegment;
    for (const damage of outcome.damage) {
      const cut = last && damage.tail;
      const quarantine = quarantineRange(logDir, name, damage, cut);
      if (cut) {
        let fd: number | undefined;
        try {
          fd = fs.openSync(path, "r+");
          fs.ftruncateSync(fd, damage.offset);
          fs.fsyncSync(fd);
        } catch (error) {
          throw ioError("cut the torn tail of", path, error);
        } finally {
          if (fd !== undefined) fs.closeSync(fd);
        }
      }
      recovered.push({
        segment: name,
        offset: damage.offset,
        bytes: damage.length,
        keptRecords: outcome.records,
        cutBytes: cut ? damage.length : 0,
        reason: damage.reason,
        truncated: cut,
        quarantine,
      });
    }
  }
  return recovered;
}

/**
 * Checks closed segments the way an open does — every frame's CRC, each damaged range copied to
 * the quarantine folder and reported — without cutting anything: for segments whose recovery
 * scan an open skipped because a segment index vouched for them (bit rot since the index was
 * written is found here, after the start, instead of delaying it). `stop` is asked between
 * segments.
 *
 * @example
 * for (const r of await verifySegments("data/log", ["seg-00000001.forge"])) console.warn(r.reason);
 */
export async function verifySegments(logDir: string, names: string[], stop: () => boolean = () => false): Promise<Recovered[]> {
  const found: Recovered[] = [];
  for (const name of names) {
    if (stop()) break;
    found.push(...(await recoverSegments(logDir, [name], "")));
  }
  return found;
}

/**
 * Copies `damage` of segment `name` to the quarantine folder (once: a copy already there is
 * kept) and appends a line about it to `quarantine/index.jsonl`. Returns the copy's path.
 */
function quarantineRange(logDir: string, name: string, damage: Damage, cut: boolean): string {
  const dir = quarantineDir(logDir);
  const target = join(dir, `${name}.at-${damage.offset}.len-${damage.length}`);
  if (fs.existsSync(target) && fs.statSync(target).size === damage.length) return target;
  const source = join(logDir, name);
  writeFileAtomic(target, "copy damaged bytes to", (to) => {
    const from = fs.openSync(source, "r");
    try {
      const chunk = Buffer.allocUnsafe(Math.min(damage.length, 1 << 20));
      let done = 0;
      while (done < damage.length) {
        const n = fs.readSync(from, chunk, 0, Math.min(chunk.length, damage.length - done), damage.offset + done);
        if (n === 0) break;
        fs.writeSync(to, chunk, 0, n);
        done += n;
      }
    } finally {
      fs.closeSync(from);
    }
  });
  const line = { segment: name, offset: damage.offset, bytes: damage.length, kind: damage.kind, reason: damage.reason, cut, quarantined_unix_ms: Date.now() };
  try {
    fs.appendFileSync(join(dir, "index.jsonl"), `${JSON.stringify(line)}\n`);
  } catch (error) {
    throw ioError("copy damaged bytes to", target, error);
  }
  syncDir(dir); // index.jsonl, when this line created it
  return target;
}
