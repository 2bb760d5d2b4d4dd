/**
 * The exported row, specified once (docs/verl.md, "The batch"): every column of a veRL / SFT row
 * and of its `extra_info` is one entry here — its name, its DuckDB type, the name of the sample
 * field it holds (what the trajectory route calls it, and what forge_verl reads after
 * flattening a row) and how it is computed. The rows `forge export` writes, the parquet schema
 * and analytics' `samples` columns are generated from it, and `forge_verl` reads the same entries
 * from `integrations/verl/forge_verl/row_spec.json` (`rowSpecJson()`; a test fails when the file
 * drifts). Each field sits in one place: at the top level or in `extra_info`, never both.
 */
import { sqlString } from "../lib/index.ts";
import type { ChatMessage } from "./messages.ts";
import type { SamplingInfo } from "./sampling.ts";
import type { RolloutTrajectory, TrajectorySample } from "./types.ts";

/** What a row is computed from: one sample of an assembled rollout and what export read for it. */
export type RowSource = {
  sample: TrajectorySample;
  trajectory: RolloutTrajectory;
  dataSource: string;
  /** veRL: the first call's request messages; SFT: the last call's request plus its answer. */
  messages: ChatMessage[];
  /** sha256 of each image occurrence of the sample, in order (veRL rows). */
  imageRefs: string[];
  sampling: SamplingInfo;
};

export type RowField = {
  /** The column name in the row (or in `extra_info`). */
  column: string;
  /** DuckDB type, for `read_json(columns = …)` and analytics' empty `samples` view. */
  type: string;
  /** The name forge_verl reads it under once a row is flattened: the trajectory route's sample field where there is one. */
  field: string;
  get: (s: RowSource) => unknown;
};

const message = "STRUCT(role VARCHAR, content VARCHAR)";
const toolCall = 'STRUCT(id VARCHAR, "type" VARCHAR, "function" STRUCT(name VARCHAR, arguments VARCHAR))';
const sftMessage = `STRUCT(role VARCHAR, content VARCHAR, tool_calls ${toolCall}[], tool_call_id VARCHAR, name VARCHAR)`;
const samplingType = `STRUCT(temperature DOUBLE, top_p DOUBLE, top_k INTEGER, min_p DOUBLE, max_tokens BIGINT, seed DOUBLE, presence_penalty DOUBLE,
    frequency_penalty DOUBLE, repetition_penalty DOUBLE, "constraints" VARCHAR, sources VARCHAR)`;

const f = (column: string, type: string, get: RowField["get"], field = column): RowField => ({ column, type, field, get });
const sample = <K extends keyof TrajectorySample>(column: string, type: string, key: K): RowField => f(column, type, (s) => s.sample[key], key);

/**
 * `extra_info`: what veRL hands the agent loop untouched (`index`, what replay looks rows up
 * by, is numbered after small groups are dropped: -1 until then), and the rest of a sample's
 * provenance. What veRL's sampling was (docs/engines.md) rides here too: veRL recomputes
 * logprobs at its own temperature.
 */
export const extraInfoFields: readonly RowField[] = [
  f("index", "BIGINT", () => -1),
  sample("experiment", "VARCHAR", "experiment"),
  sample("iteration", "INTEGER", "iteration"),
  sample("policy_versions", "INTEGER[]", "policy_versions"),
  sample("sample_index", "INTEGER", "sample_index"),
  sample("is_final", "BOOLEAN", "is_final"),
  sample("auxiliary", "VARCHAR", "auxiliary"),
  sample("call_ids", "VARCHAR[]", "call_ids"),
  sample("blob_refs", "VARCHAR[]", "blob_refs"),
  sample("realigns", "INTEGER", "realigns"),
  sample("drift_tokens", "INTEGER", "drift_tokens"),
  f("status", "VARCHAR", (s) => s.trajectory.status),
  f("rollout_reward", "DOUBLE", (s) => s.trajectory.reward),
  f("sampling", samplingType, (s) => s.sampling.sampling),
  f("sampling_varies", "BOOLEAN", (s) => s.sampling.sampling_varies),
  f("engine", "VARCHAR", (s) => s.sampling.engine),
  f("engine_version", "VARCHAR", (s) => s.sampling.engine_version),
  f("logprobs_mode", "VARCHAR", (s) => s.sampling.logprobs_mode),
];

/** The provenance columns analytics' `samples` view reads, at the top level of both formats. */
const provenance: readonly RowField[] = [
  sample("rollout_id", "VARCHAR", "rollout_id"),
  sample("task_id", "VARCHAR", "task_id"),
  sample("policy_version", "INTEGER", "policy_version"),
  sample("sample_id", "VARCHAR", "sample_id"),
];

// veRL's columns: `uid` is the GRPO group (task × policy version, or the registered group), the
// sample's `group`; `agent_name` routes the row to ForgeAgentLoop.
const uid = sample("uid", "VARCHAR", "group");
const dataSource = f("data_source", "VARCHAR", (s) => s.dataSource);
const reward = sample("reward", "DOUBLE", "reward");
const extraInfoType = `STRUCT(${extraInfoFields.map((x) => `${quoted(x.column)} ${x.type}`).join(", ")})`;
const extraInfo = f("extra_info", extraInfoType, (s) => Object.fromEntries(extraInfoFields.map((x) => [x.column, x.get(s)])));

/** One row per sample: veRL's RLHFDataset columns and AgentLoopOutput's token columns (docs/verl.md). */
export const verlRowFields: readonly RowField[] = [
  uid,
  dataSource,
  f("agent_name", "VARCHAR", () => "forge_agent"),
  f("prompt", `${message}[]`, (s) => s.messages.map((m) => ({ role: m.role, content: m.content }))),
  sample("prompt_ids", "INTEGER[]", "prompt_ids"),
  sample("response_ids", "INTEGER[]", "response_ids"),
  sample("response_mask", "INTEGER[]", "response_mask"),
  sample("response_logprobs", "DOUBLE[]", "response_logprobs"),
  reward,
  sample("num_turns", "INTEGER", "num_turns"),
  ...provenance,
  extraInfo,
  // sha256 of each image occurrence of the sample, in order: Blobs in `<batch>.blobs/` (veRL's multi_modal_data).
  f("image_refs", "VARCHAR[]", (s) => s.imageRefs),
];

/** One row per sample of an SFT export: the whole conversation as messages. */
export const sftRowFields: readonly RowField[] = [f("messages", `${sftMessage}[]`, (s) => s.messages), uid, dataSource, ...provenance, reward, extraInfo];

/** The row of `fields` for one sample. */
export function rowOf(fields: readonly RowField[], source: RowSource): { [column: string]: unknown } {
  const row: { [column: string]: unknown } = {};
  for (const x of fields) row[x.column] = x.get(source);
  return row;
}

/** `extra_info` of a group dataset row: its number, its group, the rollouts its runs replay. */
const groupExtraInfo: readonly (readonly [string, string])[] = [
  ["index", "BIGINT"],
  ["group", "VARCHAR"],
  ["rollout_ids", "VARCHAR[]"],
];
/**
 * The GRPO dataset of `--group-rows n`: one row per group naming the n rollouts its runs replay,
 * its other columns taken from the group's first veRL row. `extra_info.group` is what the loop
 * reads the group from: veRL replaces `uid` with a fresh one per dataset row.
 */
export const groupRowColumns: readonly (readonly [string, string])[] = [
  ["uid", "VARCHAR"],
  ["data_source", "VARCHAR"],
  ["agent_name", "VARCHAR"],
  ["prompt", `${message}[]`],
  ["task_id", "VARCHAR"],
  ["extra_info", `STRUCT(${groupExtraInfo.map(([c, t]) => `${quoted(c)} ${t}`).join(", ")})`],
];

function quoted(name: string): string {
  return /^[a-z_]+$/.test(name) && !["index", "group", "constraints"].includes(name) ? name : `"${name}"`;
}

/** `[column, type]` pairs of a row. */
export function columnTypes(fields: readonly RowField[]): readonly (readonly [string, string])[] {
  return fields.map((x) => [x.column, x.type] as const);
}

/** The veRL batch's columns (what analytics' `samples` view has when no export exists). */
export const verlColumns = columnTypes(verlRowFields);

/** `{name: 'TYPE', ...}` for DuckDB's read_json. */
export function columnsSql(columns: readonly (readonly [string, string])[]): string {
  return `{${columns.map(([name, type]) => `'${name}': ${sqlString(type.replace(/\s+/g, " "))}`).join(", ")}}`;
}

/**
 * The specification as forge_verl reads it (`integrations/verl/forge_verl/row_spec.json`): per
 * format the top-level columns and the `extra_info` ones, each with the field it flattens to.
 * Regenerate with `bun trajectories/row.ts > integrations/verl/forge_verl/row_spec.json`.
 */
export function rowSpecJson(): string {
  const pairs = (columns: readonly (readonly [string, string])[]) => columns.map(([column, type]) => ({ column, field: column, type }));
  const entries = (fields: readonly RowField[]) => fields.map((x) => ({ column: x.column, field: x.field, type: x.type.replace(/\s+/g, " ") }));
  const spec = {
    about: "Generated from trajectories/row.ts (bun trajectories/row.ts): the exported row, each field in one place. Do not edit.",
    verl: { row: entries(verlRowFields.filter((x) => x !== extraInfo)), extra_info: entries(extraInfoFields) },
    sft: { row: entries(sftRowFields.filter((x) => x !== extraInfo)), extra_info: entries(extraInfoFields) },
    groups: { row: pairs(groupRowColumns.filter(([c]) => c !== "extra_info")), extra_info: pairs(groupExtraInfo) },
  };
  // One entry a line: a drift shows as the lines of the fields that changed.
  return `${JSON.stringify(spec, null, 2).replace(/\{\n\s+"column": ([^\n]*),\n\s+"field": ([^\n]*),\n\s+"type": ([^\n]*)\n\s+\}/g, '{ "column": $1, "field": $2, "type": $3 }')}\n`;
}

if (import.meta.main) process.stdout.write(rowSpecJson());
