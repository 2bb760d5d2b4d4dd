/**
 * Everything `forge analyze` prints, as one object: the JSON output, the terminal tables and
 * the HTML report are all views of it.
 */
import type { DuckDBConnection } from "@duckdb/node-api";
import type { CompactSummary } from "./compact.ts";
import { behaviour, passK, queryRows, rewardHistogram, tokenBudgets, type Convention, type GroupKey, type Row } from "./metrics.ts";

export type AnalysisOptions = { by: GroupKey[]; ks: number[]; convention: Convention; threshold: number };

export type Analysis = {
  options: AnalysisOptions;
  compaction: CompactSummary | null;
  totals: Row;
  /** pass@k, pass^k, mean reward per `--by` group. */
  pass: Row[];
  /** The same by iteration and harness (for the report's trend chart). */
  passByIterationHarness: Row[];
  behaviour: Row[];
  behaviourByHarness: Row[];
  rewardHistogram: Row[];
  tokenBudgets: Row[];
};

/**
 * Runs every metric query for one analysis.
 *
 * @example
 * const analysis = await analyze(session.connection, { by: ["harness"], ks: [1, 5], convention: "unbiased", threshold: 1 }, session.compaction);
 */
export async function analyze(connection: DuckDBConnection, options: AnalysisOptions, compaction: CompactSummary | null = null): Promise<Analysis> {
  const [totals] = await queryRows(
    connection,
    `SELECT count(*) AS rollouts, count(*) FILTER (WHERE status IS NOT NULL) AS finished,
            count(*) FILTER (WHERE status = 'infra_error') AS infra_errors,
            count(DISTINCT task_id) AS tasks, count(DISTINCT experiment) AS experiments,
            (SELECT count(*) FROM calls) AS calls, (SELECT count(*) FROM tool_calls) AS tool_calls,
            (SELECT count(*) FROM samples) AS samples
     FROM rollouts`,
  );
  return {
    options,
    compaction,
    totals: totals ?? {},
    pass: await passK(connection, options),
    passByIterationHarness: await passK(connection, { ...options, by: ["iteration", "harness"] }),
    behaviour: await behaviour(connection, options.by),
    behaviourByHarness: await behaviour(connection, ["harness"]),
    rewardHistogram: await rewardHistogram(connection),
    tokenBudgets: await tokenBudgets(connection, ["harness"]),
  };
}
