/**
 * End to end through the real recorder: records written with `openSegmentLog` (docs/contracts.md),
 * then `forge analyze --data DIR --json --report --db`, twice, the second run reading no segment.
 * Skipped, saying why, until proxy/index.ts exports the recorder.
 */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { analyzeCommand } from "../analytics/cli.ts";
import { readManifest } from "../analytics/compact.ts";
import { episode, scored } from "../analytics/fixtures.ts";
import type { Record } from "../schemas/index.ts";

type SegmentLog = { append(record: Record): unknown; sync(): Promise<void>; close(): Promise<void> };
type Recorder = { openSegmentLog?: (dir: string, options?: { segmentMaxBytes?: number }) => Promise<SegmentLog> };

const proxyIndex = join(import.meta.dir, "..", "proxy", "index.ts");
const recorder: Recorder = existsSync(proxyIndex) ? ((await import(proxyIndex)) as Recorder) : {};
const haveRecorder = typeof recorder.openSegmentLog === "function";
if (!haveRecorder) console.warn("analytics-e2e: proxy/index.ts does not export openSegmentLog yet; skipping the end-to-end test");

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
  test.skipIf(!haveRecorder)("compacts, reports, and a second run reads nothing new", async () => {
    const dir = await mkdtemp(join(tmpdir(), "forge-e2e-analytics-"));
    try {
      // Small segments so the log spans several files.
      const log = await recorder.openSegmentLog!(join(dir, "log"), { segmentMaxBytes: 4096 });
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
});
