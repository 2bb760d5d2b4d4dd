/**
 * The compacted tables: one parquet file per table per log segment under `DIR/parquet/<table>/`.
 * Column lists live here once, for the appender, for empty views and for docs/metrics.md.
 */
import { LIST, VARCHAR, type DuckDBAppender } from "@duckdb/node-api";

export type ColumnType = "VARCHAR" | "DOUBLE" | "INTEGER" | "BOOLEAN" | "VARCHAR[]";
export type Column = readonly [name: string, type: ColumnType];
export type Value = string | number | boolean | string[] | null;

export const tables = {
  /** Rollout records (registration). */
  rollout_records: [
    ["rollout_id", "VARCHAR"],
    ["experiment", "VARCHAR"],
    ["iteration", "INTEGER"],
    ["task_id", "VARCHAR"],
    ["group_id", "VARCHAR"],
    ["attempt", "INTEGER"],
    ["harness", "VARCHAR"],
    ["created_unix_ms", "DOUBLE"],
    ["policy_version", "INTEGER"],
    ["labels_json", "VARCHAR"],
    ["segment", "VARCHAR"],
  ],
  /** RolloutResult records (the verifier's verdict). */
  result_records: [
    ["rollout_id", "VARCHAR"],
    ["reward", "DOUBLE"],
    ["status", "VARCHAR"],
    ["verifier_output", "VARCHAR"],
    ["finished_unix_ms", "DOUBLE"],
    ["error", "VARCHAR"],
    ["metrics_json", "VARCHAR"],
    ["segment", "VARCHAR"],
  ],
  /** ModelCall records without the bodies and token ids. */
  call_records: [
    ["rollout_id", "VARCHAR"],
    ["seq", "INTEGER"],
    ["call_id", "VARCHAR"],
    ["start_unix_ms", "DOUBLE"],
    ["end_unix_ms", "DOUBLE"],
    ["protocol", "VARCHAR"],
    ["model", "VARCHAR"],
    ["upstream", "VARCHAR"],
    ["policy_version", "INTEGER"],
    ["stream", "BOOLEAN"],
    ["http_status", "INTEGER"],
    ["status", "VARCHAR"],
    ["error", "VARCHAR"],
    ["prompt_tokens", "INTEGER"],
    ["completion_tokens", "INTEGER"],
    ["total_tokens", "INTEGER"],
    ["cached_tokens", "INTEGER"],
    ["latency_ms", "DOUBLE"],
    ["ttft_ms", "DOUBLE"],
    ["finish_reason", "VARCHAR"],
    ["token_status", "VARCHAR"],
    ["prompt_len", "INTEGER"],
    ["completion_len", "INTEGER"],
    ["upstream_attempts", "INTEGER"],
    ["tools_offered", "VARCHAR[]"],
    ["capability_tools_offered", "VARCHAR[]"],
    ["tool_use_count", "INTEGER"],
    ["assistant_text", "VARCHAR"],
    ["segment", "VARCHAR"],
  ],
  /** The request and response bodies, apart so that `calls` stays small. */
  call_bodies: [
    ["call_id", "VARCHAR"],
    ["rollout_id", "VARCHAR"],
    ["seq", "INTEGER"],
    ["request_body", "VARCHAR"],
    ["response_body", "VARCHAR"],
  ],
  /** Tool calls the model made, from each call's response, with what they did (analytics/classify.ts). */
  tool_use_records: [
    ["rollout_id", "VARCHAR"],
    ["call_seq", "INTEGER"],
    ["idx", "INTEGER"],
    ["tool_call_id", "VARCHAR"],
    ["tool_name", "VARCHAR"],
    ["arguments", "VARCHAR"],
    ["kind", "VARCHAR"],
    ["is_shell", "BOOLEAN"],
    ["writes", "VARCHAR[]"],
    ["reads", "VARCHAR[]"],
    ["executes", "VARCHAR[]"],
    ["runs_check", "BOOLEAN"],
    ["verifies_own_edit", "BOOLEAN"],
    ["intents", "VARCHAR[]"],
    ["plan_total", "INTEGER"],
    ["plan_completed", "VARCHAR[]"],
    ["parse_error", "VARCHAR"],
  ],
  /**
   * Tool results the harness sent back, from each call's request (first sighting per id and
   * occurrence: a harness that reuses ids answers the n-th call of an id with the n-th result).
   */
  tool_result_records: [
    ["rollout_id", "VARCHAR"],
    ["call_seq", "INTEGER"],
    ["tool_call_id", "VARCHAR"],
    ["occurrence", "INTEGER"],
    ["tool_name", "VARCHAR"],
    ["is_error", "BOOLEAN"],
    ["error_signal", "VARCHAR"],
    ["result_text", "VARCHAR"],
  ],
} as const satisfies { [name: string]: readonly Column[] };

export type TableName = keyof typeof tables;
export const tableNames = Object.keys(tables) as TableName[];

/**
 * `CREATE TABLE` for one of the compacted tables.
 *
 * @example
 * createTableSql("tool_use_records", "staging_tool_use_records") // CREATE OR REPLACE TABLE "staging_tool_use_records" (...)
 */
export function createTableSql(name: TableName, as: string = name): string {
  const columns = tables[name].map(([column, type]) => `"${column}" ${type}`).join(", ");
  return `CREATE OR REPLACE TABLE "${as}" (${columns})`;
}

/**
 * A zero-row SELECT with the table's columns and types, for views over no files yet.
 *
 * @example
 * emptySelectSql([["rollout_id", "VARCHAR"]]) // SELECT NULL::VARCHAR AS "rollout_id" WHERE false
 */
export function emptySelectSql(columns: readonly Column[]): string {
  return `SELECT ${columns.map(([column, type]) => `NULL::${type} AS "${column}"`).join(", ")} WHERE false`;
}

const listOfVarchar = LIST(VARCHAR);

/**
 * Appends one row, in column order, through a DuckDB appender.
 *
 * @example
 * appendRow(appender, tables.result_records, ["r1", 1, "ok", "", 5000, "", "{}", "seg-00000001.forge"])
 */
export function appendRow(appender: DuckDBAppender, columns: readonly Column[], row: readonly Value[]): void {
  columns.forEach(([, type], index) => {
    const value = row[index] ?? null;
    if (value === null) return appender.appendNull();
    switch (type) {
      case "VARCHAR":
        return appender.appendVarchar(String(value));
      case "DOUBLE":
        return appender.appendDouble(Number(value));
      case "INTEGER":
        return appender.appendInteger(Number(value));
      case "BOOLEAN":
        return appender.appendBoolean(Boolean(value));
      case "VARCHAR[]":
        return appender.appendList(value as string[], listOfVarchar);
    }
  });
  appender.endRow();
}
