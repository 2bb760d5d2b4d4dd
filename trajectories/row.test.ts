import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { extraInfoFields, rowOf, rowSpecJson, sftRowFields, verlRowFields, type RowSource } from "./row.ts";
import type { RolloutTrajectory, TrajectorySample } from "./types.ts";

const SPEC_FILE = join(import.meta.dir, "..", "integrations", "verl", "forge_verl", "row_spec.json");

test("forge_verl's row_spec.json is the one generated from row.ts (regenerate: bun trajectories/row.ts > integrations/verl/forge_verl/row_spec.json)", () => {
  expect(readFileSync(SPEC_FILE, "utf8")).toBe(rowSpecJson());
});

test("each field of a row sits in one place: no column or flattened field twice across the top level and extra_info", () => {
  for (const fields of [verlRowFields, sftRowFields]) {
    const top = fields.filter((f) => f.column !== "extra_info");
    const all = [...top, ...extraInfoFields];
    expect(new Set(all.map((f) => f.column)).size).toBe(all.length);
    expect(new Set(all.map((f) => f.field)).size).toBe(all.length);
  }
});

test("every field of a trajectory sample is exported under the name forge_verl flattens it to", () => {
  const sample: TrajectorySample = {
    sample_id: "r#0", rollout_id: "r", task_id: "t", group: "g", experiment: "e", iteration: 2, policy_version: 3, policy_versions: [3],
    sample_index: 0, prompt_ids: [1], response_ids: [2], response_mask: [1], response_logprobs: [-0.5], reward: 1, num_turns: 2,
    is_final: true, auxiliary: null, call_ids: ["c"], blob_refs: [], realigns: 0, drift_tokens: 0,
  };
  const trajectory = { status: "ok", reward: 1 } as RolloutTrajectory;
  const source: RowSource = { sample, trajectory, dataSource: "d", messages: [{ role: "user", content: "hi" }], imageRefs: [], sampling: { sampling: null, sampling_varies: false, engine: "vllm", engine_version: "x", logprobs_mode: "processed_logprobs" } };
  const row = rowOf(verlRowFields, source) as { [k: string]: unknown; extra_info: { [k: string]: unknown } };
  // Flatten as forge_verl does (row.py): each spec entry read from its one place.
  const flat: { [k: string]: unknown } = {};
  for (const f of verlRowFields) if (f.column !== "extra_info") flat[f.field] = row[f.column];
  for (const f of extraInfoFields) flat[f.field] = row.extra_info[f.column];
  for (const [key, value] of Object.entries(sample)) expect([key, flat[key]]).toEqual([key, value]);
  expect(flat).toMatchObject({ status: "ok", rollout_reward: 1, index: -1, agent_name: "forge_agent", prompt: [{ role: "user", content: "hi" }] });
});
