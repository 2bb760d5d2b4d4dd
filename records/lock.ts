/**
 * `DIR/log/LOCK`: one writer per log. The file holds the writer's pid on its first line (what
 * other tools read), then the host name, the kernel boot id and the process start time, so a
 * lock left by a process that died is recognised even when its pid has since been reused
 * (after a reboot, or in a restarted container where the proxy is pid 1 again). A LOCK written
 * on another host (a shared volume) cannot be checked by pid: the writer refreshes the file's
 * mtime every few seconds, and such a LOCK counts as live while it is fresh.
 */
import { readFileSync, realpathSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { RecorderError, ioError } from "./errors.ts";

export type LockHolder = { pid: number; host?: string; bootId?: string; start?: string };
export type Lock = { path: string; stale?: LockHolder; heartbeat(): void; release(): void };

/** How often a writer refreshes its LOCK, and how old a LOCK from another host must be to count as dead. */
export const LOCK_HEARTBEAT_MS = 5_000;
export const LOCK_STALE_MS = 30_000;

// Logs this process has open: its own pid in a LOCK means "still held" only for these.
const heldHere = new Set<string>();

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** This process's identity as written into LOCK. */
function selfHolder(): LockHolder {
  const holder: LockHolder = { pid: process.pid, host: hostname() };
  const bootId = readText("/proc/sys/kernel/random/boot_id")?.trim();
  const start = processStart(process.pid);
  if (bootId) holder.bootId = bootId;
  if (start) holder.start = start;
  return holder;
}

/** Linux: the start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), "Z" for a zombie. */
function processStart(pid: number): string | undefined {
  const stat = readText(`/proc/${pid}/stat`);
  if (!stat) return undefined;
  // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields[0] === "Z" ? "Z" : fields[19];
}

export function parseLock(text: string): LockHolder {
  const [pid = "", host, bootId, start] = text.split("\n").map((line) => line.trim());
  const holder: LockHolder = { pid: Number.parseInt(pid, 10) };
  if (host) holder.host = host;
  if (bootId) holder.bootId = bootId;
  if (start) holder.start = start;
  return holder;
}

function formatLock(holder: LockHolder): string {
  return `${holder.pid}\n${holder.host ?? ""}\n${holder.bootId ?? ""}\n${holder.start ?? ""}\n`;
}

/** Whether the process named in a LOCK may still be writing. */
export function holderAlive(holder: LockHolder, logDir: string, lockPath: string): boolean {
  if (!Number.isInteger(holder.pid) || holder.pid <= 0) return false;
  const self = selfHolder();
  if (holder.host && self.host && holder.host !== self.host && holder.bootId !== self.bootId) {
    // Another machine: its pid means nothing here; a live writer keeps the mtime fresh.
    try {
      return Date.now() - statSync(lockPath).mtimeMs < LOCK_STALE_MS;
    } catch {
      return false;
    }
  }
  if (holder.bootId && self.bootId && holder.bootId !== self.bootId) return false; // rebooted since
  if (holder.pid === process.pid) return heldHere.has(logDir) && holder.start === self.start;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const start = processStart(holder.pid);
  if (start === "Z") return false; // exited, not yet reaped: it writes nothing more
  if (holder.start && start && holder.start !== start) return false; // the pid was reused
  return true;
}

/**
 * Whether a live process holds the log's LOCK, by the check a writer makes before it takes one:
 * false when there is no LOCK, or its holder died, was a zombie, had its pid reused, or ran
 * before a reboot; a LOCK from another host counts while its heartbeat is fresh.
 *
 * @example
 * lockHeld("data/log") // true while a proxy records into data/log
 */
export function lockHeld(logDir: string): boolean {
  const path = join(logDir, "LOCK");
  const text = readText(path);
  if (text === undefined) return false;
  let key: string;
  try {
    key = realpathSync(logDir);
  } catch {
    return false;
  }
  return holderAlive(parseLock(text), key, path);
}

/**
 * Takes the log's LOCK or throws RecorderError (code LOCKED) naming the directory and the pid
 * that holds it. A LOCK left by a dead process is taken over and returned as `stale`.
 *
 * @example
 * const lock = acquireLock("data/log"); try { ... } finally { lock.release() }
 */
export function acquireLock(logDir: string): Lock {
  const key = realpathSync(logDir);
  const path = join(logDir, "LOCK");
  const self = selfHolder();
  const text = formatLock(self);
  let stale: LockHolder | undefined;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      writeFileSync(path, text, { flag: "wx" });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw ioError("create lock file", path, error);
    }
    const current = readText(path);
    if (current === undefined) continue; // released between our two calls: try again
    const holder = parseLock(current);
    if (holderAlive(holder, key, path)) {
      const where = holder.pid === process.pid ? "this process (another SegmentLog is open on it: close that one first)" : `process ${holder.pid}${holder.host ? ` on ${holder.host}` : ""}`;
      throw new RecorderError(
        "LOCKED",
        logDir,
        `recorder: the log in ${logDir} is already being written by ${where}; one writer per log. Stop that process, or use another --data directory. If no such process is running, delete ${path}.`,
      );
    }
    // Stale: replace it in one rename so that no reader ever sees a missing or half-written LOCK.
    const temp = `${path}.${process.pid}.tmp`;
    try {
      writeFileSync(temp, text);
      renameSync(temp, path);
    } catch (error) {
      throw ioError("take over stale lock file", path, error);
    }
    if (readText(path) === text) {
      stale = holder;
      break;
    }
  }
  if (readText(path) !== text) throw new RecorderError("LOCKED", logDir, `recorder: could not take ${path}: other processes keep taking it; one writer per log`);
  heldHere.add(key);
  let released = false;
  return {
    path,
    ...(stale ? { stale } : {}),
    heartbeat() {
      try {
        const now = new Date();
        utimesSync(path, now, now);
      } catch {
        // Best effort: a missing heartbeat only matters to a writer on another host.
      }
    },
    release() {
      if (released) return;
      released = true;
      heldHere.delete(key);
      // Only remove the LOCK if it is still ours (never another writer's after a takeover).
      if (readText(path) === text) {
        try {
          unlinkSync(path);
        } catch {
          // Already gone: nothing to release.
        }
      }
    },
  };
}
