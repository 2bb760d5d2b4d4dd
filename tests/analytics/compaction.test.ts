/**
 * Incremental compaction: a second run reads only new segments; the open segment (live
 * writer in LOCK) is re-read each run and never frozen; records joined across segments;
 * the `--db` file works on its own; the CLI on an empty data dir.
 */
import { describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { analyzeCommand } from "../../analytics/cli.ts";
import { readManifest, ROWS_VERSION } from "../../analytics/compact.ts";
import { episode, resultRecord, rolloutRecord, scored } from "../../analytics/testing.ts";
import { queryRows } from "../../analytics/metrics.ts";
import { openAnalytics, writeDatabase } from "../../analytics/session.ts";
import { fakeLog } from "../../analytics/testing.ts";
import { UsageError } from "../../lib/index.ts";

async function count(dir: string, readSegment: Parameters<typeof openAnalytics>[1]): Promise<{ rollouts: number; finished: number; reads?: string[] }> {
  const session = await openAnalytics(dir, readSegment);
  try {
    const [row] = await queryRows(session.connection, "SELECT count(*) AS rollouts, count(status) AS finished FROM rollouts");
    return row as { rollouts: number; finished: number };
  } finally {
    session.close();
  }
}

describe("incremental compaction", () => {
  test("a second run reads only the new segments", async () => {
    const log = await fakeLog();
    await log.addSegment([rolloutRecord({ id: "r1", task: "A" }), ...episode("r1", "chat", ["bash"], [[{ id: "t", name: "bash", args: { command: "ls" }, result: "a" }]])]);
    expect(await count(log.dir, { readSegment: log.readSegment })).toEqual({ rollouts: 1, finished: 0 });
    expect(log.reads).toEqual(["seg-00000001.forge"]);

    // The result lands in the next segment: joined across segments.
    await log.addSegment([resultRecord("r1", "ok", 1), ...scored({ id: "r2", task: "B" }, "failed", 0)]);
    expect(await count(log.dir, { readSegment: log.readSegment })).toEqual({ rollouts: 2, finished: 2 });
    expect(log.reads).toEqual(["seg-00000001.forge", "seg-00000002.forge"]);

    expect(await count(log.dir, { readSegment: log.readSegment })).toEqual({ rollouts: 2, finished: 2 });
    expect(log.reads).toHaveLength(2);

    const manifest = await readManifest(join(log.dir, "parquet"));
    expect(Object.keys(manifest.segments)).toEqual(["seg-00000001.forge", "seg-00000002.forge"]);
    expect(manifest.segments["seg-00000001.forge"]!.records).toBe(3);
    expect((await readdir(join(log.dir, "parquet", "rollout_records"))).sort()).toEqual(["seg-00000001.parquet", "seg-00000002.parquet"]);
  });

  test("parquet written by another version of the rows is rebuilt, not mixed in", async () => {
    const log = await fakeLog();
    await log.addSegment(scored({ id: "r1", task: "A" }, "ok", 1));
    expect((await count(log.dir, { readSegment: log.readSegment })).rollouts).toBe(1);
    // As an older forge left it: no rows version, a table directory the current rows do not write.
    const parquet = join(log.dir, "parquet");
    const manifest = await readManifest(parquet);
    await writeFile(join(parquet, "manifest.json"), JSON.stringify({ version: 1, segments: manifest.segments }));
    expect((await count(log.dir, { readSegment: log.readSegment })).rollouts).toBe(1);
    expect(log.reads).toEqual(["seg-00000001.forge", "seg-00000001.forge"]);
    expect((await readManifest(parquet)).rows).toBe(ROWS_VERSION);
  });

  test("the segment a live writer holds is re-read each run and compacted once closed", async () => {
    const log = await fakeLog();
    await log.addSegment(scored({ id: "r1", task: "A" }, "ok", 1));
    await log.addSegment(scored({ id: "r2", task: "A" }, "ok", 1));
    // A live process other than this one names itself in LOCK (this process's own pid counts only
    // while it has the log open itself).
    const writer = Bun.spawn(["sleep", "600"]);
    try {
      await writeFile(join(log.dir, "log", "LOCK"), `${writer.pid}\n`);
      expect((await count(log.dir, { readSegment: log.readSegment })).rollouts).toBe(2);
      expect((await count(log.dir, { readSegment: log.readSegment })).rollouts).toBe(2);
      expect(log.reads).toEqual(["seg-00000001.forge", "seg-00000002.forge", "seg-00000002.forge"]);
      expect(Object.keys((await readManifest(join(log.dir, "parquet"))).segments)).toEqual(["seg-00000001.forge"]);
      expect(await readdir(join(log.dir, "parquet", "rollout_records"))).toContain("seg-00000002.open.parquet");

      await rm(join(log.dir, "log", "LOCK"));
      expect((await count(log.dir, { readSegment: log.readSegment })).rollouts).toBe(2);
      expect((await readdir(join(log.dir, "parquet", "rollout_records"))).sort()).toEqual(["seg-00000001.parquet", "seg-00000002.parquet"]);
      expect(log.reads).toHaveLength(4);
    } finally {
      writer.kill();
    }
  });
});

describe("--db", () => {
  test("the database file holds the data, views and macros without the data dir", async () => {
    const log = await fakeLog();
    await log.addSegment([...scored({ id: "a", task: "A" }, "ok", 1), ...scored({ id: "b", task: "A", attempt: 1 }, "failed", 0)]);
    (await openAnalytics(log.dir, { readSegment: log.readSegment })).close();
    const out = await mkdtemp(join(tmpdir(), "forge-db-"));
    const path = join(out, "forge.duckdb");
    await writeDatabase(log.dir, path);
    await rm(log.dir, { recursive: true, force: true });
    const instance = await DuckDBInstance.create(path);
    const connection = await instance.connect();
    try {
      const rows = await queryRows(connection, "SELECT task_id, n, c, pass_at_k(n, c, 1) AS p1, pass_hat_k(n, c, 2) AS h2 FROM tasks");
      expect(rows).toEqual([{ task_id: "A", n: 2, c: 1, p1: 0.5, h2: 0 }]);
      const views = await queryRows(connection, "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name");
      expect(views.map((v) => v.view_name)).toEqual(["all_rollouts", "call_bodies", "calls", "rollout_behaviour", "rollouts", "tasks", "tool_calls", "tool_errors", "tool_files", "validation_rollouts"]);
      expect(await queryRows(connection, "SELECT count(*) AS n FROM samples")).toEqual([{ n: 0 }]);
    } finally {
      connection.closeSync();
      instance.closeSync();
      await rm(out, { recursive: true, force: true });
    }
  });
});

describe("forge analyze", () => {
  test("an empty data dir gives empty results, not an error", async () => {
    const dir = await mkdtemp(join(tmpdir(), "forge-empty-"));
    const lines: string[] = [];
    const log = console.log;
    console.log = (line: string) => lines.push(line);
    try {
      expect(await analyzeCommand(["--data", dir, "--json", "--k", "1,5"])).toBe(0);
    } finally {
      console.log = log;
      await rm(dir, { recursive: true, force: true });
    }
    const analysis = JSON.parse(lines.join("\n"));
    expect(analysis.totals.rollouts).toBe(0);
    expect(analysis.pass).toEqual([]);
    expect(analysis.options).toEqual({ scope: {}, by: ["experiment", "run", "iteration"], ks: [1, 5], ksFrom: "request", convention: "unbiased", threshold: null, missingTrials: null });
  });

  test("bad usage names the flag", async () => {
    await expect(analyzeCommand([])).rejects.toThrow(/--data DIR is required/);
    await expect(analyzeCommand(["--data", "/", "--by", "color"])).rejects.toThrow(UsageError);
    await expect(analyzeCommand(["--data", "/", "--convention", "best"])).rejects.toThrow(/--convention must be unbiased or claw/);
    await expect(analyzeCommand(["--data", "/", "--k", "0"])).rejects.toThrow(/--k must be positive integers/);
    await expect(analyzeCommand(["--data", "/", "--missing-trials", "drop"])).rejects.toThrow(/--missing-trials must be exclude or fail/);
    await expect(analyzeCommand(["--data", "/", "--threshold", "high"])).rejects.toThrow(/--threshold must be a number/);
    await expect(analyzeCommand(["--data", "/", "--iteration=x"])).rejects.toThrow(/--iteration must be an integer/);
    await expect(analyzeCommand(["--data", "/nonexistent-forge-dir"])).rejects.toThrow(/no such directory/);
  });
});

describe("samples", () => {
  test("reads DIR/exports/*.parquet when present, else is empty with the veRL columns", async () => {
    const log = await fakeLog();
    const empty = await openAnalytics(log.dir, { readSegment: log.readSegment });
    try {
      const columns = await queryRows(empty.connection, "SELECT column_name FROM (DESCRIBE samples)");
      expect(columns.map((c) => c.column_name)).toContain("response_mask");
      expect(await queryRows(empty.connection, "SELECT count(*) AS n FROM samples")).toEqual([{ n: 0 }]);
      await mkdir(join(log.dir, "exports"));
      await empty.connection.run(
        `COPY (SELECT 'g1' AS uid, 'r1' AS rollout_id, [1, 2] AS prompt_ids, [3] AS response_ids, [1] AS response_mask, 1.0 AS reward)
         TO '${join(log.dir, "exports", "batch.parquet")}' (FORMAT parquet)`,
      );
    } finally {
      empty.close();
    }
    const full = await openAnalytics(log.dir, { readSegment: log.readSegment });
    try {
      expect(await queryRows(full.connection, "SELECT uid, response_ids FROM samples")).toEqual([{ uid: "g1", response_ids: [3] }]);
    } finally {
      full.close();
    }
  });
});
