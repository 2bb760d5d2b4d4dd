/**
 * Everything `forge analyze` and `forge run` print, as one object: the JSON output, the terminal
 * tables and the HTML report are all views of it, so the numbers cannot differ between them.
 */
import type { DuckDBConnection } from "@duckdb/node-api";
import type { CompactSummary } from "./compact.ts";
import {
  behaviour,
  passK,
  queryRows,
  rewardHistogram,
  scopeWhere,
  tokenBudgets,
  type Convention,
  type GroupKey,
  type MissingTrials,
  type Row,
  type Scope,
} from "./metrics.ts";

/** How a run is scoped and grouped unless told otherwise: never pooled silently. */
export const defaultGroups: GroupKey[] = ["experiment", "run", "iteration"];

export type AnalysisRequest = {
  scope?: Scope;
  /** Groups (default: experiment, run, iteration). `[]` pools everything in scope into one row. */
  by?: GroupKey[];
  /** k values (default: the `metrics.k` the experiments recorded, else 1). */
  ks?: number[];
  convention?: Convention;
  /** Overrides each experiment's recorded threshold (default: theirs; Claw-Eval: 0.75). */
  threshold?: number | null;
  /** Overrides each experiment's missing-trial convention (default: theirs, else exclude). */
  missingTrials?: MissingTrials | null;
  /** Per-rollout rows and failing rollouts (the report needs them; terminals do not). */
  details?: boolean;
  /** At most this many per-rollout rows (default 2000); `rolloutCount` says how many there are. */
  rolloutLimit?: number;
};

export type AnalysisOptions = {
  scope: Scope;
  by: GroupKey[];
  ks: number[];
  /** Where `ks` came from: the request, the experiments' recorded metrics.k, or the default 1. */
  ksFrom: "request" | "experiment" | "default";
  convention: Convention;
  threshold: number | null;
  missingTrials: MissingTrials | null;
};

export type Analysis = {
  options: AnalysisOptions;
  compaction: CompactSummary | null;
  totals: Row;
  /** The runs in scope: experiment, run, commit, model, first and last rollout time. */
  runs: Row[];
  /** pass@k, pass^k, mean reward and task counts per group. */
  pass: Row[];
  /** The same per task within each group. */
  passByTask: Row[];
  /** pass@k / pass^k for every k from 1 to max(ks), per group (the report's curves). */
  passCurve: Row[];
  /** The same by iteration and harness (the report's trend chart). */
  passByIterationHarness: Row[];
  behaviour: Row[];
  behaviourByHarness: Row[];
  rewardHistogram: Row[];
  tokenBudgets: Row[];
  /** Per rollout: status, reward, calls, tokens, time (details only). */
  rollouts: Row[];
  rolloutCount: number;
  /** Rollouts that are not successes, with their verifier output and error (details only). */
  failing: Row[];
};

/**
 * The `metrics.k` values the experiments in scope recorded on their rollouts (union), or [].
 *
 * @example
 * await recordedKs(connection, { run: "quick-1" }) // [1, 2, 4]
 */
export async function recordedKs(connection: DuckDBConnection, scope: Scope = {}): Promise<number[]> {
  const rows = await queryRows(connection, `SELECT list_sort(list_distinct(flatten(list(recorded_ks)))) AS ks FROM rollouts${scopeWhere(scope)}`);
  const ks = (rows[0]?.ks ?? []) as (number | null)[];
  return ks.filter((k): k is number => typeof k === "number" && k >= 1);
}

/**
 * The newest run in the data (by its first rollout's registration), or undefined.
 *
 * @example
 * await latestRun(connection) // "quickstart-mc0x1"
 */
export async function latestRun(connection: DuckDBConnection, scope: Scope = {}): Promise<string | undefined> {
  const rows = await queryRows(
    connection,
    `SELECT run FROM rollouts${scopeWhere(scope)}${scopeWhere(scope) ? " AND" : " WHERE"} run IS NOT NULL GROUP BY run ORDER BY min(created_unix_ms) DESC, run DESC LIMIT 1`,
  );
  return rows[0]?.run === undefined ? undefined : String(rows[0].run);
}

async function runsOf(connection: DuckDBConnection, scope: Scope): Promise<Row[]> {
  return queryRows(
    connection,
    `WITH r AS (SELECT * FROM rollouts${scopeWhere(scope)}),
     models AS (
       SELECT c.rollout_id, mode(c.model) AS model FROM raw_call_records c JOIN r USING (rollout_id) WHERE c.model <> '' GROUP BY c.rollout_id)
     SELECT experiment, run, string_agg(DISTINCT commit, ',' ORDER BY commit) AS commit,
            coalesce(string_agg(DISTINCT models.model, ',' ORDER BY models.model), string_agg(DISTINCT model_label, ',' ORDER BY model_label)) AS model,
            string_agg(DISTINCT harness, ',' ORDER BY harness) AS harness,
            min(created_unix_ms) AS started_unix_ms, max(finished_unix_ms) AS finished_unix_ms,
            count(*) AS rollouts, count(DISTINCT task_id) AS tasks, list_sort(list_distinct(list(iteration))) AS iterations
     FROM r LEFT JOIN models USING (rollout_id)
     GROUP BY experiment, run ORDER BY started_unix_ms, experiment, run`,
  );
}

/** Per rollout: what the report's rollout table shows. */
async function rolloutRows(connection: DuckDBConnection, scope: Scope, limit: number): Promise<Row[]> {
  return queryRows(
    connection,
    `SELECT r.rollout_id, r.experiment, r.run, r.iteration, r.task_id, r.attempt, r.harness, coalesce(r.status, 'unfinished') AS status,
            r.reward, r.success, b.turns AS calls, b.prompt_tokens, b.completion_tokens, b.total_tokens, r.duration_ms,
            b.latency_sum AS model_ms, b.tool_calls, b.tool_errors
     FROM (SELECT * FROM rollouts${scopeWhere(scope)}) r LEFT JOIN rollout_behaviour b USING (rollout_id)
     ORDER BY r.experiment, r.run, r.iteration, r.task_id, r.attempt, r.rollout_id LIMIT ${limit}`,
  );
}

async function failingRows(connection: DuckDBConnection, scope: Scope, limit: number): Promise<Row[]> {
  const where = scopeWhere(scope);
  return queryRows(
    connection,
    `SELECT rollout_id, task_id, attempt, coalesce(status, 'unfinished') AS status, reward, verifier_output, error
     FROM rollouts${where}${where ? " AND" : " WHERE"} NOT success
     ORDER BY (status = 'infra_error') DESC NULLS FIRST, task_id, attempt, rollout_id LIMIT ${limit}`,
  );
}

/**
 * Resolves the request's defaults against the data, then runs every metric query.
 *
 * @example
 * const analysis = await analyze(session.connection, { scope: { run: "quick-1" } }, session.compaction);
 * analysis.pass[0]["pass@1"]; // the run's pass@1
 */
export async function analyze(connection: DuckDBConnection, request: AnalysisRequest = {}, compaction: CompactSummary | null = null): Promise<Analysis> {
  const scope = request.scope ?? {};
  const recorded = request.ks ? [] : await recordedKs(connection, scope);
  const options: AnalysisOptions = {
    scope,
    by: request.by ?? defaultGroups,
    ks: request.ks ?? (recorded.length ? recorded : [1]),
    ksFrom: request.ks ? "request" : recorded.length ? "experiment" : "default",
    convention: request.convention ?? "unbiased",
    threshold: request.threshold ?? null,
    missingTrials: request.missingTrials ?? null,
  };
  const pass = { ks: options.ks, convention: options.convention, threshold: options.threshold, missingTrials: options.missingTrials, scope };
  const kmax = Math.max(...options.ks);
  const where = scopeWhere(scope);
  const [totals] = await queryRows(
    connection,
    `WITH r AS (SELECT * FROM rollouts${where})
     SELECT count(*) AS rollouts, count(*) FILTER (WHERE status IS NOT NULL) AS finished,
            count(*) FILTER (WHERE status = 'infra_error') AS infra_errors,
            count(*) FILTER (WHERE status IS NULL) AS unfinished,
            count(DISTINCT task_id) AS tasks, count(DISTINCT experiment) AS experiments, count(DISTINCT run) AS runs,
            (SELECT count(*) FROM calls WHERE rollout_id IN (SELECT rollout_id FROM r)) AS calls,
            (SELECT count(*) FROM tool_calls WHERE rollout_id IN (SELECT rollout_id FROM r)) AS tool_calls,
            (SELECT count(*) FROM samples WHERE rollout_id IN (SELECT rollout_id FROM r)) AS samples
     FROM r`,
  );
  const details = request.details ?? false;
  const limit = request.rolloutLimit ?? 2000;
  return {
    options,
    compaction,
    totals: totals ?? {},
    runs: await runsOf(connection, scope),
    pass: await passK(connection, { ...pass, by: options.by }),
    passByTask: await passK(connection, { ...pass, by: [...options.by.filter((key) => key !== "task"), "task"] }),
    passCurve: await passK(connection, { ...pass, by: options.by, ks: Array.from({ length: kmax }, (_, i) => i + 1) }),
    passByIterationHarness: await passK(connection, { ...pass, by: ["iteration", "harness"] }),
    behaviour: await behaviour(connection, options.by, scope),
    behaviourByHarness: await behaviour(connection, ["harness"], scope),
    rewardHistogram: await rewardHistogram(connection, scope),
    tokenBudgets: await tokenBudgets(connection, ["harness"], scope),
    rollouts: details ? await rolloutRows(connection, scope, limit) : [],
    rolloutCount: Number(totals?.rollouts ?? 0),
    failing: details ? await failingRows(connection, scope, limit) : [],
  };
}
