/**
 * The analysis views over the compacted tables. Each `raw_<table>` source is either the
 * parquet files of `DIR/parquet/<table>/` (or an empty select while there are none) or, in
 * a `--db` file, a materialized copy, so notebooks work without the data directory.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { DuckDBConnection } from "@duckdb/node-api";
import { sqlString } from "./compact.ts";
import { verlColumns } from "../trajectories/index.ts";
import { macroSql } from "./macros.ts";
import { emptySelectSql, tableNames, tables, type Column } from "./tables.ts";

/**
 * Columns of `samples` when no trajectory export exists: those of the veRL batch `forge export
 * --format verl` writes, taken from the exporter so the two cannot drift. When exports exist
 * their own columns are used (`union_by_name` across files).
 */
export const sampleColumns = verlColumns;

function hasParquet(dir: string): boolean {
  return existsSync(dir) && readdirSync(dir).some((file) => file.endsWith(".parquet"));
}

/**
 * The SELECT each raw source reads from: its parquet files, or an empty typed select.
 *
 * @example
 * rawSourceSql("data/parquet", "call_records") // SELECT * FROM read_parquet('data/parquet/call_records/*.parquet', union_by_name = true)
 */
export function rawSourceSql(parquetDir: string, table: keyof typeof tables): string {
  const dir = join(parquetDir, table);
  if (!hasParquet(dir)) return emptySelectSql(tables[table] as readonly Column[]);
  return `SELECT * FROM read_parquet(${sqlString(join(dir, "*.parquet"))}, union_by_name = true)`;
}

function samplesSql(dataDir: string): string {
  const dir = join(dataDir, "exports");
  if (hasParquet(dir)) return `SELECT * FROM read_parquet(${sqlString(join(dir, "*.parquet"))}, union_by_name = true)`;
  return `SELECT ${sampleColumns.map(([name, type]) => `NULL::${type} AS "${name}"`).join(", ")} WHERE false`;
}

/** The derived views, in dependency order; they read only `raw_*` and each other. */
export const viewSql: readonly string[] = [
  `CREATE OR REPLACE VIEW rollouts AS
   WITH reg AS (
     SELECT * EXCLUDE (rn, segment) FROM (
       SELECT *, row_number() OVER (PARTITION BY rollout_id ORDER BY created_unix_ms DESC) AS rn FROM raw_rollout_records)
     WHERE rn = 1),
   res AS (
     SELECT * EXCLUDE (rn, segment) FROM (
       SELECT *, row_number() OVER (PARTITION BY rollout_id ORDER BY finished_unix_ms DESC) AS rn FROM raw_result_records)
     WHERE rn = 1),
   joined AS (
     SELECT reg.rollout_id, reg.experiment, run_of(reg.rollout_id, reg.labels_json) AS run, reg.iteration, reg.task_id,
            reg.group_id, reg.attempt, reg.harness, reg.policy_version, reg.created_unix_ms, reg.labels_json,
            label_of(reg.labels_json, 'openforge.dev/commit') AS commit,
            label_of(reg.labels_json, 'openforge.dev/model') AS model_label,
            -- The experiment's metric settings as forge run recorded them (NULL: not recorded).
            TRY_CAST(label_of(reg.labels_json, 'openforge.dev/pass-threshold') AS DOUBLE) AS recorded_threshold,
            label_of(reg.labels_json, 'openforge.dev/missing-trials') AS recorded_missing_trials,
            TRY_CAST(string_split(label_of(reg.labels_json, 'openforge.dev/metrics-k'), ',') AS INTEGER[]) AS recorded_ks,
            TRY_CAST(label_of(reg.labels_json, 'openforge.dev/rollouts-k') AS INTEGER) AS planned_k,
            res.status, res.reward, res.finished_unix_ms, res.finished_unix_ms - reg.created_unix_ms AS duration_ms,
            res.verifier_output, res.error, res.metrics_json
     FROM reg LEFT JOIN res USING (rollout_id))
   SELECT *,
          coalesce(forge_threshold(), recorded_threshold, 1.0) AS threshold,
          is_valid(status) AS valid,
          is_valid(status) AND is_success(status, reward, threshold) AS success,
          -- The reward as pass@k scores it: a rollout that is not ok scores 0 (docs/metrics.md).
          CASE WHEN is_valid(status) THEN CASE WHEN status = 'ok' THEN coalesce(reward, 0) ELSE 0.0 END END AS score
   FROM joined`,
  `CREATE OR REPLACE VIEW calls AS
   SELECT c.* EXCLUDE (segment), r.experiment, r.iteration, r.harness, r.task_id
   FROM raw_call_records c LEFT JOIN rollouts r USING (rollout_id)`,
  `CREATE OR REPLACE VIEW call_bodies AS SELECT * FROM raw_call_bodies`,
  `CREATE OR REPLACE VIEW tool_calls AS
   WITH res AS (
     SELECT * EXCLUDE (rn) FROM (
       SELECT *, row_number() OVER (PARTITION BY rollout_id, tool_call_id ORDER BY call_seq) AS rn FROM raw_tool_result_records)
     WHERE rn = 1)
   SELECT u.rollout_id, u.call_seq, u.idx,
          row_number() OVER (PARTITION BY u.rollout_id ORDER BY u.call_seq, u.idx) AS ordinal,
          u.tool_call_id, u.tool_name, u.arguments, u.kind, u.is_shell, u.plan_total, u.plan_completed,
          res.call_seq AS result_seq, res.rollout_id IS NOT NULL AS has_result,
          coalesce(res.is_error, false) AS is_error, res.result_text
   FROM raw_tool_use_records u
   -- Results with an empty id are never stored (rows.ts), so an id-less tool use matches nothing;
   -- a filter on u here would turn the hash join into a nested loop.
   LEFT JOIN res ON res.rollout_id = u.rollout_id AND res.tool_call_id = u.tool_call_id`,
  // Per task of each run: the counts every pass@k figure starts from.
  `CREATE OR REPLACE VIEW tasks AS
   SELECT experiment, run, task_id,
          count(*) AS rollouts,
          count(*) FILTER (WHERE status IS NOT NULL) AS finished,
          count(*) FILTER (WHERE status = 'infra_error') AS infra_errors,
          count(*) FILTER (WHERE valid) AS n,
          count(*) FILTER (WHERE success) AS c,
          avg(score) FILTER (WHERE valid) AS mean_reward,
          list_sort(list_distinct(list(harness))) AS harnesses,
          min(iteration) AS first_iteration, max(iteration) AS last_iteration
   FROM rollouts GROUP BY experiment, run, task_id`,
  // One row per rollout with its behaviour metrics (definitions: docs/metrics.md).
  `CREATE OR REPLACE VIEW rollout_behaviour AS
   WITH tc AS (SELECT * FROM tool_calls),
   last_edit AS (SELECT rollout_id, max(ordinal) AS last_edit FROM tc WHERE kind = 'edit' GROUP BY rollout_id),
   checks AS (
     SELECT tc.rollout_id, count(*) AS checks_after_edit FROM tc JOIN last_edit USING (rollout_id)
     WHERE tc.ordinal > last_edit.last_edit AND (tc.kind IN ('test', 'read') OR (tc.kind = 'shell' AND tc.has_result))
     GROUP BY tc.rollout_id),
   -- An error is recovered when the same tool later succeeds, i.e. the tool's last success comes after it.
   errors AS (
     SELECT rollout_id, count(*) AS tool_errors, count(*) FILTER (WHERE last_success > ordinal) AS errors_recovered
     FROM (
       SELECT rollout_id, ordinal, is_error,
              max(CASE WHEN has_result AND NOT is_error THEN ordinal END) OVER (PARTITION BY rollout_id, tool_name) AS last_success
       FROM tc)
     WHERE is_error GROUP BY rollout_id),
   plans AS (
     SELECT rollout_id, arg_max(share(plan_completed, plan_total), ordinal) AS plan_completion
     FROM tc WHERE plan_total IS NOT NULL AND plan_total > 0 GROUP BY rollout_id),
   used AS (
     SELECT rollout_id, list_distinct(list(tool_name)) AS tools_used, count(*) AS tool_calls,
            count(*) FILTER (WHERE is_shell) AS shell_calls
     FROM tc GROUP BY rollout_id),
   cs AS (
     SELECT rollout_id, count(*) AS turns,
            sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens,
            sum(coalesce(total_tokens, prompt_tokens + completion_tokens)) AS total_tokens,
            avg(latency_ms) AS mean_latency_ms, avg(ttft_ms) FILTER (WHERE stream) AS mean_ttft_ms,
            sum(latency_ms) AS latency_sum, count(latency_ms) AS latency_calls,
            sum(ttft_ms) FILTER (WHERE stream) AS ttft_sum, count(ttft_ms) FILTER (WHERE stream) AS ttft_calls,
            list_distinct(flatten(list(tools_offered))) AS tools_offered
     FROM raw_call_records GROUP BY rollout_id)
   SELECT r.rollout_id, r.experiment, r.run, r.iteration, r.harness, r.policy_version, r.task_id, r.status, r.reward, r.success,
          coalesce(cs.turns, 0) AS turns, cs.prompt_tokens, cs.completion_tokens, cs.total_tokens,
          cs.mean_latency_ms, cs.mean_ttft_ms, cs.latency_sum, coalesce(cs.latency_calls, 0) AS latency_calls,
          cs.ttft_sum, coalesce(cs.ttft_calls, 0) AS ttft_calls,
          cs.tools_offered, used.tools_used,
          share(len(list_intersect(coalesce(used.tools_used, []), cs.tools_offered)), len(cs.tools_offered)) AS tool_coverage,
          coalesce(used.tool_calls, 0) AS tool_calls, coalesce(used.shell_calls, 0) AS shell_calls,
          last_edit.last_edit IS NOT NULL AS edited,
          CASE WHEN last_edit.last_edit IS NULL THEN NULL ELSE coalesce(checks.checks_after_edit, 0) > 0 END AS self_verified,
          coalesce(errors.tool_errors, 0) AS tool_errors, coalesce(errors.errors_recovered, 0) AS errors_recovered,
          plans.plan_completion
   FROM rollouts r
   LEFT JOIN cs USING (rollout_id) LEFT JOIN used USING (rollout_id) LEFT JOIN last_edit USING (rollout_id)
   LEFT JOIN checks USING (rollout_id) LEFT JOIN errors USING (rollout_id) LEFT JOIN plans USING (rollout_id)`,
];

export type DefineOptions = {
  /** Copy the raw sources into tables (for a self-contained `--db` file) instead of views over parquet. */
  materialize?: boolean;
};

/**
 * Defines the macros, the `raw_*` sources and the views on a connection.
 *
 * @example
 * await defineViews(connection, "data");
 * await connection.runAndReadAll("SELECT avg(pass_at_k(n, c, 5)) FROM tasks");
 */
export async function defineViews(connection: DuckDBConnection, dataDir: string, options: DefineOptions = {}): Promise<void> {
  for (const sql of macroSql) await connection.run(sql);
  const parquetDir = join(dataDir, "parquet");
  const kind = options.materialize ? "TABLE" : "VIEW";
  for (const table of tableNames) {
    await connection.run(`DROP VIEW IF EXISTS raw_${table}`);
    await connection.run(`DROP TABLE IF EXISTS raw_${table}`);
    await connection.run(`CREATE ${kind} raw_${table} AS ${rawSourceSql(parquetDir, table)}`);
  }
  await connection.run(`DROP VIEW IF EXISTS samples`);
  await connection.run(`DROP TABLE IF EXISTS samples`);
  await connection.run(`CREATE ${kind} samples AS ${samplesSql(dataDir)}`);
  for (const sql of viewSql) await connection.run(sql);
}
