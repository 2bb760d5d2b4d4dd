/**
 * The analysis views over the compacted tables. Each `raw_<table>` source is either the
 * parquet files of `DIR/parquet/<table>/` (or an empty select while there are none) or, in
 * a `--db` file, a materialized copy, so notebooks work without the data directory.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { DuckDBConnection } from "@duckdb/node-api";
import { sqlString } from "../lib/index.ts";
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
  // Every rollout; `rollouts` (what every metric reads) leaves out a trainer's validation
  // rollouts (label openforge.dev/validation), which `validation_rollouts` reports apart.
  `CREATE OR REPLACE VIEW all_rollouts AS
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
            coalesce(label_of(reg.labels_json, 'openforge.dev/validation') = 'true', false) AS validation,
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
  `CREATE OR REPLACE VIEW rollouts AS SELECT * FROM all_rollouts WHERE NOT validation`,
  `CREATE OR REPLACE VIEW validation_rollouts AS SELECT * FROM all_rollouts WHERE validation`,
  `CREATE OR REPLACE VIEW calls AS
   SELECT c.* EXCLUDE (segment), r.experiment, r.iteration, r.harness, r.task_id, r.validation
   FROM raw_call_records c LEFT JOIN all_rollouts r USING (rollout_id)`,
  `CREATE OR REPLACE VIEW call_bodies AS SELECT * FROM raw_call_bodies`,
  // Each tool use with its result: matched by id and occurrence (the n-th use of an id gets the
  // n-th result of that id), so harnesses that reuse ids per turn are not confused.
  `CREATE OR REPLACE VIEW tool_calls AS
   WITH res AS (
     SELECT * EXCLUDE (rn) FROM (
       SELECT *, row_number() OVER (PARTITION BY rollout_id, tool_call_id, occurrence ORDER BY call_seq) AS rn FROM raw_tool_result_records)
     WHERE rn = 1),
   u AS (
     SELECT *, (row_number() OVER (PARTITION BY rollout_id, tool_call_id ORDER BY call_seq, idx) - 1)::INTEGER AS occurrence,
            row_number() OVER (PARTITION BY rollout_id ORDER BY call_seq, idx) AS ordinal
     FROM raw_tool_use_records)
   SELECT u.rollout_id, u.call_seq, u.idx, u.ordinal, u.tool_call_id, u.occurrence, u.tool_name, u.arguments, u.kind, u.is_shell,
          u.writes, u.reads, u.executes, u.runs_check, u.verifies_own_edit, u.intents, u.plan_total, u.plan_completed, u.parse_error,
          res.call_seq AS result_seq, res.rollout_id IS NOT NULL AS has_result,
          -- NULL: no result, or a result without a structured error signal (docs/metrics.md).
          res.is_error, res.error_signal, res.result_text
   FROM u
   -- Results with an empty id are never stored (rows.ts), so an id-less tool use matches nothing.
   LEFT JOIN res ON res.rollout_id = u.rollout_id AND res.tool_call_id = u.tool_call_id AND res.occurrence = u.occurrence`,
  // The files each tool call wrote, read or ran, one row per (call, file). A call whose result
  // reports an error (an edit that did not apply) wrote nothing.
  `CREATE OR REPLACE VIEW tool_files AS
   SELECT rollout_id, ordinal, 'write' AS op, norm_path(unnest(writes)) AS path FROM tool_calls WHERE is_error IS DISTINCT FROM true
   UNION ALL SELECT rollout_id, ordinal, 'read', norm_path(unnest(reads)) FROM tool_calls
   UNION ALL SELECT rollout_id, ordinal, 'exec', norm_path(unnest(executes)) FROM tool_calls`,
  // Each tool call whose result reports an error, and whether it was recovered: a later call
  // with the same intent returned a result known to be no error.
  `CREATE OR REPLACE VIEW tool_errors AS
   WITH error_calls AS (SELECT rollout_id, ordinal, tool_call_id, occurrence, tool_name, intents, error_signal, result_text FROM tool_calls WHERE is_error),
   retries AS (
     SELECT e.rollout_id, e.ordinal, min(later.ordinal) AS recovered_at
     FROM error_calls e JOIN tool_calls later ON later.rollout_id = e.rollout_id AND later.ordinal > e.ordinal
     WHERE later.is_error = false AND len(list_intersect(later.intents, e.intents)) > 0
     GROUP BY e.rollout_id, e.ordinal)
   SELECT e.*, retries.recovered_at, retries.recovered_at IS NOT NULL AS recovered
   FROM error_calls e LEFT JOIN retries USING (rollout_id, ordinal)`,
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
   -- Edits that did not report an error (an edit that failed changed nothing).
   last_edit AS (SELECT rollout_id, max(ordinal) AS last_edit FROM tc WHERE kind = 'edit' AND is_error IS DISTINCT FROM true GROUP BY rollout_id),
   written AS (SELECT DISTINCT rollout_id, path FROM tool_files WHERE op = 'write' AND path <> '?'),
   -- After the last edit, a call whose result came back and that runs a check, or reads or runs a
   -- file the rollout wrote; or the last edit's own script does so after writing (sed -i … && pytest).
   verifications AS (
     SELECT tc.rollout_id, count(DISTINCT tc.ordinal) AS verifications
     FROM tc JOIN last_edit USING (rollout_id)
     LEFT JOIN tool_files f ON f.rollout_id = tc.rollout_id AND f.ordinal = tc.ordinal AND f.op IN ('read', 'exec')
     LEFT JOIN written w ON w.rollout_id = tc.rollout_id AND (f.path = '*' OR path_match(f.path, w.path))
     WHERE tc.has_result AND ((tc.ordinal > last_edit.last_edit AND (tc.runs_check OR w.path IS NOT NULL))
                              OR (tc.ordinal = last_edit.last_edit AND tc.verifies_own_edit))
     GROUP BY tc.rollout_id),
   errors AS (SELECT rollout_id, count(*) AS tool_errors, count(*) FILTER (WHERE recovered) AS errors_recovered FROM tool_errors GROUP BY rollout_id),
   -- Plan items count as completed when the steps between plan updates have evidence: an item
   -- newly marked completed needs a tool call (not plan, not control) that returned without error
   -- since the previous update; more items than such calls are not credited.
   plan_steps AS (
     SELECT rollout_id, ordinal, plan_total, plan_completed,
            cum_actions - coalesce(lag(cum_actions) OVER w, 0) AS actions_between,
            len(list_filter(plan_completed, lambda x: NOT list_contains(coalesce(lag(plan_completed) OVER w, []::VARCHAR[]), x))) AS newly_completed
     FROM (
       SELECT *, sum(CASE WHEN kind NOT IN ('plan', 'control') AND has_result AND is_error IS DISTINCT FROM true THEN 1 ELSE 0 END)
                   OVER (PARTITION BY rollout_id ORDER BY ordinal ROWS UNBOUNDED PRECEDING) AS cum_actions
       FROM tc) t
     WHERE kind = 'plan' AND plan_total IS NOT NULL
     WINDOW w AS (PARTITION BY rollout_id ORDER BY ordinal)),
   plans AS (
     SELECT rollout_id, arg_max(plan_total, ordinal) AS plan_items, arg_max(len(plan_completed), ordinal) AS plan_items_marked,
            sum(least(newly_completed, actions_between)) AS plan_items_evidenced
     FROM plan_steps GROUP BY rollout_id),
   used AS (
     SELECT rollout_id, list_distinct(list(tool_name) FILTER (WHERE kind <> 'control')) AS tools_used, count(*) AS tool_calls,
            count(*) FILTER (WHERE is_shell) AS shell_calls, bool_or(runs_check AND has_result) AS ran_checks,
            count(*) FILTER (WHERE has_result) AS results, count(*) FILTER (WHERE is_error IS NOT NULL) AS results_known
     FROM tc GROUP BY rollout_id),
   cs AS (
     SELECT rollout_id, count(*) AS turns,
            sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens,
            sum(coalesce(total_tokens, prompt_tokens + completion_tokens)) AS total_tokens,
            avg(latency_ms) AS mean_latency_ms, avg(ttft_ms) FILTER (WHERE stream) AS mean_ttft_ms,
            sum(latency_ms) AS latency_sum, count(latency_ms) AS latency_calls,
            sum(ttft_ms) FILTER (WHERE stream) AS ttft_sum, count(ttft_ms) FILTER (WHERE stream) AS ttft_calls,
            list_distinct(flatten(list(tools_offered))) AS tools_offered,
            list_distinct(flatten(list(capability_tools_offered))) AS capability_tools_offered
     FROM raw_call_records GROUP BY rollout_id)
   SELECT r.rollout_id, r.experiment, r.run, r.iteration, r.harness, r.policy_version, r.task_id, r.status, r.reward, r.success,
          coalesce(cs.turns, 0) AS turns, cs.prompt_tokens, cs.completion_tokens, cs.total_tokens,
          cs.mean_latency_ms, cs.mean_ttft_ms, cs.latency_sum, coalesce(cs.latency_calls, 0) AS latency_calls,
          cs.ttft_sum, coalesce(cs.ttft_calls, 0) AS ttft_calls,
          cs.tools_offered, cs.capability_tools_offered, used.tools_used,
          share(len(list_intersect(coalesce(used.tools_used, []), cs.capability_tools_offered)), len(cs.capability_tools_offered)) AS tool_coverage,
          coalesce(used.tool_calls, 0) AS tool_calls, coalesce(used.shell_calls, 0) AS shell_calls,
          coalesce(used.ran_checks, false) AS ran_checks,
          coalesce(used.results, 0) AS tool_results, coalesce(used.results_known, 0) AS tool_results_known,
          last_edit.last_edit IS NOT NULL AS edited,
          CASE WHEN last_edit.last_edit IS NULL THEN NULL ELSE coalesce(verifications.verifications, 0) > 0 END AS self_verified,
          coalesce(errors.tool_errors, 0) AS tool_errors, coalesce(errors.errors_recovered, 0) AS errors_recovered,
          plans.plan_items, plans.plan_items_marked, least(plans.plan_items_evidenced, plans.plan_items_marked) AS plan_items_evidenced,
          CASE WHEN plans.plan_items > 0 THEN least(plans.plan_items_evidenced, plans.plan_items_marked) / plans.plan_items END AS plan_completion
   FROM rollouts r
   LEFT JOIN cs USING (rollout_id) LEFT JOIN used USING (rollout_id) LEFT JOIN last_edit USING (rollout_id)
   LEFT JOIN verifications USING (rollout_id) LEFT JOIN errors USING (rollout_id) LEFT JOIN plans USING (rollout_id)`,
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
