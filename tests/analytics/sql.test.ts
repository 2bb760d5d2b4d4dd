/**
 * `forge sql`: one statement, a script on stdin (the notebooks), and the interactive prompt,
 * over a data directory and over a `forge analyze --db` file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { episode, scored } from "../../analytics/testing.ts";
import { openAnalytics, writeDatabase } from "../../analytics/session.ts";
import { openSqlSource, repl } from "../../analytics/sql.ts";
import { fakeLog } from "../../analytics/testing.ts";
import { openSegmentLog } from "../../records/index.ts";

const root = join(import.meta.dir, "..", "..");
async function forge(args: string[], stdin?: string) {
  const proc = Bun.spawn([process.execPath, join(root, "bin", "forge.ts"), ...args], { cwd: root, stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = [await new Response(proc.stdout).text(), await new Response(proc.stderr).text(), await proc.exited];
  return { out, err, code };
}

let dir: string;
let db: string;

beforeAll(async () => {
  // A real data directory (the recorder's log), and a database file written from it.
  dir = await mkdtemp(join(tmpdir(), "forge-sql-"));
  const log = await openSegmentLog(join(dir, "log"));
  for (const record of [
    ...scored({ id: "q-1.i0.a.0", task: "a", attempt: 0 }, "ok", 1),
    ...scored({ id: "q-1.i0.a.1", task: "a", attempt: 1 }, "failed", 0),
    ...episode("q-1.i0.a.0", "chat", ["bash"], [[{ id: "x", name: "bash", args: { command: "pytest" }, result: "1 passed" }]]),
  ])
    log.append(record);
  await log.close();
  (await openAnalytics(dir, {})).close(); // compacts, as forge analyze does before --db
  db = join(dir, "forge.duckdb");
  await writeDatabase(dir, db);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("forge sql", () => {
  test("one statement over a data directory", async () => {
    const { out, code } = await forge(["sql", dir, "SELECT run, task_id, n, c FROM tasks"]);
    expect(code).toBe(0);
    expect(out).toMatch(/^run\s+task_id\s+n\s+c$/m);
    expect(out).toMatch(/^q-1\s+a\s+2\s+1$/m);
    expect(out).toContain("(1 row)");
  }, 60_000);

  test("a notebook on stdin over a database file, every statement in order", async () => {
    const notebook = await readFile(join(root, "analytics", "notebooks", "01-pass-at-k.sql"), "utf8");
    const { out, err, code } = await forge(["sql", db], notebook);
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(out).toContain("pass@1");
    expect(out).toContain("overall_avg_score");
    const csv = await forge(["sql", db, "--csv"], "SELECT task_id, pass_at_k(n, c, 1) AS p FROM tasks; SELECT 'a,b' AS s;");
    expect(csv.out).toBe('task_id,p\na,0.5\ns\n"a,b"\n');
    const json = await forge(["sql", db, "--json", "SELECT 1 AS x, NULL AS y"]);
    expect(JSON.parse(json.out)).toEqual({ x: 1, y: null });
  }, 60_000);

  test("errors: bad SQL exits 1 naming the statement, a missing path exits 2", async () => {
    const bad = await forge(["sql", db], "SELECT 1; SELECT nope FROM rollouts;");
    expect(bad.code).toBe(1);
    expect(bad.err).toContain("statement 2:");
    expect(bad.err).toContain("nope");
    const missing = await forge(["sql", join(dir, "absent"), "SELECT 1"]);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("no such data directory or database file");
    // The database file is opened read-only: a notebook cannot damage it.
    const write = await forge(["sql", db, "DROP VIEW rollouts"]);
    expect(write.code).toBe(1);
    expect(write.err).toMatch(/read-only/i);
  }, 60_000);

  test("the interactive prompt joins lines up to ';', survives errors, lists tables", async () => {
    const source = await openSqlSource(db);
    const input = new PassThrough();
    const output = new PassThrough();
    const chunks: string[] = [];
    output.on("data", (chunk) => chunks.push(String(chunk)));
    const done = repl(source, "table", 50, input, output);
    input.write("SELECT count(*)\n");
    input.write("  AS n FROM rollouts;\n");
    input.write("SELECT nope;\n");
    input.write(".tables\n");
    input.write(".quit\n");
    input.end();
    await done;
    source.close();
    const text = chunks.join("");
    expect(text).toContain("...> n\n-\n2\n(1 row)\n"); // the second line continued the first
    expect(text).toContain("error: ");
    expect(text).toMatch(/rollouts\s+view/);
    expect(text).toMatch(/raw_call_records\s+base table/);
  });
});

test("a data directory opened by analytics and by forge sql sees the same views", async () => {
  const log = await fakeLog();
  await log.addSegment(scored({ id: "z", task: "t" }, "ok", 1));
  const session = await openAnalytics(log.dir, { readSegment: log.readSegment });
  session.close();
  const { out } = await forge(["sql", log.dir, "SELECT count(*) AS n FROM rollouts WHERE success"]);
  expect(out).toMatch(/^n\n-\n1\n/m);
  await rm(log.dir, { recursive: true, force: true });
}, 60_000);
