import { expect, test } from "bun:test";
import { cutToFit, selectForTraining, type TrainingLimits } from "./select.ts";
import type { TrajectorySample } from "./types.ts";

const LIMITS: TrainingLimits = { auxiliary: "drop", overlong: "truncate", overlongReward: 0, finalOnly: false };

function sample(id: string, prompt: number, response: number, extra: Partial<TrajectorySample> = {}): TrajectorySample & { image_refs?: string[] } {
  const [rollout, index] = id.split("#");
  return {
    sample_id: id, rollout_id: rollout!, task_id: "t", group: "g", experiment: "e", iteration: 0, policy_version: 0, policy_versions: [],
    sample_index: Number(index), prompt_ids: Array.from({ length: prompt }, (_, i) => i), response_ids: Array.from({ length: response }, (_, i) => 100 + i),
    response_mask: Array(response).fill(1), response_logprobs: Array(response).fill(-0.5), reward: 0, num_turns: 2, is_final: false, auxiliary: null,
    call_ids: [], blob_refs: [], realigns: 0, drift_tokens: 0, ...extra,
  };
}

test("a cut never splits an image; a text model's cut is veRL's", () => {
  const [S, P, E] = [1, 5, 2];
  const s = { ...sample("r#0", 0, 0, { is_final: true }), prompt_ids: [9, S, P, P, P, E, 9], response_ids: [7, 7, 3, S, P, P, P, P, E, 7], response_mask: Array(10).fill(1), response_logprobs: Array(10).fill(-0.5), image_refs: ["a", "b"] };
  const vision = [S, P, E] as const;
  const out = cutToFit(s, { maxResponseLength: 6, vision });
  expect([out.response_ids, out.response_mask, out.image_refs]).toEqual([[7, 7, 3], [1, 1, 1], ["a"]]);
  expect(cutToFit(s, { maxResponseLength: 9, vision }).image_refs).toEqual(["a", "b"]);
  expect(cutToFit(s, { maxResponseLength: 6 }).response_ids).toEqual([7, 7, 3, S, P, P]);
  const left = cutToFit(s, { maxPromptLength: 3, vision });
  expect([left.prompt_ids, left.image_refs]).toEqual([[9], ["b"]]);
  expect(s.response_ids).toHaveLength(10); // the original is not touched
});

test("auxiliary samples are left out and counted; the final one comes last", () => {
  const t = [sample("r#1", 3, 4, { is_final: true }), sample("r#0", 3, 2), sample("r#2", 2, 1, { auxiliary: "title" })];
  const sel = selectForTraining(t, 1, LIMITS);
  expect(sel.samples.map((s) => s.sample_id)).toEqual(["r#0", "r#1"]);
  expect(sel).toMatchObject({ auxiliary: 1, of: 3, dropped: null, reward: 1 });
  expect(selectForTraining(t, 1, { ...LIMITS, auxiliary: "keep" }).samples).toHaveLength(3);
  expect(selectForTraining([t[2]!], 1, LIMITS).dropped).toBe("the trajectory has no agent sample");
});

test("drop: an overlong sample is left out, an overlong final leaves the trajectory out", () => {
  const limits = { ...LIMITS, overlong: "drop" as const, maxPromptLength: 4, maxResponseLength: 3 };
  const kept = selectForTraining([sample("r#0", 3, 9), sample("r#1", 3, 3, { is_final: true })], 1, limits);
  expect([kept.samples.map((s) => s.sample_id), kept.overlong]).toEqual([["r#1"], 1]);
  const out = selectForTraining([sample("r#0", 3, 1), sample("r#1", 5, 1, { is_final: true })], 1, limits);
  expect([out.samples, out.overlong, out.dropped]).toEqual([[], 2, "final sample r#1: prompt has 5 tokens > rollout.prompt_length=4"]);
  expect(selectForTraining([sample("r#0", 3, 1), sample("r#1", 5, 1, { is_final: true })], 1, { ...limits, finalOnly: true })).toMatchObject({ overlong: 1, left_out: 1 });
});

test("truncate / penalize: cut to fit; an empty sample is left out, an empty final hands the reward on", () => {
  const t = [sample("r#0", 3, 9), sample("r#1", 3, 0, { is_final: true })];
  const sel = selectForTraining(t, 1, { ...LIMITS, maxResponseLength: 3 });
  expect(sel.samples.map((s) => [s.sample_id, s.response_ids.length])).toEqual([["r#0", 3]]);
  expect(sel).toMatchObject({ overlong: 2, truncated: 1, final_overlong: true, penalized: false, reward: 1 });
  const penalized = selectForTraining(t, 1, { ...LIMITS, overlong: "penalize", overlongReward: -1, maxResponseLength: 3 });
  expect(penalized).toMatchObject({ reward: -1, penalized: true });
  expect(selectForTraining([sample("r#0", 3, 0, { is_final: true })], 1, LIMITS).dropped).toContain("empty");
  expect(selectForTraining([sample("r#0", 3, 2), sample("r#1", 3, 2, { is_final: true })], 1, { ...LIMITS, finalOnly: true })).toMatchObject({ left_out: 1, samples: [expect.objectContaining({ sample_id: "r#1" })] });
});
