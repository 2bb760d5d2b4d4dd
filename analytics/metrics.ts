/**
 * Grouped metric queries over the views: pass@k / pass^k (unbiased or Claw-Eval), mean reward,
 * behaviour metrics, reward distribution and token budgets.
 */
import type { DuckDBConnection } from "@duckdb/node-api";
import { sqlString } from "../lib/index.ts";

export const groupKeys = ["experiment", "run", "iteration", "harness", "policy_version", "task"] as const;
export type GroupKey = (typeof groupKeys)[number];
export type Convention = "unbiased" | "claw";
export type MissingTrials = "exclude" | "fail";
export type Row = { [column: string]: string | number | boolean | null | Row[] | (string | number | null)[] };

/** Which rollouts an analysis looks at; an unset field does not filter. */
export type Scope = { experiment?: string; run?: string; iteration?: number };

/** `task` is the user's word; the column is `task_id`. */
function column(key: GroupKey): string {
  return key === "task" ? "task_id" : key;
}

/**
 * Validates `--by` values, naming the bad one.
 *
 * @example
 * parseGroupKeys("harness,iteration") // ["harness", "iteration"]
 */
export function parseGroupKeys(text: string | undefined): GroupKey[] {
  if (!text) return [];
  return text.split(",").map((raw) => {
    const key = raw.trim() as GroupKey;
    if (!groupKeys.includes(key)) throw new Error(`--by: unknown key "${raw}"; use any of ${groupKeys.join(", ")}`);
    return key;
  });
}

function selectKeys(by: GroupKey[]): string {
  return by.map((key) => `${column(key)} AS "${key}", `).join("");
}

/** GROUP BY / ORDER BY for the keys; without keys, no row at all (rather than one of NULLs) when empty. */
function groupTail(keys: string): string {
  return keys ? ` GROUP BY ${keys} ORDER BY ${keys}` : " HAVING count(*) > 0";
}

function groupList(by: GroupKey[]): string {
  return by.map(column).join(", ");
}

/**
 * The WHERE clause that limits rollouts to a scope (empty when the scope is everything).
 *
 * @example
 * scopeWhere({ run: "quick-1" }) // " WHERE run = 'quick-1'"
 */
export function scopeWhere(scope: Scope = {}): string {
  const parts: string[] = [];
  if (scope.experiment !== undefined) parts.push(`experiment = ${sqlString(scope.experiment)}`);
  if (scope.run !== undefined) parts.push(`run = ${sqlString(scope.run)}`);
  if (scope.iteration !== undefined) parts.push(`iteration = ${Math.trunc(scope.iteration)}`);
  return parts.length ? ` WHERE ${parts.join(" AND ")}` : "";
}

/** The scope as further conditions of an existing WHERE. */
export function scopeAnd(scope: Scope = {}): string {
  const where = scopeWhere(scope);
  return where ? ` AND ${where.slice(" WHERE ".length)}` : "";
}

/**
 * Runs a query and returns plain JS rows: BIGINT counts become numbers, DECIMALs numbers.
 *
 * @example
 * await queryRows(connection, "SELECT count(*) AS n FROM rollouts") // [{ n: 12 }]
 */
export async function queryRows(connection: DuckDBConnection, sql: string): Promise<Row[]> {
  const reader = await connection.runAndReadAll(sql);
  return reader.getRowObjectsJS().map((row) =>
    Object.fromEntries(Object.entries(row).map(([key, value]) => [key, normalize(value)])),
  ) as Row[];
}

function normalize(value: unknown): unknown {
  if (typeof value === "bigint") return Number(value);
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === "object" && "toDouble" in value) return (value as { toDouble(): number }).toDouble();
  return value;
}

export type PassOptions = {
  by: GroupKey[];
  ks: number[];
  convention: Convention;
  /** Overrides every rollout's recorded threshold (null: each experiment's own; Claw-Eval: 0.75). */
  threshold?: number | null;
  /** Overrides every experiment's missing-trial convention (null: each experiment's own, else exclude). */
  missingTrials?: MissingTrials | null;
  scope?: Scope;
};

/**
 * SQL for pass@k and pass^k per group (docs/metrics.md). Unbiased: per task n valid trials
 * (or, under the `fail` convention, at least the trials planned) and c successes, the
 * estimator per task, averaged over the tasks that have at least max(k) trials (the same tasks
 * for every k); `tasks_scored` / `tasks_excluded` say how many. Claw-Eval: every graded trial,
 * padded with zeros up to k, as score_summary.py does.
 *
 * @example
 * passKSql({ by: ["harness"], ks: [1, 5], convention: "unbiased" })
 */
export function passKSql({ by, ks, convention, scope }: PassOptions): string {
  if (ks.length === 0) throw new Error("pass@k needs at least one k");
  const keys = groupList(by);
  const partition = [...new Set([...by.map(column), "task_id"])].join(", ");
  const perRunKeys = [...new Set([...by.map(column), "task_id", "run"])].join(", ");
  const kmax = Math.max(...ks);
  const source = `SELECT * FROM rollouts${scopeWhere(scope)}`;
  if (convention === "claw") {
    const perK = ks
      .map(
        (k) =>
          `avg(claw_any_pass(passes, graded, ${k}, claw_threshold())::DOUBLE) AS "pass@${k}", ` +
          `avg(claw_all_pass(fails, graded, ${k}, claw_threshold())::DOUBLE) AS "pass^${k}", ` +
          `avg(claw_avg_pass(score_sum, ${k}, claw_threshold())::DOUBLE) AS "avg_pass@${k}", ` +
          `avg(claw_avg_score(score_sum, ${k})) AS "avg_score@${k}"`,
      )
      .join(",\n       ");
    return `WITH r AS (${source}),
per_task AS (
  SELECT ${partition}, count(*) AS registered, count(*) FILTER (WHERE valid) AS graded,
         count(*) FILTER (WHERE valid AND reward >= claw_threshold()) AS passes,
         count(*) FILTER (WHERE valid AND NOT (reward >= claw_threshold())) AS fails,
         -- Compensated summation: avg >= 0.75 must not depend on the order trials are summed in.
         coalesce(fsum(reward) FILTER (WHERE valid), 0) AS score_sum,
         count(*) FILTER (WHERE status = 'infra_error') AS infra_errors,
         count(*) FILTER (WHERE status IS NULL) AS unfinished
  FROM r GROUP BY ${partition})
SELECT ${selectKeys(by)}count(*) AS tasks, count(*) AS tasks_scored, 0 AS tasks_excluded,
       sum(registered) AS rollouts, sum(graded) AS valid, sum(passes) AS successes,
       sum(infra_errors) AS infra_errors, sum(unfinished) AS unfinished,
       'claw' AS missing_trials, any_value(claw_threshold()) AS threshold,
       avg(claw_avg_score(score_sum, ${kmax})) AS mean_reward,
       ${perK}
FROM per_task${groupTail(keys)}`;
  }
  const perK = ks
    .map((k) => `avg(pass_at_k(trials, c, ${k})) FILTER (WHERE trials >= ${kmax}) AS "pass@${k}", avg(pass_hat_k(trials, c, ${k})) FILTER (WHERE trials >= ${kmax}) AS "pass^${k}"`)
    .join(",\n       ");
  // Counts per run first: trials planned are counted per run (attempts are numbered from 0, so
  // max(attempt) + 1, or the experiment's rollouts.k when forge run recorded it, if larger) and
  // summed over the task's runs.
  return `WITH r AS (${source}),
per_run AS (
  SELECT ${perRunKeys}, count(*) AS registered, count(*) FILTER (WHERE valid) AS n, count(*) FILTER (WHERE success) AS c,
         coalesce(sum(score) FILTER (WHERE valid), 0) AS score_sum,
         count(*) FILTER (WHERE status = 'infra_error') AS infra_errors,
         count(*) FILTER (WHERE status IS NULL) AS unfinished,
         greatest(max(attempt) + 1, coalesce(max(planned_k), 0)) AS planned,
         min(recorded_missing_trials) AS min_convention, max(recorded_missing_trials) AS max_convention,
         min(threshold) AS min_threshold, max(threshold) AS max_threshold
  FROM r GROUP BY ${perRunKeys}),
per_task AS (
  SELECT ${partition}, sum(registered)::BIGINT AS registered, sum(n)::BIGINT AS n, sum(c)::BIGINT AS c, sum(score_sum) AS score_sum,
         sum(infra_errors)::BIGINT AS infra_errors, sum(unfinished)::BIGINT AS unfinished, sum(planned)::BIGINT AS planned,
         min(min_convention) AS min_convention, max(max_convention) AS max_convention,
         min(min_threshold) AS min_threshold, max(max_threshold) AS max_threshold
  FROM per_run GROUP BY ${partition}),
t AS (
  SELECT *, coalesce(forge_missing_trials(), min_convention, 'exclude') AS missing_trials,
         CASE WHEN missing_trials = 'fail' THEN greatest(n, planned) ELSE n END AS trials
  FROM per_task)
SELECT ${selectKeys(by)}count(*) AS tasks,
       count(*) FILTER (WHERE trials >= ${kmax}) AS tasks_scored,
       count(*) FILTER (WHERE trials < ${kmax}) AS tasks_excluded,
       sum(registered) AS rollouts, sum(n) AS valid, sum(c) AS successes,
       sum(infra_errors) AS infra_errors, sum(unfinished) AS unfinished,
       string_agg(DISTINCT missing_trials, ',' ORDER BY missing_trials) AS missing_trials,
       CASE WHEN min(min_threshold) = max(max_threshold) THEN min(min_threshold) END AS threshold,
       bool_or(forge_missing_trials() IS NULL AND min_convention <> max_convention) AS mixed_conventions,
       avg(score_sum / trials) FILTER (WHERE trials >= ${kmax}) AS mean_reward,
       ${perK}
FROM t${groupTail(keys)}`;
}

/**
 * Sets (or, for null, clears) the session's success-threshold override.
 *
 * @example
 * await setThreshold(connection, 0.5)
 */
export async function setThreshold(connection: DuckDBConnection, threshold: number | null | undefined): Promise<void> {
  if (threshold === null || threshold === undefined) {
    await connection.run("RESET VARIABLE forge_threshold");
    return;
  }
  if (!Number.isFinite(threshold)) throw new Error(`--threshold must be a number, got ${threshold}`);
  await connection.run(`SET VARIABLE forge_threshold = ${threshold}::DOUBLE`);
}

/**
 * Sets (or, for null, clears) the session's missing-trial convention override.
 *
 * @example
 * await setMissingTrials(connection, "fail")
 */
export async function setMissingTrials(connection: DuckDBConnection, convention: MissingTrials | null | undefined): Promise<void> {
  if (convention === null || convention === undefined) {
    await connection.run("RESET VARIABLE forge_missing_trials");
    return;
  }
  if (convention !== "exclude" && convention !== "fail") throw new Error(`missing-trial convention must be exclude or fail, got "${convention}"`);
  await connection.run(`SET VARIABLE forge_missing_trials = '${convention}'`);
}

/**
 * pass@k, pass^k, mean reward and the task counts per group. Throws when a task's rollouts come
 * from experiments with different missing-trial conventions and no override is given.
 *
 * @example
 * await passK(connection, { by: ["iteration"], ks: [1, 5], convention: "unbiased", scope: { run: "quick-1" } })
 * // [{ iteration: 0, tasks: 12, tasks_scored: 12, rollouts: 96, "pass@1": 0.41, "pass^1": 0.41, ... }]
 */
export async function passK(connection: DuckDBConnection, options: PassOptions): Promise<Row[]> {
  await setThreshold(connection, options.threshold);
  await setMissingTrials(connection, options.missingTrials);
  const rows = await queryRows(connection, passKSql(options));
  for (const row of rows) {
    const mixed = row.mixed_conventions;
    delete row.mixed_conventions;
    if (mixed === true) {
      throw new Error(
        "the rollouts of one task come from experiments with different missing-trial conventions (metrics.missingTrials); " +
          "group them apart (--by experiment,run) or choose one with --missing-trials exclude|fail",
      );
    }
  }
  return rows;
}

/**
 * SQL for the behaviour metrics per group (over rollouts that are not infra errors).
 *
 * @example
 * behaviourSql(["harness"]) // SELECT "harness", count(*) AS rollouts, avg(tool_coverage) ...
 */
export function behaviourSql(by: GroupKey[], scope: Scope = {}): string {
  const keys = groupList(by);
  return `WITH b AS (SELECT * FROM rollout_behaviour WHERE status IS DISTINCT FROM 'infra_error'${scopeAnd(scope)})
SELECT ${selectKeys(by)}count(*) AS rollouts,
       avg(tool_coverage) AS tool_coverage, count(tool_coverage) AS tool_coverage_n,
       share(count(*) FILTER (WHERE self_verified), count(*) FILTER (WHERE edited)) AS self_verification,
       count(*) FILTER (WHERE edited) AS self_verification_n,
       share(sum(errors_recovered), sum(tool_errors)) AS error_recovery, sum(tool_errors)::BIGINT AS error_recovery_n,
       avg(plan_completion) AS plan_completion, count(plan_completion) AS plan_completion_n,
       avg(ran_checks::INTEGER) AS ran_checks,
       share(sum(tool_results_known), sum(tool_results)) AS error_signal_share, sum(tool_results)::BIGINT AS tool_results,
       avg(turns) AS turns,
       avg(total_tokens) AS tokens,
       share(sum(shell_calls), sum(tool_calls)) AS shell_share,
       share(sum(ttft_sum), sum(ttft_calls)) AS ttft_ms,
       share(sum(latency_sum), sum(latency_calls)) AS latency_ms
FROM b${groupTail(keys)}`;
}

/**
 * Behaviour metrics per group (definitions: docs/metrics.md).
 *
 * @example
 * await behaviour(connection, ["harness"]) // [{ harness: "codex", tool_coverage: 0.6, self_verification: 0.8, ... }]
 */
export async function behaviour(connection: DuckDBConnection, by: GroupKey[], scope: Scope = {}): Promise<Row[]> {
  return queryRows(connection, behaviourSql(by, scope));
}

/**
 * Reward histogram over valid rollouts: `bins` equal-width bins between the min and max reward,
 * empty bins included.
 *
 * @example
 * await rewardHistogram(connection) // [{ bin: 0, rollouts: 12, lo: 0, hi: 0.1 }, ...]
 */
export async function rewardHistogram(connection: DuckDBConnection, scope: Scope = {}, bins = 10): Promise<Row[]> {
  return queryRows(
    connection,
    `WITH v AS (SELECT reward FROM rollouts WHERE valid AND reward IS NOT NULL${scopeAnd(scope)}),
     range_ AS (SELECT min(reward) AS lo, max(reward) AS hi FROM v),
     binned AS (
       SELECT CASE WHEN hi = lo THEN 0 ELSE least(floor((reward - lo) / (hi - lo) * ${bins})::INTEGER, ${bins - 1}) END AS bin
       FROM v, range_),
     -- Every bin, empty ones included (a single bin when all rewards are equal).
     all_bins AS (
       SELECT b.range::INTEGER AS bin, lo, hi FROM range_, range(${bins}) b
       WHERE lo IS NOT NULL AND (hi > lo OR b.range = 0))
     SELECT all_bins.bin, count(binned.bin) AS rollouts,
            lo + (hi - lo) * all_bins.bin / ${bins} AS lo,
            CASE WHEN hi = lo THEN hi ELSE lo + (hi - lo) * (all_bins.bin + 1) / ${bins} END AS hi
     FROM all_bins LEFT JOIN binned USING (bin)
     GROUP BY all_bins.bin, lo, hi ORDER BY all_bins.bin`,
  );
}

/**
 * Token budgets per group: per-rollout total tokens, percentiles.
 *
 * @example
 * await tokenBudgets(connection, ["harness"]) // [{ harness: "codex", p50_tokens: 41000, p95_tokens: 120000, ... }]
 */
export async function tokenBudgets(connection: DuckDBConnection, by: GroupKey[], scope: Scope = {}): Promise<Row[]> {
  const keys = groupList(by);
  return queryRows(
    connection,
    `SELECT ${selectKeys(by)}count(*) AS rollouts,
            avg(prompt_tokens) AS mean_prompt_tokens, avg(completion_tokens) AS mean_completion_tokens,
            quantile_cont(total_tokens, 0.5) AS p50_tokens, quantile_cont(total_tokens, 0.95) AS p95_tokens,
            max(total_tokens) AS max_tokens
     FROM rollout_behaviour WHERE status IS DISTINCT FROM 'infra_error'${scopeAnd(scope)}${groupTail(keys)}`,
  );
}
