/**
 * Column types of the exported parquet files, as DuckDB types for `read_json(columns = …)`.
 * The verl columns follow veRL's RLHFDataset (prompt, data_source, extra_info with index,
 * agent_name) and AgentLoopOutput (the token columns); see docs/verl.md.
 */
import { sqlString } from "../lib/index.ts";

const message = "STRUCT(role VARCHAR, content VARCHAR)";
const toolCall = 'STRUCT(id VARCHAR, "type" VARCHAR, "function" STRUCT(name VARCHAR, arguments VARCHAR))';
const sftMessage = `STRUCT(role VARCHAR, content VARCHAR, tool_calls ${toolCall}[], tool_call_id VARCHAR, name VARCHAR)`;

const extraInfo = `STRUCT(
  "index" BIGINT, sample_id VARCHAR, rollout_id VARCHAR, task_id VARCHAR, "group" VARCHAR, experiment VARCHAR,
  iteration INTEGER, policy_version INTEGER, policy_versions INTEGER[], sample_index INTEGER, is_final BOOLEAN,
  auxiliary VARCHAR, call_ids VARCHAR[], blob_refs VARCHAR[], realigns INTEGER, drift_tokens INTEGER, status VARCHAR, rollout_reward DOUBLE,
  sampling STRUCT(temperature DOUBLE, top_p DOUBLE, top_k INTEGER, min_p DOUBLE, max_tokens BIGINT, seed DOUBLE, presence_penalty DOUBLE,
    frequency_penalty DOUBLE, repetition_penalty DOUBLE, "constraints" VARCHAR, sources VARCHAR),
  sampling_varies BOOLEAN, engine VARCHAR, engine_version VARCHAR, logprobs_mode VARCHAR)`;

export const verlColumns: readonly (readonly [string, string])[] = [
  ["uid", "VARCHAR"],
  ["data_source", "VARCHAR"],
  ["agent_name", "VARCHAR"],
  ["prompt", `${message}[]`],
  ["prompt_ids", "INTEGER[]"],
  ["response_ids", "INTEGER[]"],
  ["response_mask", "INTEGER[]"],
  ["response_logprobs", "DOUBLE[]"],
  ["reward", "DOUBLE"],
  ["num_turns", "INTEGER"],
  ["rollout_id", "VARCHAR"],
  ["task_id", "VARCHAR"],
  ["group_id", "VARCHAR"],
  ["policy_version", "INTEGER"],
  ["sample_id", "VARCHAR"],
  ["extra_info", extraInfo],
  // sha256 of each image occurrence of the sample, in order: Blobs in `<batch>.blobs/` (veRL's multi_modal_data).
  ["image_refs", "VARCHAR[]"],
];

export const sftColumns: readonly (readonly [string, string])[] = [
  ["messages", `${sftMessage}[]`],
  ["uid", "VARCHAR"],
  ["data_source", "VARCHAR"],
  ["rollout_id", "VARCHAR"],
  ["task_id", "VARCHAR"],
  ["group_id", "VARCHAR"],
  ["policy_version", "INTEGER"],
  ["sample_id", "VARCHAR"],
  ["reward", "DOUBLE"],
  ["extra_info", extraInfo],
];

/** `{name: 'TYPE', ...}` for DuckDB's read_json. */
export function columnsSql(columns: readonly (readonly [string, string])[]): string {
  return `{${columns.map(([name, type]) => `'${name}': ${sqlString(type.replace(/\s+/g, " "))}`).join(", ")}}`;
}

/** The GRPO dataset of `groupRows`: one row per group, naming the samples its n copies replay. */
export const groupColumns: readonly (readonly [string, string])[] = [
  ["uid", "VARCHAR"],
  ["data_source", "VARCHAR"],
  ["agent_name", "VARCHAR"],
  ["prompt", `${message}[]`],
  ["task_id", "VARCHAR"],
  ["extra_info", 'STRUCT("index" BIGINT, "group" VARCHAR, task_id VARCHAR, sample_ids VARCHAR[], rollout_ids VARCHAR[])'],
];
