/**
 * forge export over a generated log of 100,000 calls (10,000 rollouts × 10 turns, 16 open at a
 * time, 2,000-token system prompt, 50-token turns): time, peak RSS and open-rollout bound.
 *
 *   bun bench/export.ts [--calls 100000] [--format verl|jsonl]
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openSegmentLog, readRecords } from "../records/index.ts";
import { exportTrajectories } from "../trajectories/index.ts";
import { type ExportFormat } from "../trajectories/export-options.ts";
import { rolloutRecords } from "../trajectories/testing.ts";

const { values } = parseArgs({ options: { calls: { type: "string", default: "100000" }, format: { type: "string", default: "verl" } } });
const turns = 10;
const rollouts = Math.ceil(Number(values.calls) / turns);
const concurrent = 16;
const dir = mkdtempSync(join(tmpdir(), "forge-bench-export-"));
try {
  const log = await openSegmentLog(dir);
  const t0 = performance.now();
  let batch: ReturnType<typeof rolloutRecords>[] = [];
  const flush = () => {
    const lists = batch.map((r) => [...r.records]);
    while (lists.some((l) => l.length > 0)) for (const l of lists) if (l.length > 0) log.append(l.shift()!);
    batch = [];
  };
  for (let i = 0; i < rollouts; i++) {
    const r = rolloutRecords(`r-${i}`, { task: `t${i % 1000}`, group: `g${i % 1000}` });
    let prompt = Array.from({ length: 2000 }, (_, k) => (k * 31) % 150000);
    for (let t = 0; t < turns; t++) {
      const completion = Array.from({ length: 50 }, (_, k) => (k * 7 + t + i) % 150000);
      r.call({ prompt, completion });
      prompt = [...prompt, ...completion, 198, 151644, 872];
    }
    r.finish(i % 3 === 0 ? 1 : 0);
    batch.push(r);
    if (batch.length === concurrent) flush();
  }
  flush();
  await log.close();
  const logBytes = log.stats().bytesWritten;
  console.log(`wrote ${rollouts * turns} calls (${(logBytes / 2 ** 20).toFixed(0)} MiB of log) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const rssBefore = process.memoryUsage.rss();
  const out = join(dir, "exports", values.format === "jsonl" ? "b.jsonl" : "b.parquet");
  const t1 = performance.now();
  const m = await exportTrajectories(readRecords(dir), { format: values.format as ExportFormat, out });
  const seconds = (performance.now() - t1) / 1000;
  console.log(
    `export ${values.format}: ${m.calls.total} calls, ${m.rows} rows, ${seconds.toFixed(1)} s (${Math.round(m.calls.total / seconds)} calls/s); ` +
      `rss before ${(rssBefore / 2 ** 20).toFixed(0)} MiB, peak ${(m.peak_rss_bytes / 2 ** 20).toFixed(0)} MiB; max open rollouts ${m.rollouts.max_open}; ` +
      `output ${(statSync(out).size / 2 ** 20).toFixed(0)} MiB`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
