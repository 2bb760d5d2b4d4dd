/** The example notebooks in analytics/notebooks/ run against a `--db` database file. */
import { expect, test } from "bun:test";
import { readdir, readFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { episode, scored } from "../analytics/fixtures.ts";
import { openAnalytics, writeDatabase } from "../analytics/session.ts";
import { fakeLog } from "../analytics/testing.ts";

const notebooks = join(import.meta.dir, "..", "analytics", "notebooks");

test("every notebook statement runs", async () => {
  const log = await fakeLog();
  await log.addSegment([
    ...scored({ id: "a", task: "A", harness: "codex" }, "ok", 1),
    ...scored({ id: "b", task: "A", harness: "codex", attempt: 1 }, "failed", 0),
    ...episode("a", "responses", ["shell"], [[{ id: "x", name: "shell", args: { command: ["bash", "-lc", "pytest"] }, result: "boom", isError: true }]], true),
    ...episode("b", "chat", ["bash", "Edit"], [[{ id: "y", name: "Edit", args: {}, result: "ok" }]]),
  ]);
  (await openAnalytics(log.dir, { readSegment: log.readSegment })).close();
  const out = await mkdtemp(join(tmpdir(), "forge-nb-"));
  const path = join(out, "forge.duckdb");
  await writeDatabase(log.dir, path);
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  try {
    const files = (await readdir(notebooks)).filter((f) => f.endsWith(".sql")).sort();
    expect(files.length).toBeGreaterThanOrEqual(3);
    for (const file of files) {
      const statements = await connection.extractStatements(await readFile(join(notebooks, file), "utf8"));
      for (let i = 0; i < statements.count; i++) {
        try {
          await (await statements.prepare(i)).run();
        } catch (error) {
          throw new Error(`${file}, statement ${i + 1}: ${(error as Error).message}`);
        }
      }
    }
  } finally {
    connection.closeSync();
    instance.closeSync();
    await rm(out, { recursive: true, force: true });
    await rm(log.dir, { recursive: true, force: true });
  }
});
