/**
 * Files that survive a machine crash: a file replaced whole or not at all, and a folder whose
 * entries (files created, renamed or removed in it) are on disk.
 */
import * as fs from "node:fs";
import { dirname } from "node:path";
import { ioError } from "./errors.ts";

function fsyncDir(dir: string): void {
  const fd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * fsyncs a directory so that files created, renamed or removed in it survive a machine crash.
 *
 * @example
 * syncDir("data/log"); // after creating seg-00000002.forge
 */
export function syncDir(dir: string): void {
  try {
    fsyncDir(dir);
  } catch (error) {
    throw ioError("fsync directory", dir, error);
  }
}

/**
 * Writes `path` whole or not at all: `fill` writes a temporary file beside it, which is fsynced,
 * renamed over `path`, and its folder fsynced, so a crash leaves the old file or the new one,
 * never half of one. A failure removes the temporary file and throws RecorderError (IO) saying
 * "cannot `action` `path`".
 *
 * @example
 * writeFileAtomic("data/log/index/seg-00000001.json", "write the segment index", (fd) => fs.writeSync(fd, text));
 */
export function writeFileAtomic(path: string, action: string, fill: (fd: number) => void): void {
  const dir = dirname(path);
  const temp = `${path}.tmp-${process.pid}`;
  let fd: number | undefined;
  try {
    fs.mkdirSync(dir, { recursive: true });
    fd = fs.openSync(temp, "w", 0o644);
    fill(fd);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = undefined;
    fs.renameSync(temp, path);
    fsyncDir(dir);
  } catch (error) {
    if (fd !== undefined) fs.closeSync(fd);
    fs.rmSync(temp, { force: true });
    throw ioError(action, path, error);
  }
}
