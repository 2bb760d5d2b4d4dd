/**
 * End to end through the real recorder: records written with `openSegmentLog` (docs/contracts.md),
 * then `forge analyze --data DIR --json --report --db`, twice, the second run reading no segment.
 */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { appendFile, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { analyzeCommand } from "../../analytics/cli.ts";
import { readManifest } from "../../analytics/compact.ts";
import { episode, scored } from "../../analytics/testing.ts";

import { openSegmentLog } from "../../records/index.ts";

async function capture(run: () => Promise<number>): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const log = console.log;
  console.log = (...parts: unknown[]) => lines.push(parts.join(" "));
  try {
    return { code: await run(), out: lines.join("\n") };
  } finally {
    console.log = log;
  }
}

describe("forge analyze over a recorded log", () => {
  test("compacts, reports, and a second run reads nothing new", async () => {
    const dir = await mkdtemp(join(tmpdir(), "forge-e2e-analytics-"));
    try {
      // Small segments so the log spans several files.
      const log = await openSegmentLog(join(dir, "log"), { segmentMaxBytes: 4096 });
      const tools = ["bash", "Edit"];
      for (const [i, harness] of ["codex", "claude-code", "codex", "claude-code"].entries()) {
        const id = `r${i}`;
        const records = [
          ...scored({ id, task: `t${i % 2}`, harness, attempt: Math.floor(i / 2) }, i === 3 ? "failed" : "ok", i === 3 ? 0 : 1),
          ...episode(id, harness === "codex" ? "responses" : "anthropic", tools, [
            [{ id: `${id}-e`, name: "Edit", args: { file_path: "a" }, result: "ok", isError: false }],
            [{ id: `${id}-t`, name: "bash", args: { command: "npm test" }, result: "ok", isError: false }],
          ], i % 2 === 0),
        ];
        // The result record comes after the calls, as the proxy writes them.
        for (const record of [records[0]!, ...records.slice(2), records[1]!]) log.append(record);
      }
      await log.sync();
      await log.close();

      const report = join(dir, "report.html");
      const db = join(dir, "forge.duckdb");
      const first = await capture(() => analyzeCommand(["--data", dir, "--json", "--k", "1,2", "--by", "harness", "--report", report, "--db", db]));
      expect(first.code).toBe(0);
      const analysis = JSON.parse(first.out);
      expect(analysis.totals.rollouts).toBe(4);
      expect(analysis.totals.tool_calls).toBe(8);
      expect(analysis.pass.map((r: { harness: string; "pass@1": number }) => [r.harness, r["pass@1"]])).toEqual([
        ["claude-code", 0.5], // t1 ok, t1 failed → one task, c = 1 of n = 2
        ["codex", 1],
      ]);
      expect(analysis.behaviour.every((r: { self_verification: number }) => r.self_verification === 1)).toBe(true);
      expect(analysis.compaction.compacted.length).toBeGreaterThan(1);
      expect(await readFile(report, "utf8")).toContain('<svg class="chart"');
      expect(existsSync(db)).toBe(true);

      const second = await capture(() => analyzeCommand(["--data", dir, "--json"]));
      const again = JSON.parse(second.out);
      expect(again.compaction.compacted).toEqual([]);
      expect(again.compaction.records).toBe(0);
      expect(again.totals.rollouts).toBe(4);
      expect(Object.keys((await readManifest(join(dir, "parquet"))).segments)).toHaveLength(analysis.compaction.compacted.length);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("while the writer is live, its segment is re-read each run; after close it is compacted", async () => {
    const dir = await mkdtemp(join(tmpdir(), "forge-e2e-open-"));
    try {
      const log = await openSegmentLog(dir);
      for (const record of scored({ id: "a", task: "A" }, "ok", 1)) log.append(record);
      await log.sync();
      const run = async () => JSON.parse((await capture(() => analyzeCommand(["--data", dir, "--json"]))).out);
      const first = await run();
      expect(first.compaction.reread).toHaveLength(1);
      expect(first.totals.rollouts).toBe(1);
      for (const record of scored({ id: "b", task: "A", attempt: 1 }, "failed", 0)) log.append(record);
      await log.sync();
      const second = await run();
      expect(second.compaction.reread).toEqual(first.compaction.reread);
      expect(second.totals.rollouts).toBe(2);
      expect((await readManifest(join(dir, "parquet"))).segments).toEqual({});
      await log.close();
      const third = await run();
      expect(third.compaction.compacted).toEqual(first.compaction.reread);
      expect(third.compaction.reread).toEqual([]);
      expect(third.pass[0]["pass@1"]).toBe(0.5);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("a torn tail is read up to the last whole record; once the next writer cuts it, the segment is recompacted without duplicates", async () => {
    const dir = await mkdtemp(join(tmpdir(), "forge-e2e-torn-"));
    try {
      const log = await openSegmentLog(dir);
      for (const record of [...scored({ id: "a", task: "A" }, "ok", 1), ...scored({ id: "b", task: "A", attempt: 1 }, "failed", 0)]) log.append(record);
      await log.close();
      const [segment] = (await readdir(join(dir, "log"))).filter((name) => name.endsWith(".forge"));
      // A crash mid-append: the first 9 of a frame header's 16 bytes (sync marker, then a length).
      await appendFile(join(dir, "log", segment!), new Uint8Array([0xf5, 0x46, 0x52, 0x4d, 200, 0, 0, 0, 9]));
      const run = async () => JSON.parse((await capture(() => analyzeCommand(["--data", dir, "--json"]))).out);
      const first = await run();
      expect(first.totals.rollouts).toBe(2);
      expect(first.compaction.compacted).toEqual([segment]);
      // The next writer cuts the torn tail on open.
      const next = await openSegmentLog(dir);
      expect(next.recovered.some((r) => r.truncated)).toBe(true);
      await next.close();
      const second = await run();
      expect(second.compaction.compacted).toContain(segment);
      expect(second.totals.rollouts).toBe(2);
      expect(second.pass[0]["pass@1"]).toBe(0.5);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("terminal tables and a progress line per segment on stderr", async () => {
    const dir = await mkdtemp(join(tmpdir(), "forge-e2e-tty-"));
    const errors: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    try {
      const log = await openSegmentLog(dir, { segmentMaxBytes: 200 });
      for (let i = 0; i < 6; i++) for (const record of scored({ id: `r${i}`, task: `t${i % 3}`, harness: i % 2 ? "codex" : "pi", attempt: i }, i % 3 ? "ok" : "failed", i % 3 ? 1 : 0)) log.append(record);
      await log.close();
      process.stderr.write = ((chunk: string) => (errors.push(String(chunk)), true)) as typeof process.stderr.write;
      const { code, out } = await capture(() => analyzeCommand(["--data", dir, "--by", "harness", "--k", "1,2"]));
      process.stderr.write = write;
      expect(code).toBe(0);
      expect(out).toMatch(/^harness\s+tasks\s+scored\s+rollouts/m);
      // One trial per (harness, task) and k up to 2: no task is scored, and the table says so.
      expect(out).toMatch(/^codex\s+3\s+0\s+3\s.*n\/a/m);
      expect(out).toContain("6 task(s) not scored: fewer than 2 valid trials");
      expect(out).toContain("behaviour");
      const segments = (await readdir(join(dir, "log"))).filter((name) => name.endsWith(".forge"));
      expect(segments.length).toBeGreaterThan(1);
      expect(errors.filter((line) => line.startsWith("compacting "))).toHaveLength(segments.length);
    } finally {
      process.stderr.write = write;
      await rm(dir, { recursive: true, force: true });
    }
  });
});
