/**
 * The example notebooks in analytics/notebooks/ run as their instructions say: through
 * `forge sql` over a `forge analyze --db` database file.
 */
import { expect, test } from "bun:test";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { episode, scored } from "../../analytics/testing.ts";
import { openAnalytics, writeDatabase } from "../../analytics/session.ts";
import { fakeLog } from "../../analytics/testing.ts";

const root = join(import.meta.dir, "..", "..");
const notebooks = join(root, "analytics", "notebooks");

async function forgeSql(target: string, script: string) {
  const proc = Bun.spawn([process.execPath, join(root, "bin", "forge.ts"), "sql", target], { cwd: root, stdin: new TextEncoder().encode(script), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = [await new Response(proc.stdout).text(), await new Response(proc.stderr).text(), await proc.exited];
  return { out, err, code };
}

test("every notebook runs through forge sql, statement by statement", async () => {
  const log = await fakeLog();
  await log.addSegment([
    ...scored({ id: "q-1.i0.A.0", task: "A", harness: "codex" }, "ok", 1),
    ...scored({ id: "q-1.i0.A.1", task: "A", harness: "codex", attempt: 1 }, "failed", 0),
    ...episode("q-1.i0.A.0", "responses", ["shell"], [[{ id: "x", name: "shell", args: { command: ["bash", "-lc", "pytest"] }, result: "boom", isError: true }]], true),
    ...episode("q-1.i0.A.1", "chat", ["bash", "Edit"], [[{ id: "y", name: "Edit", args: { file_path: "a.py" }, result: "ok" }]]),
  ]);
  (await openAnalytics(log.dir, { readSegment: log.readSegment })).close();
  const out = await mkdtemp(join(tmpdir(), "forge-nb-"));
  const db = join(out, "forge.duckdb");
  await writeDatabase(log.dir, db);
  try {
    const files = (await readdir(notebooks)).filter((f) => f.endsWith(".sql")).sort();
    expect(files.length).toBeGreaterThanOrEqual(3);
    for (const file of files) {
      const script = await readFile(join(notebooks, file), "utf8");
      expect(script).toContain(`forge sql`);
      const result = await forgeSql(db, script);
      if (result.code !== 0) throw new Error(`${file}: ${result.err}`);
      expect(result.err).toBe("");
      expect(result.out).toContain("row");
    }
  } finally {
    await rm(out, { recursive: true, force: true });
    await rm(log.dir, { recursive: true, force: true });
  }
}, 120_000);
