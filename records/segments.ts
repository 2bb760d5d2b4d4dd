/**
 * Where the segments of a log live and what they are called: `DIR/log/seg-00000001.forge`, ...
 * (an 8-digit counter that keeps growing past 8 digits if it ever has to).
 */
import { existsSync, readdirSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { basename, join } from "node:path";

export type SegmentInfo = { name: string; path: string; number: number; size: number };

const segmentName = /^seg-(\d{8,})\.forge$/;

/** `seg-00000042.forge` for 42. */
export function segmentFileName(number: number): string {
  return `seg-${String(number).padStart(8, "0")}.forge`;
}

/** The counter of a segment file name, or undefined for any other file. */
export function segmentNumber(name: string): number | undefined {
  const match = segmentName.exec(name);
  return match ? Number(match[1]) : undefined;
}

/**
 * The log directory for `dir`. `dir` is the data directory (`--data`), whose log lives in
 * `dir/log`; a directory named `log`, or one that already holds segments or a LOCK, is taken
 * as the log directory itself, so callers may pass either (docs/contracts.md, Recorder).
 *
 * @example
 * resolveLogDir("data")     // "data/log"
 * resolveLogDir("data/log") // "data/log"
 */
export function resolveLogDir(dir: string): string {
  if (basename(dir) === "log") return dir;
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return join(dir, "log");
  }
  if (names.includes("log") && existsSync(join(dir, "log"))) return join(dir, "log");
  if (names.some((name) => name === "LOCK" || segmentNumber(name) !== undefined)) return dir;
  return join(dir, "log");
}

/** Segment names in a log directory, oldest first (by counter, not by string). */
export function segmentNamesSync(logDir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(logDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  return sortSegments(names);
}

function sortSegments(names: string[]): string[] {
  return names
    .filter((name) => segmentNumber(name) !== undefined)
    .sort((a, b) => segmentNumber(a)! - segmentNumber(b)!);
}

/**
 * The segments of the log in `dir` (a data directory or a log directory), oldest first.
 *
 * @example
 * await listSegments("data") // [{ name: "seg-00000001.forge", path: "data/log/seg-00000001.forge", number: 1, size: 4096 }]
 */
export async function listSegments(dir: string): Promise<SegmentInfo[]> {
  const logDir = resolveLogDir(dir);
  let names: string[];
  try {
    names = sortSegments(await readdir(logDir));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const infos = await Promise.all(
    names.map(async (name) => {
      const path = join(logDir, name);
      try {
        return { name, path, number: segmentNumber(name)!, size: (await stat(path)).size };
      } catch (error) {
        // A writer deletes its segment at close when it holds no record.
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw error;
      }
    }),
  );
  return infos.filter((info): info is SegmentInfo => info !== undefined);
}
