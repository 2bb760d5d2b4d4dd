/**
 * `forge analyze`: compacts the log, computes the metrics, prints them (table or JSON),
 * and optionally writes the HTML report and a DuckDB database for notebooks.
 */
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { parseCommand, UsageError } from "../lib/index.ts";
import { analyze, type Analysis } from "./analysis.ts";
import type { CompactProgress } from "./compact.ts";
import { parseGroupKeys, type Convention } from "./metrics.ts";
import { renderReport } from "./report.ts";
import { openAnalytics, writeDatabase } from "./session.ts";
import { formatTable } from "./table.ts";

const usage = `
usage: forge analyze --data DIR [options]

Compacts DIR/log into DIR/parquet (new segments only) and computes pass@k, pass^k,
mean reward and behaviour metrics (definitions: docs/metrics.md).

  --data DIR                data directory (holds log/, parquet/, exports/)
  --k 1,5                   k values (default 1)
  --by harness,iteration    group by any of experiment, iteration, harness, policy_version, task
  --convention unbiased|claw  unbiased estimators (default) or Claw-Eval's first-k-trials rule
  --threshold 1             success = status ok and reward >= threshold (default 1)
  --json                    print the analysis as JSON instead of tables
  --report report.html      write a self-contained HTML report with charts
  --db forge.duckdb         write a DuckDB database with the tables, views and macros
  --quiet                   no progress line
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
  console.log(`\n${analysis.options.convention} pass@k / pass^k (threshold ${analysis.options.threshold})`);
  console.log(formatTable(analysis.pass));
  console.log("\nbehaviour");
  console.log(formatTable(analysis.behaviour));
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
        k: { type: "string", default: "1" },
        by: { type: "string" },
        convention: { type: "string", default: "unbiased" },
        threshold: { type: "string", default: "1" },
        json: { type: "boolean", default: false },
        report: { type: "string" },
        db: { type: "string" },
        quiet: { type: "boolean", default: false },
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
  const threshold = Number(values.threshold);
  if (!Number.isFinite(threshold)) throw new UsageError(`--threshold must be a number, got "${values.threshold}"`);
  let by;
  try {
    by = parseGroupKeys(values.by);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const ks = parseKs(values.k!);

  const session = await openAnalytics(dataDir, { onProgress: progressPrinter(values.quiet! || values.json!) });
  if (process.stderr.isTTY && !values.quiet && session.compaction.compacted.length + session.compaction.reread.length > 0) process.stderr.write("\n");
  let analysis: Analysis;
  try {
    analysis = await analyze(session.connection, { by, ks, convention, threshold }, session.compaction);
  } finally {
    session.close();
  }
  if (values.report) {
    await writeFile(values.report, renderReport(analysis));
    if (!values.json) console.error(`wrote ${values.report}`);
  }
  if (values.db) {
    await writeDatabase(dataDir, resolve(values.db));
    if (!values.json) console.error(`wrote ${values.db} (views rollouts, calls, tool_calls, samples, tasks, rollout_behaviour; macros pass_at_k, pass_hat_k, ...)`);
  }
  if (values.json) console.log(JSON.stringify(analysis, null, 2));
  else printTables(analysis);
  return 0;
}
