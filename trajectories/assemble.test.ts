import { describe, expect, test } from "bun:test";
import { fromBinary, RecordSchema, RolloutStatus, toBinary, TokenStatus } from "../schemas/index.ts";
import { assembleTrajectory } from "./assemble.ts";
import { collectRollouts } from "./resolve.ts";
import { rolloutRecords } from "./testing.ts";
import type { AssembleOptions } from "./types.ts";

const THINK = 151667;
const END_THINK = 151668;
const NL2 = 271;
const qwen3: AssembleOptions = { thinkOpen: THINK, thinkClose: END_THINK, thinkTrailing: [198, NL2] };
const f32 = (x: number): number => Math.fround(x);

async function assemble(r: ReturnType<typeof rolloutRecords>, options: AssembleOptions = {}) {
  const out = [];
  // Through protobuf binary, as read from a log (logprobs become float32).
  const records = r.records.map((rec) => fromBinary(RecordSchema, toBinary(RecordSchema, rec)));
  for await (const c of collectRollouts(records)) out.push(assembleTrajectory(c.calls, c.rollout, c.result, options, c.content));
  expect(out).toHaveLength(1);
  return out[0]!;
}

describe("assembleTrajectory", () => {
  test("clean: one sample grows; inserted tokens mask 0 logprob 0, sampled tokens mask 1 with their logprobs", async () => {
    const r = rolloutRecords("r1", { task: "t", group: "g" });
    r.call({ prompt: [1, 2, 3], completion: [10, 11], logprobs: [-0.5, -0.25] });
    r.call({ prompt: [1, 2, 3, 10, 11, 4, 5], completion: [12], logprobs: [-0.125] });
    r.call({ prompt: [1, 2, 3, 10, 11, 4, 5, 12, 6], completion: [13, 14], logprobs: [-1, -2] });
    r.finish(0.75);
    const t = await assemble(r);
    expect(t.samples).toHaveLength(1);
    const s = t.samples[0]!;
    expect(s.prompt_ids).toEqual([1, 2, 3]);
    expect(s.response_ids).toEqual([10, 11, 4, 5, 12, 6, 13, 14]);
    expect(s.response_mask).toEqual([1, 1, 0, 0, 1, 0, 1, 1]);
    expect(s.response_logprobs).toEqual([-0.5, -0.25, 0, 0, -0.125, 0, -1, -2]);
    expect(s.reward).toBe(0.75);
    expect(s.num_turns).toBe(6);
    expect(s.is_final).toBe(true);
    expect(t.stats).toEqual({ calls: 3, clean: 2, realign: 0, fork: 0, broken: 0, auxiliary: 0, drift_tokens: 0 });
    expect(t.kinds.map((k) => k.kind)).toEqual(["start", "clean", "clean"]);
  });

  test("realign: Qwen3's template strips the earlier <think> block; sampled tokens are kept and the drift counted", async () => {
    const r = rolloutRecords("r2");
    const turn1 = [THINK, 50, 51, END_THINK, NL2, 20, 21, 99];
    r.call({ prompt: [1, 2, 3], completion: turn1, logprobs: turn1.map((_, k) => -0.1 * (k + 1)) });
    // The re-rendered history: the think block and its "\n\n" are gone.
    r.call({ prompt: [1, 2, 3, 20, 21, 99, 7, 8], completion: [30, 99], logprobs: [-0.3, -0.03] });
    r.finish(1);
    const t = await assemble(r, qwen3);
    expect(t.samples).toHaveLength(1);
    const s = t.samples[0]!;
    expect(s.response_ids).toEqual([...turn1, 7, 8, 30, 99]);
    expect(s.response_mask).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1]);
    expect(s.response_logprobs).toEqual([...turn1.map((_, k) => f32(-0.1 * (k + 1))), 0, 0, f32(-0.3), f32(-0.03)]);
    expect(s.drift_tokens).toBe(5);
    expect(t.stats.realign).toBe(1);
    expect(t.stats.drift_tokens).toBe(5);
    // Without the think ids configured the same calls fork.
    const r2 = rolloutRecords("r2b");
    r2.call({ prompt: [1, 2, 3], completion: turn1 });
    r2.call({ prompt: [1, 2, 3, 20, 21, 99, 7, 8], completion: [30] });
    r2.finish(1);
    expect((await assemble(r2)).stats.fork).toBe(1);
  });

  test("realign refuses: a stripped span that was not sampled, or too little retained", async () => {
    const r = rolloutRecords("r3");
    r.call({ prompt: [THINK, 5, END_THINK, 1], completion: [20] }); // the block is in the prompt, not sampled
    r.call({ prompt: [1, 20, 7], completion: [21] });
    r.finish(1);
    expect((await assemble(r, qwen3)).stats.fork).toBe(1);
    const r2 = rolloutRecords("r3b");
    r2.call({ prompt: [1], completion: [THINK, 5, 6, 7, 8, END_THINK, 20] });
    r2.call({ prompt: [1, 20, 7], completion: [21] });
    r2.finish(1);
    expect((await assemble(r2, { ...qwen3, minRetainedFraction: 0.5 })).stats.fork).toBe(1);
    expect((await assemble(r2, { ...qwen3, minRetainedFraction: 0.2 })).stats.realign).toBe(1);
  });

  test("fork: OpenClaw re-appends its context message at the end and renames tool-call ids", async () => {
    const r = rolloutRecords("r4");
    const SYS = [1, 2];
    const CTX = [60, 61, 62];
    const USER = [3];
    // Turn 1: the context sits before the user message; the policy calls a tool with id 900.
    r.call({ prompt: [...SYS, ...CTX, ...USER], completion: [40, 900, 41] });
    // Turn 2: the harness moved the context to the end and renamed the call id to 901.
    r.call({ prompt: [...SYS, ...USER, 40, 901, 41, 70, 71, ...CTX], completion: [42] });
    r.call({ prompt: [...SYS, ...USER, 40, 901, 41, 70, 71, ...CTX, 42, 72], completion: [43] });
    r.finish(1);
    const t = await assemble(r, qwen3);
    expect(t.samples).toHaveLength(2);
    expect(t.kinds.map((k) => k.kind)).toEqual(["start", "fork", "clean"]);
    expect(t.samples[0]!.response_ids).toEqual([40, 900, 41]);
    expect(t.samples[1]!.prompt_ids).toEqual([...SYS, ...USER, 40, 901, 41, 70, 71, ...CTX]);
    expect(t.samples[1]!.response_ids).toEqual([42, 72, 43]);
    expect(t.samples[1]!.response_mask).toEqual([1, 0, 1]);
    expect(t.stats.fork).toBe(1);
    // final reward on the last sample, 0 on the other by default
    expect(t.samples.map((s) => [s.is_final, s.reward])).toEqual([[false, 0], [true, 1]]);
  });

  test("parallel sub-agents interleaved: separated by prefix, not arrival order", async () => {
    const r = rolloutRecords("r5");
    r.call({ prompt: [1, 2], completion: [10] }); // main agent
    r.call({ prompt: [1, 3, 100], completion: [11] }); // sub-agent A
    r.call({ prompt: [1, 3, 200], completion: [12] }); // sub-agent B
    r.call({ prompt: [1, 3, 200, 12, 5], completion: [13] }); // B again
    r.call({ prompt: [1, 3, 100, 11, 6], completion: [14] }); // A again
    r.call({ prompt: [1, 2, 10, 7], completion: [15] }); // main again, after both
    r.finish(1);
    const t = await assemble(r);
    expect(t.samples.map((s) => [s.prompt_ids, s.response_ids])).toEqual([
      [[1, 2], [10, 7, 15]],
      [[1, 3, 100], [11, 6, 14]],
      [[1, 3, 200], [12, 5, 13]],
    ]);
    expect(t.kinds.map((k) => k.sample)).toEqual([0, 1, 2, 2, 1, 0]);
    expect(t.samples.map((s) => s.is_final)).toEqual([true, false, false]);
  });

  test("a call without token ids breaks the sample; it is reported, never retokenized", async () => {
    const r = rolloutRecords("r6");
    r.call({ prompt: [1, 2], completion: [10] });
    r.call({ prompt: [1, 2, 10, 3], completion: [11], tokenStatus: TokenStatus.MISSING });
    r.call({ prompt: [1, 2, 10, 3, 11, 4], completion: [12] });
    r.finish(1);
    const t = await assemble(r);
    expect(t.broken).toEqual([{ call_id: "r6-2", seq: 2, token_status: "missing", reason: "token_status missing" }]);
    expect(t.samples.map((s) => s.response_ids)).toEqual([[10], [12]]);
    expect(t.samples[1]!.prompt_ids).toEqual([1, 2, 10, 3, 11, 4]);
  });

  test("a PARTIAL call closes only the sample it continued", async () => {
    const r = rolloutRecords("r6b");
    r.call({ prompt: [1, 2], completion: [10] }); // main
    r.call({ prompt: [5, 6], completion: [20] }); // sub-agent
    r.call({ prompt: [1, 2, 10, 3], completion: [11], tokenStatus: TokenStatus.PARTIAL }); // main, cut mid-stream
    r.call({ prompt: [5, 6, 20, 7], completion: [21] }); // sub-agent goes on
    r.call({ prompt: [1, 2, 10, 3, 11, 4], completion: [12] }); // main again: a new sample
    r.finish(1);
    const t = await assemble(r);
    expect(t.kinds.map((k) => [k.kind, k.sample])).toEqual([["start", 0], ["fork", 1], ["broken", -1], ["clean", 1], ["fork", 2]]);
    expect(t.broken[0]!.token_status).toBe("partial");
  });

  test("reward policies: final, same, discounted", async () => {
    const build = () => {
      const r = rolloutRecords("r7");
      r.call({ prompt: [1], completion: [2] });
      r.call({ prompt: [5], completion: [6] });
      r.call({ prompt: [8], completion: [9] });
      r.finish(2);
      return r;
    };
    expect((await assemble(build(), { rewardPolicy: "final" })).samples.map((s) => s.reward)).toEqual([0, 0, 2]);
    expect((await assemble(build(), { rewardPolicy: "same" })).samples.map((s) => s.reward)).toEqual([2, 2, 2]);
    expect((await assemble(build(), { rewardPolicy: "discounted", gamma: 0.5 })).samples.map((s) => s.reward)).toEqual([0.5, 1, 2]);
  });

  test("infra_error and infrastructure timeouts are excluded, agent timeouts are scored", async () => {
    const one = async (status: RolloutStatus, error = "", options: AssembleOptions = {}) => {
      const r = rolloutRecords("r8");
      r.call({ prompt: [1], completion: [2] });
      r.finish(0, status, error);
      return assemble(r, options);
    };
    expect((await one(RolloutStatus.INFRA_ERROR)).valid).toBe(false);
    expect((await one(RolloutStatus.INFRA_ERROR)).excluded).toBe("infra_error");
    expect((await one(RolloutStatus.TIMEOUT)).valid).toBe(true);
    expect((await one(RolloutStatus.TIMEOUT, "infra: pod never scheduled")).valid).toBe(false);
    expect((await one(RolloutStatus.TIMEOUT, "", { timeouts: "exclude" })).valid).toBe(false);
    expect((await one(RolloutStatus.FAILED)).valid).toBe(true);
  });

  test("prompt deltas: prefix_of an unknown call is reported as a broken call", async () => {
    const r = rolloutRecords("r9");
    r.call({ prompt: [1, 2], completion: [3] });
    const call = r.call({ prompt: [1, 2, 3, 4], completion: [5] });
    call.prefixOf = "nope";
    r.finish(1);
    const t = await assemble(r);
    expect(t.broken[0]!.reason).toContain('prefix_of "nope"');
  });
});
