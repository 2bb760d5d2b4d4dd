/**
 * pass@k and pass^k over 1,000,000 rollouts: DuckDB (the macros and the grouped query that
 * `forge analyze` runs, over parquet) versus a straightforward TypeScript loop over the same
 * rows, in the same run. Prints both times and the ratio, and checks the results agree.
 *
 *   bun bench/passk.ts [--rollouts 1000000] [--tasks 10000]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { DuckDBInstance } from "@duckdb/node-api";
import { macroSql } from "../analytics/macros.ts";
import { passKSql, queryRows } from "../analytics/metrics.ts";

const { values } = parseArgs({ options: { rollouts: { type: "string", default: "1000000" }, tasks: { type: "string", default: "10000" } } });
const rolloutCount = Number(values.rollouts);
const taskCount = Number(values.tasks);
const ks = [1, 5, 10];

const dir = await mkdtemp(join(tmpdir(), "forge-bench-passk-"));
const instance = await DuckDBInstance.create(":memory:");
const connection = await instance.connect();
for (const sql of macroSql) await connection.run(sql);

// Synthetic rollouts: each task has its own difficulty; 2% infra errors, 3% timeouts.
// setseed + random() makes the data reproducible.
process.stderr.write(`generating ${rolloutCount} rollouts over ${taskCount} tasks…\n`);
const file = join(dir, "rollouts.parquet");
await connection.run(`SELECT setseed(0.42)`);
await connection.run(`
  COPY (
    WITH base AS (
      SELECT i, 'task-' || (i % ${taskCount}) AS task_id, (i // ${taskCount})::INTEGER AS attempt,
             ((hash(i % ${taskCount}) % 1000) / 1000.0) AS difficulty, random() AS u, random() AS v
      FROM range(${rolloutCount}) t(i))
    SELECT 'r' || i AS rollout_id, 'exp' AS experiment, 0 AS iteration, task_id, attempt, 'codex' AS harness, 0 AS policy_version,
           1000.0 + i AS created_unix_ms,
           CASE WHEN v < 0.02 THEN 'infra_error' WHEN v < 0.05 THEN 'timeout' WHEN u > difficulty THEN 'ok' ELSE 'failed' END AS status,
           CASE WHEN v >= 0.05 AND u > difficulty THEN 1.0 ELSE 0.0 END AS reward
    FROM base) TO '${file}' (FORMAT parquet)`);
await connection.run(`
  CREATE VIEW rollouts AS SELECT *, 'run-1' AS run, NULL::INTEGER AS planned_k, NULL::VARCHAR AS recorded_missing_trials, 1.0 AS threshold,
    is_valid(status) AS valid, is_valid(status) AND is_success(status, reward, 1.0) AS success,
    CASE WHEN is_valid(status) THEN CASE WHEN status = 'ok' THEN reward ELSE 0.0 END END AS score
  FROM read_parquet('${file}')`);

// --- DuckDB: the query forge analyze runs.
const sql = passKSql({ by: [], ks, convention: "unbiased" });
await queryRows(connection, sql); // warm the parquet metadata cache once
const duckStart = performance.now();
const [duck] = await queryRows(connection, sql);
const duckMs = performance.now() - duckStart;

// Claw-Eval (every graded trial, padded to k): timed for reference.
const clawStart = performance.now();
await queryRows(connection, passKSql({ by: [], ks, convention: "claw" }));
const clawMs = performance.now() - clawStart;

// --- TypeScript: the same rows, fetched once (not timed as part of the loop), then a plain loop.
const fetchStart = performance.now();
const reader = await connection.runAndReadAll(`SELECT task_id, status, reward FROM read_parquet('${file}')`);
const [taskIds, statuses, rewards] = reader.getColumnsJS() as [string[], string[], number[]];
const fetchMs = performance.now() - fetchStart;

const loopStart = performance.now();
const perTask = new Map<string, { n: number; c: number }>();
for (let i = 0; i < taskIds.length; i++) {
  const status = statuses[i]!;
  let entry = perTask.get(taskIds[i]!);
  if (!entry) perTask.set(taskIds[i]!, (entry = { n: 0, c: 0 }));
  if (status === "infra_error") continue;
  entry.n += 1;
  if (status === "ok" && rewards[i]! >= 1) entry.c += 1;
}
// The "exclude" convention: the tasks with at least max(k) valid trials, the same for every k.
const kmax = Math.max(...ks);
const ts: { [key: string]: number } = {};
for (const k of ks) {
  let at = 0;
  let hat = 0;
  let scored = 0;
  for (const { n, c } of perTask.values()) {
    if (n < kmax) continue;
    scored += 1;
    // 1 - C(n-c,k)/C(n,k) as a product
    if (c === 0) at += 0;
    else if (n - c < k) at += 1;
    else {
      let prod = 1;
      for (let i = n - c + 1; i <= n; i++) prod *= 1 - k / i;
      at += 1 - prod;
    }
    // C(c,k)/C(n,k)
    if (c >= k) {
      let prod = 1;
      for (let i = 0; i < k; i++) prod *= (c - i) / (n - i);
      hat += prod;
    }
  }
  ts[`pass@${k}`] = at / scored;
  ts[`pass^${k}`] = hat / scored;
}
const loopMs = performance.now() - loopStart;

for (const k of ks) {
  for (const metric of [`pass@${k}`, `pass^${k}`]) {
    const a = duck![metric] as number;
    const b = ts[metric]!;
    if (Math.abs(a - b) > 1e-9) throw new Error(`${metric}: DuckDB ${a} != TypeScript ${b}`);
  }
}

const fmt = (ms: number) => `${ms.toFixed(1)} ms`;
console.log(`pass@k / pass^k for k = ${ks.join(", ")} over ${rolloutCount.toLocaleString("en")} rollouts, ${taskCount.toLocaleString("en")} tasks`);
console.log(`  tasks scored: ${duck!.tasks_scored} of ${duck!.tasks} (the others have fewer than ${kmax} valid trials)`);
console.log(ks.map((k) => `  pass@${k} = ${ts[`pass@${k}`]!.toFixed(6)}  pass^${k} = ${ts[`pass^${k}`]!.toFixed(6)}`).join("\n"));
console.log(`  DuckDB (parquet → grouped query with the macros): ${fmt(duckMs)}`);
console.log(`  TypeScript loop over the same rows in memory:     ${fmt(loopMs)}  (+ ${fmt(fetchMs)} to fetch the rows into JS)`);
console.log(`  ratio TypeScript loop / DuckDB: ${(loopMs / duckMs).toFixed(2)}x; with the fetch: ${((loopMs + fetchMs) / duckMs).toFixed(2)}x`);
console.log("  results agree to 1e-9");
console.log(`  (DuckDB, Claw-Eval convention: ${fmt(clawMs)})`);

connection.closeSync();
instance.closeSync();
await rm(dir, { recursive: true, force: true });
