/**
 * `forge analyze`: compacts the log, computes the metrics, prints them (table or JSON),
 * and optionally writes the HTML report and a DuckDB database for notebooks.
 * `forge sql`: DuckDB over the same views from a terminal.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { parseCommand, UsageError } from "../lib/index.ts";
import { describeCorruption, type Corruption } from "../records/index.ts";
import { analyze, latestRun, type Analysis } from "./analysis.ts";
import type { CompactProgress } from "./compact.ts";
import { parseGroupKeys, type Convention, type GroupKey, type MissingTrials, type Scope } from "./metrics.ts";
import { writeReport } from "./report.ts";
import { formatPassSummary } from "./summary.ts";
import { openAnalytics, writeDatabase } from "./session.ts";
import { openSqlSource, repl, runStatements, type SqlFormat } from "./sql.ts";
import { formatTable } from "./table.ts";

const usage = `
usage: forge analyze --data DIR [options]

Compacts DIR/log into DIR/parquet (new segments only) and computes pass@k, pass^k,
mean reward and behaviour metrics (definitions: docs/metrics.md). By default every run
in DIR is its own row (grouped by experiment, run and iteration), scored with the k,
success threshold and missing-trial convention its experiment recorded.

  --data DIR                 data directory (holds log/, parquet/, exports/)
  --experiment NAME          only this experiment's rollouts
  --run ID|latest            only this run's rollouts (latest: the newest run)
  --iteration N              only this iteration's rollouts
  --by KEYS                  group by any of experiment, run, iteration, harness,
                             policy_version, task (default experiment,run,iteration;
                             none: pool everything in scope into one row)
  --k 1,5                    k values (default: the experiment's metrics.k, else 1)
  --convention unbiased|claw unbiased estimators (default) or Claw-Eval's score_summary.py
  --threshold T              success = status ok and reward >= T (default: the experiment's
                             passThreshold, else 1; Claw-Eval: 0.75, any status)
  --missing-trials exclude|fail
                             tasks with fewer valid trials than k: left out and counted
                             (exclude), or missing trials are failures (fail, as tau-bench);
                             default: the experiment's metrics.missingTrials, else exclude
  --json                     print the analysis as JSON instead of tables
  --report report.html       write the HTML report (and a page per rollout beside it)
  --db forge.duckdb          write a DuckDB database with the tables, views and macros
  --skip-corrupt             read past damaged bytes in the log (each printed, with counts);
                             without it a damaged log fails with the segment and offset
  --quiet                    no progress line
`;

function parseKs(text: string): number[] {
  const ks = text.split(",").map((part) => Number(part.trim()));
  const bad = ks.find((k) => !Number.isInteger(k) || k < 1);
  if (bad !== undefined) throw new UsageError(`--k must be positive integers separated by commas, got "${text}"`);
  return [...new Set(ks)].sort((a, b) => a - b);
}

function progressPrinter(quiet: boolean): (p: CompactProgress) => void {
  if (quiet) return () => {};
  const tty = process.stderr.isTTY;
  let last = 0;
  return (p) => {
    const now = Date.now();
    const done = p.records > 0 && now - last < 200;
    if (done && tty) return;
    last = now;
    const line = `compacting ${p.segment} (${p.index + 1}/${p.total}) ${p.records} records`;
    if (tty) process.stderr.write(`\r${line}\u001b[K`);
    else if (p.records === 0) process.stderr.write(`${line}\n`);
  };
}

function printTables(analysis: Analysis): void {
  const c = analysis.compaction;
  if (c) console.log(`compacted ${c.compacted.length} segment(s), re-read ${c.reread.length} open, ${c.skipped} already compacted; ${c.records} records read`);
  console.log(`\n${formatPassSummary(analysis)}`);
  console.log(`\nbehaviour (n = rollouts each share is over; definitions: docs/metrics.md)`);
  console.log(formatTable(analysis.behaviour));
}

function parseScope(values: { experiment?: string; run?: string; iteration?: string }): Scope {
  const scope: Scope = {};
  if (values.experiment !== undefined) scope.experiment = values.experiment;
  if (values.run !== undefined) scope.run = values.run;
  if (values.iteration !== undefined) {
    const iteration = Number(values.iteration);
    if (!Number.isInteger(iteration) || iteration < 0) throw new UsageError(`--iteration must be an integer ≥ 0, got "${values.iteration}"`);
    scope.iteration = iteration;
  }
  return scope;
}

/**
 * @example
 * await analyzeCommand(["--data", "data", "--k", "1,5", "--by", "harness", "--report", "report.html"])
 */
export async function analyzeCommand(argv: string[]): Promise<number> {
  const args = parseCommand(
    {
      name: "analyze",
      usage,
      options: {
        data: { type: "string" },
        experiment: { type: "string" },
        run: { type: "string" },
        iteration: { type: "string" },
        k: { type: "string" },
        by: { type: "string" },
        convention: { type: "string", default: "unbiased" },
        threshold: { type: "string" },
        "missing-trials": { type: "string" },
        json: { type: "boolean", default: false },
        report: { type: "string" },
        db: { type: "string" },
        quiet: { type: "boolean", default: false },
        "skip-corrupt": { type: "boolean", default: false },
      },
    },
    argv,
  );
  if (!args) return 0;
  const { values } = args;
  if (!values.data) throw new UsageError(`forge analyze: --data DIR is required\n\n${usage.trim()}`);
  const dataDir = resolve(values.data);
  if (!existsSync(dataDir)) throw new UsageError(`forge analyze: --data ${values.data}: no such directory`);
  const convention = values.convention as Convention;
  if (convention !== "unbiased" && convention !== "claw") throw new UsageError(`--convention must be unbiased or claw, got "${values.convention}"`);
  let threshold: number | null = null;
  if (values.threshold !== undefined) {
    threshold = Number(values.threshold);
    if (values.threshold.trim() === "" || !Number.isFinite(threshold)) throw new UsageError(`--threshold must be a number, got "${values.threshold}"`);
  }
  const missing = values["missing-trials"];
  if (missing !== undefined && missing !== "exclude" && missing !== "fail") throw new UsageError(`--missing-trials must be exclude or fail, got "${missing}"`);
  let by: GroupKey[] | undefined;
  try {
    by = values.by === undefined ? undefined : values.by.trim() === "none" ? [] : parseGroupKeys(values.by);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const ks = values.k === undefined ? undefined : parseKs(values.k);
  const scope = parseScope(values);

  const skipped: Corruption[] = [];
  const onCorruption = (c: Corruption): void => {
    skipped.push(c);
    process.stderr.write(`\n${describeCorruption(c)}; skipped (--skip-corrupt)\n`);
  };
  const session = await openAnalytics(dataDir, { onProgress: progressPrinter(values.quiet! || values.json!), ...(values["skip-corrupt"] ? { onCorruption } : {}) });
  if (skipped.length > 0) process.stderr.write(`forge analyze: read past ${skipped.length} damaged range(s), ${skipped.reduce((n, c) => n + c.length, 0)} bytes: the metrics leave out the records in them\n`);
  if (process.stderr.isTTY && !values.quiet && session.compaction.compacted.length + session.compaction.reread.length > 0) process.stderr.write("\n");
  let analysis: Analysis;
  try {
    if (scope.run === "latest") {
      const { run: _latest, ...rest } = scope;
      const latest = await latestRun(session.connection, rest);
      if (latest === undefined) throw new UsageError(`forge analyze: --run latest: no run recorded in ${values.data}`);
      scope.run = latest;
    }
    analysis = await analyze(
      session.connection,
      { scope, by, ks, convention, threshold, missingTrials: (missing as MissingTrials | undefined) ?? null, details: Boolean(values.report) },
      session.compaction,
    );
    if (values.report) {
      const written = await writeReport(session.connection, dataDir, analysis, resolve(values.report));
      if (!values.json) console.error(`wrote ${values.report} (${written.pages} rollout page(s) in ${written.pagesDir})`);
    }
  } finally {
    session.close();
  }
  if (values.db) {
    await writeDatabase(dataDir, resolve(values.db));
    if (!values.json) console.error(`wrote ${values.db} (views rollouts, calls, tool_calls, samples, tasks, rollout_behaviour; macros pass_at_k, pass_hat_k, ...); query it with: forge sql ${values.db}`);
  }
  if (values.json) console.log(JSON.stringify(analysis, null, 2));
  else printTables(analysis);
  return 0;
}

const sqlUsage = `
usage: forge sql DATA_DIR|DB_FILE [SQL] [--csv | --json] [--max-rows N]

DuckDB over a data directory (new log segments are compacted first; the views rollouts,
calls, tool_calls, tasks, rollout_behaviour, samples and the metric macros are defined,
docs/metrics.md) or over a database file written by forge analyze --db (read-only).

  forge sql DIR "SELECT * FROM tasks"        one statement (or several, separated by ;)
  forge sql forge.duckdb < notebook.sql      a script on stdin, every statement in order
  forge sql DIR                              an interactive prompt (statements end with ;)

  --csv / --json    CSV, or one JSON object per row, instead of an aligned table
  --max-rows N      rows shown per table (default 200)
`;

/**
 * @example
 * await sqlCommand([".forge/runs/q", "SELECT task_id, n, c FROM tasks"])
 */
export async function sqlCommand(argv: string[]): Promise<number> {
  const args = parseCommand(
    {
      name: "sql",
      usage: sqlUsage,
      allowPositionals: true,
      options: { csv: { type: "boolean", default: false }, json: { type: "boolean", default: false }, "max-rows": { type: "string", default: "200" } },
    },
    argv,
  );
  if (!args) return 0;
  const { values, positionals } = args;
  if (positionals.length < 1 || positionals.length > 2) throw new UsageError(`forge sql: expected DATA_DIR|DB_FILE and an optional SQL statement\n\n${sqlUsage.trim()}`);
  if (values.csv && values.json) throw new UsageError("forge sql: --csv and --json exclude each other");
  const maxRows = Number(values["max-rows"]);
  if (!Number.isInteger(maxRows) || maxRows < 1) throw new UsageError(`--max-rows must be a positive integer, got "${values["max-rows"]}"`);
  const format: SqlFormat = values.csv ? "csv" : values.json ? "json" : "table";
  const [path, statement] = positionals as [string, string | undefined];
  if (!existsSync(path)) throw new UsageError(`forge sql: ${path}: no such data directory or database file`);
  const source = await openSqlSource(resolve(path));
  try {
    if (statement === undefined && process.stdin.isTTY) {
      await repl(source, format, maxRows, process.stdin, process.stdout);
      return 0;
    }
    const text = statement ?? (await new Response(Bun.stdin.stream()).text());
    if (text.trim() === "") throw new UsageError("forge sql: no SQL given (as an argument or on stdin)");
    try {
      for (const result of await runStatements(source.connection, text, format, maxRows)) console.log(result);
    } catch (error) {
      console.error(`forge sql: ${(error as Error).message}`);
      return 1;
    }
    return 0;
  } finally {
    source.close();
  }
}
