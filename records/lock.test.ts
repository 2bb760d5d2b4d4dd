import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { RecorderError } from "./errors.ts";
import { lockHeld } from "./lock.ts";
import { openSegmentLog } from "./segment-log.ts";
import { recordsOfEveryKind, scratchDir } from "./testing.ts";

let scratch = scratchDir();
afterEach(() => {
  scratch.cleanup();
  scratch = scratchDir();
});

const lockPath = () => join(scratch.dir, "log", "LOCK");
const lockPid = () => Number.parseInt(readFileSync(lockPath(), "utf8"), 10);

function writeLock(lines: (string | number)[]): void {
  mkdirSync(join(scratch.dir, "log"), { recursive: true });
  writeFileSync(lockPath(), `${lines.join("\n")}\n`);
}

async function deadPid(): Promise<number> {
  const child = Bun.spawn(["true"]);
  await child.exited;
  return child.pid;
}

describe("LOCK", () => {
  test("holds the writer's pid and is removed at close", async () => {
    const log = await openSegmentLog(scratch.dir);
    expect(lockPid()).toBe(process.pid);
    await log.close();
    expect(existsSync(lockPath())).toBe(false);
  });

  test("a second writer in the same process is refused", async () => {
    const log = await openSegmentLog(scratch.dir);
    await expect(openSegmentLog(scratch.dir)).rejects.toThrow(/already being written by this process/);
    await log.close();
    const again = await openSegmentLog(scratch.dir);
    await again.close();
  });

  test("a writer in another live process is refused, naming the directory and its pid", async () => {
    const holder = Bun.spawn(["bun", "-e", `const { openSegmentLog } = await import(${JSON.stringify(join(import.meta.dir, "segment-log.ts"))}); await openSegmentLog(${JSON.stringify(scratch.dir)}); console.log("held"); await Bun.sleep(20000);`], { stdout: "pipe" });
    try {
      const reader = holder.stdout.getReader();
      const { value } = await reader.read();
      expect(new TextDecoder().decode(value)).toContain("held");
      let error: unknown;
      try {
        await openSegmentLog(scratch.dir);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(RecorderError);
      expect((error as RecorderError).code).toBe("LOCKED");
      expect((error as Error).message).toContain(join(scratch.dir, "log"));
      expect((error as Error).message).toContain(`process ${holder.pid}`);
    } finally {
      holder.kill(9);
      await holder.exited;
    }
    // Its holder is dead now: the lock is stale and taken over.
    const log = await openSegmentLog(scratch.dir);
    expect(lockPid()).toBe(process.pid);
    await log.close();
  });

  test("a stale lock of a dead pid is taken over", async () => {
    writeLock([await deadPid(), hostname()]);
    const log = await openSegmentLog(scratch.dir);
    expect(lockPid()).toBe(process.pid);
    log.append(recordsOfEveryKind()[0]!);
    await log.close();
  });

  test("a lock naming this pid from an earlier incarnation (container restart) is taken over", async () => {
    writeLock([process.pid, hostname(), "", "1"]);
    const log = await openSegmentLog(scratch.dir);
    await log.close();
  });

  test("a live pid that has been reused by another process (start time differs) is taken over", async () => {
    writeLock([process.ppid, hostname(), readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim(), "1"]);
    const log = await openSegmentLog(scratch.dir);
    await log.close();
  });

  test("a lock from before a reboot is taken over", async () => {
    writeLock([process.ppid, hostname(), "00000000-0000-0000-0000-000000000000"]);
    const log = await openSegmentLog(scratch.dir);
    await log.close();
  });

  test("a lock from another host counts as live while its heartbeat is fresh", async () => {
    writeLock([1, "some-other-host", "11111111-1111-1111-1111-111111111111"]);
    await expect(openSegmentLog(scratch.dir)).rejects.toThrow(/process 1 on some-other-host/);
    const old = new Date(Date.now() - 60_000);
    utimesSync(lockPath(), old, old);
    const log = await openSegmentLog(scratch.dir);
    await log.close();
  });

  test("garbage in LOCK counts as stale", async () => {
    writeLock(["not a pid"]);
    const log = await openSegmentLog(scratch.dir);
    await log.close();
  });
});

describe("lockHeld (what readers such as analytics ask)", () => {
  const logDir = () => join(scratch.dir, "log");

  test("true while a writer in this process has the log open, false once it closed", async () => {
    expect(lockHeld(logDir())).toBe(false);
    const log = await openSegmentLog(scratch.dir);
    expect(lockHeld(logDir())).toBe(true);
    await log.close();
    expect(lockHeld(logDir())).toBe(false);
  });

  test("a live other process is a writer; a dead pid, a reused pid, a reboot and this pid without an open log are not", async () => {
    const bootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    writeLock([process.ppid]);
    expect(lockHeld(logDir())).toBe(true);
    writeLock([await deadPid()]);
    expect(lockHeld(logDir())).toBe(false);
    writeLock([process.ppid, hostname(), bootId, "1"]);
    expect(lockHeld(logDir())).toBe(false);
    writeLock([process.ppid, hostname(), "00000000-0000-0000-0000-000000000000"]);
    expect(lockHeld(logDir())).toBe(false);
    writeLock([process.pid]);
    expect(lockHeld(logDir())).toBe(false);
    writeLock(["not a pid"]);
    expect(lockHeld(logDir())).toBe(false);
  });
});
