/**
 * A/B of the recorder against another commit, in one process: `SegmentLog.append` CPU per
 * record and bytes on disk per record (2 KB and 200 KB ModelCalls), then the CPU of open's
 * recovery scan and of `readRecords` over 30k records. Both writers run in interleaved rounds
 * on the same records (the machine's speed drifts too much for figures taken apart to compare).
 *
 *   bun bench/recorder-ab.ts [--base REF] [--rounds 7]
 *
 * The base commit is checked out in a temporary git worktree sharing this checkout's
 * node_modules, and removed afterwards.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import * as current from "../records/index.ts";
import { modelCallRecord } from "../records/testing.ts";
import { baseWorktree } from "./lib/base-worktree.ts";
import { benchFlags } from "./lib/flags.ts";

type Records = typeof current;
const ROOT = resolve(import.meta.dir, "..");
const { flag } = benchFlags();
const BASE = flag("base", "HEAD~1");
const ROUNDS = Number(flag("rounds", "7"));

const baseTree = baseWorktree(ROOT, BASE, "recorder-ab");
const baseRoot = baseTree.root;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const cpuMs = (since: NodeJS.CpuUsage) => {
  const c = process.cpuUsage(since);
  return (c.user + c.system) / 1000;
};

try {
  const base = (await import(join(baseRoot, "records", "index.ts"))) as Records;
  const sides: [string, Records][] = [
    ["base", base],
    ["this", current],
  ];
  console.log(`bench/recorder-ab: this checkout against ${baseTree.sha.slice(0, 10)}, median of ${ROUNDS} interleaved rounds`);
  for (const [bodyBytes, count] of [
    [2 * 1024, 20_000],
    [200 * 1024, 1_000],
  ] as const) {
    const records = Array.from({ length: 16 }, (_, i) => modelCallRecord("bench", i + 1, `bench-${i}`, bodyBytes));
    const us: Record<string, number[]> = { base: [], this: [] };
    const perRecord: Record<string, number> = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, lib] of round % 2 ? [...sides].reverse() : sides) {
        const dir = mkdtempSync(join(tmpdir(), "forge-bench-recorder-ab-log-"));
        const log = await lib.openSegmentLog(dir, { groupCommitMs: 50 });
        const start = process.cpuUsage();
        for (let i = 0; i < count; i++) {
          log.append(records[i % records.length]!);
          if (i % 256 === 255) await new Promise<void>((r) => setImmediate(r));
        }
        us[name]!.push((cpuMs(start) * 1000) / count);
        const stats = log.stats();
        perRecord[name] = (stats.bytesWritten - 8) / stats.records;
        await log.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
    const b = median(us.base!);
    const t = median(us.this!);
    console.log(
      `  ${bodyBytes / 1024} KB append: CPU ${b.toFixed(2)} → ${t.toFixed(2)} µs (this / base ${(t / b).toFixed(3)}); bytes per record ${perRecord.base!.toFixed(0)} → ${perRecord.this!.toFixed(0)} (${perRecord.this! - perRecord.base! >= 0 ? "+" : ""}${(perRecord.this! - perRecord.base!).toFixed(0)})`,
    );
  }
  // Reading back: each side's own log of 30k 2 KB records.
  const records = Array.from({ length: 16 }, (_, i) => modelCallRecord("bench", i + 1, `bench-${i}`, 2048));
  const dirs: Record<string, string> = {};
  for (const [name, lib] of sides) {
    dirs[name] = mkdtempSync(join(tmpdir(), "forge-bench-recorder-ab-read-"));
    const log = await lib.openSegmentLog(dirs[name]!);
    for (let i = 0; i < 30_000; i++) log.append(records[i % records.length]!);
    await log.close();
  }
  const open: Record<string, number[]> = { base: [], this: [] };
  const read: Record<string, number[]> = { base: [], this: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, lib] of round % 2 ? [...sides].reverse() : sides) {
      let start = process.cpuUsage();
      const log = await lib.openSegmentLog(dirs[name]!);
      open[name]!.push(cpuMs(start));
      await log.close();
      start = process.cpuUsage();
      for await (const _ of lib.readRecords(dirs[name]!)) {
        // decoding every record is the work measured
      }
      read[name]!.push(cpuMs(start));
    }
  }
  for (const [label, m] of [
    ["open (recovery scan), 30k x 2 KB", open],
    ["readRecords, 30k x 2 KB", read],
  ] as const) {
    const b = median(m.base!);
    const t = median(m.this!);
    console.log(`  ${label}: CPU ${b.toFixed(1)} → ${t.toFixed(1)} ms (this / base ${(t / b).toFixed(2)})`);
  }
  for (const dir of Object.values(dirs)) rmSync(dir, { recursive: true, force: true });
} finally {
  baseTree.remove();
}
