/**
 * Trajectories built from rollouts run through the real proxy and the real policy simulator
 * (Qwen3 token ids, thinking on): clean tool loops, realign after Qwen3's template strips
 * earlier <think> blocks, an OpenClaw-style fork, interleaved sub-agents; masks, logprobs and
 * rewards checked token for token against what the simulator sampled.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { readRecords } from "../../records/index.ts";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";
import { exportTrajectories, trajectoryOf, type RolloutTrajectory } from "../../trajectories/index.ts";
import type { SimSample } from "../../simulator/testing.ts";

const qwen3 = { thinkOpen: 151667, thinkClose: 151668, thinkTrailing: [198, 271] };
const tools = [
  {
    type: "function",
    function: { name: "bash", description: "run a shell command", parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } },
  },
];
const script = {
  thinking: true,
  tasks: [
    { name: "hello", match: "hello.txt", steps: [{ think: "I should look first.", bash: "ls" }, { think: "Now write it.", bash: "echo hi > hello.txt" }, { finish: "done" }] },
    { name: "chat", match: "tell me", steps: [{ think: "Greet.", say: "hello" }, { think: "Again.", say: "hello again" }, { say: "bye" }] },
    { name: "sub", match: "subtask", steps: [{ think: "Sub step.", bash: "pwd" }, { finish: "sub done" }] },
  ],
};

let h: ProxyHarness;
beforeAll(async () => {
  h = await startProxyHarness({ sim: { script } });
});
afterAll(async () => {
  await h.close();
});

type Msg = { role: string; content?: string | null; tool_calls?: any[]; tool_call_id?: string; reasoning_content?: string };

/** One chat turn; returns the assistant message as the harness would append it, and the simulator's sample. */
async function turn(r: { api_key: string; openai_base_url: string }, messages: Msg[]): Promise<{ message: Msg; sample: SimSample }> {
  const answer = await h.client(r).chat.completions.create({ model: "qwen3", messages, tools } as any);
  const m = answer.choices[0]!.message as any;
  const message: Msg = { role: "assistant", content: m.content ?? "" };
  if (m.tool_calls?.length) message.tool_calls = m.tool_calls;
  // vLLM 0.33 answers with `reasoning` (SGLang with `reasoning_content`); sent back as reasoning_content.
  const reasoning = m.reasoning ?? m.reasoning_content;
  if (reasoning) message.reasoning_content = reasoning;
  return { message, sample: h.sims[0]!.samples.at(-1)! };
}

async function finish(id: string, reward: number, status = "ok"): Promise<RolloutTrajectory> {
  const res = await h.control(`/control/rollouts/${id}/finish`, { reward, status });
  expect(res.status).toBe(200);
  return (await trajectoryOf(readRecords(h.dataDir), id, qwen3))!;
}

/** The response must hold each sample's sampled ids with mask 1 and its logprobs (float32), in order. */
function expectSampled(t: RolloutTrajectory, sampleIndex: number, samples: SimSample[]) {
  const s = t.samples[sampleIndex]!;
  const sampled = s.response_ids.filter((_, i) => s.response_mask[i] === 1);
  const lps = s.response_logprobs.filter((_, i) => s.response_mask[i] === 1);
  expect(sampled).toEqual(samples.flatMap((x) => x.token_ids));
  expect(lps).toEqual(samples.flatMap((x) => x.logprobs.map(Math.fround)));
  s.response_logprobs.forEach((lp, i) => s.response_mask[i] === 0 && expect(lp).toBe(0));
  // first prompt is what the simulator saw first; the whole sequence ends with the last sample's tokens
  expect(s.prompt_ids).toEqual(samples[0]!.prompt_token_ids);
}

describe("trajectories through the proxy", () => {
  test("clean: a tool loop that sends reasoning back grows one sample", async () => {
    const r = await h.register({ task_id: "hello", group: "g-hello" });
    const messages: Msg[] = [{ role: "system", content: "You are an agent." }, { role: "user", content: "Create hello.txt" }];
    const samples: SimSample[] = [];
    for (let i = 0; i < 3; i++) {
      const { message, sample } = await turn(r, messages);
      samples.push(sample);
      messages.push(message);
      for (const tc of message.tool_calls ?? []) messages.push({ role: "tool", tool_call_id: tc.id, content: "ok" });
      if (!message.tool_calls) break;
    }
    const t = await finish(r.rollout_id, 1);
    expect(t.kinds.map((k) => k.kind)).toEqual(["start", ...samples.slice(1).map(() => "clean" as const)]);
    expect(t.samples).toHaveLength(1);
    expectSampled(t, 0, samples);
    // Every later prompt is the sample's tokens up to that point: nothing the policy saw is missing.
    const s = t.samples[0]!;
    const full = [...s.prompt_ids, ...s.response_ids];
    for (const x of samples) expect(full.slice(0, x.prompt_token_ids.length)).toEqual(x.prompt_token_ids);
    expect(s.reward).toBe(1);
  });

  test("realign: a new user turn makes Qwen3's template drop the earlier <think>; sampled tokens kept, drift counted", async () => {
    const r = await h.register({ task_id: "chat", group: "g-chat" });
    const messages: Msg[] = [{ role: "user", content: "tell me something" }];
    const first = await turn(r, messages);
    expect(first.sample.token_ids).toContain(151667);
    // The harness keeps the answer's text trimmed (vLLM's qwen3 parser leaves the newlines after
    // </think> in it): re-rendered after a new user turn, only the think block and its newlines go.
    messages.push({ ...first.message, content: first.message.content?.trim() }, { role: "user", content: "tell me more" });
    const second = await turn(r, messages);
    // the simulator's second prompt no longer holds the first turn's think block
    expect(second.sample.prompt_token_ids.filter((t) => t === 151667)).toHaveLength(0);
    const t = await finish(r.rollout_id, 0.5);
    expect(t.kinds.map((k) => k.kind)).toEqual(["start", "realign"]);
    expect(t.samples).toHaveLength(1);
    expect(t.stats.drift_tokens).toBeGreaterThan(0);
    expectSampled(t, 0, [first.sample, second.sample]);
    expect(t.samples[0]!.reward).toBe(0.5);
    // The control API serves the same assembly.
    const served = await h.control(`/control/rollouts/${r.rollout_id}/trajectory`, undefined, "GET");
    expect(served.status).toBe(200);
    expect(JSON.parse(JSON.stringify(t))).toEqual(await served.json());
    // ?select=1: the samples a trainer trains on, selected at the route by trajectories' rule.
    const s = t.samples[0]!;
    const cut = s.response_ids.length - 2;
    const selected = await h.control(`/control/rollouts/${r.rollout_id}/trajectory?select=1&overlong=penalize&overlong_reward=-1&max_response_length=${cut}`, undefined, "GET");
    expect(selected.status).toBe(200);
    const body = (await selected.json()) as { samples: RolloutTrajectory["samples"]; selection: { reward: number; truncated: number; penalized: boolean; of: number } };
    expect(body.samples[0]!.response_ids).toEqual(s.response_ids.slice(0, cut));
    expect(body.samples[0]!.response_logprobs).toHaveLength(cut);
    expect(body.selection).toMatchObject({ reward: -1, truncated: 1, penalized: true, of: 1, dropped: null });
    const dropped = (await (await h.control(`/control/rollouts/${r.rollout_id}/trajectory?select=1&overlong=drop&max_response_length=${cut}`, undefined, "GET")).json()) as { samples: unknown[]; selection: { dropped: string } };
    expect(dropped.samples).toEqual([]);
    expect(dropped.selection.dropped).toContain("rollout.response_length");
    // Wrong parameters are refused, naming the parameter (an old client's typo must not train unselected).
    for (const [query, param] of [["select=1&overlong=cut", "overlong"], ["select=1&max_prompt_length=-3", "max_prompt_length"], ["select=1&vision=1,2", "vision"], ["select=1&max_len=9", "max_len"], ["overlong=drop", "overlong"], ["images=yes", "images"]] as const) {
      const res = await h.control(`/control/rollouts/${r.rollout_id}/trajectory?${query}`, undefined, "GET");
      expect(res.status).toBe(400);
      const error = ((await res.json()) as { error: { message: string; param: string } }).error;
      expect(error.param).toBe(param);
      expect(error.message).toContain(param);
    }
  });

  test("fork: OpenClaw re-appends its context message at the end and renames tool-call ids", async () => {
    const r = await h.register({ task_id: "hello", group: "g-hello" });
    const context = { role: "user", content: "[context] cwd=/work, files: none" };
    const base: Msg[] = [{ role: "system", content: "You are an agent." }, { role: "user", content: "Create hello.txt" }];
    const one = await turn(r, [...base, context]);
    expect(one.message.tool_calls?.length).toBe(1);
    const renamed = { ...one.message, tool_calls: one.message.tool_calls!.map((tc: any) => ({ ...tc, id: `renamed_${tc.id}` })) };
    const history: Msg[] = [...base, renamed, { role: "tool", tool_call_id: renamed.tool_calls[0].id, content: "ok" }];
    const two = await turn(r, [...history, context]);
    const three = await turn(r, [...history, context, two.message, ...(two.message.tool_calls ?? []).map((tc: any) => ({ role: "tool", tool_call_id: tc.id, content: "ok" }))]);
    const t = await finish(r.rollout_id, 1);
    expect(t.kinds.map((k) => k.kind)).toEqual(["start", "fork", "clean"]);
    expect(t.stats.fork).toBe(1);
    expectSampled(t, 0, [one.sample]);
    expectSampled(t, 1, [two.sample, three.sample]);
    expect(t.samples.map((s) => [s.is_final, s.reward])).toEqual([[false, 0], [true, 1]]);
  });

  test("parallel sub-agents: interleaved calls are separated by prefix", async () => {
    const r = await h.register({ task_id: "hello", group: "g-sub" });
    const a: Msg[] = [{ role: "system", content: "You are sub-agent A." }, { role: "user", content: "subtask one" }];
    const b: Msg[] = [{ role: "system", content: "You are sub-agent B." }, { role: "user", content: "subtask two" }];
    const a1 = await turn(r, a);
    const b1 = await turn(r, b);
    a.push(a1.message, ...(a1.message.tool_calls ?? []).map((tc: any) => ({ role: "tool", tool_call_id: tc.id, content: "/w" })));
    b.push(b1.message, ...(b1.message.tool_calls ?? []).map((tc: any) => ({ role: "tool", tool_call_id: tc.id, content: "/w" })));
    const b2 = await turn(r, b);
    const a2 = await turn(r, a);
    const t = await finish(r.rollout_id, 1);
    expect(t.kinds.map((k) => k.sample)).toEqual([0, 1, 1, 0]);
    expectSampled(t, 0, [a1.sample, a2.sample]);
    expectSampled(t, 1, [b1.sample, b2.sample]);
  });

  test("export: an infra_error rollout is left out of its group; the group below the minimum is dropped", async () => {
    const ok = await h.register({ task_id: "chat", group: "g-infra" });
    await turn(ok, [{ role: "user", content: "tell me once" }]);
    await finish(ok.rollout_id, 1);
    const broken = await h.register({ task_id: "chat", group: "g-infra" });
    await turn(broken, [{ role: "user", content: "tell me twice" }]);
    await finish(broken.rollout_id, 0, "infra_error");
    const m = await exportTrajectories(readRecords(h.dataDir), { format: "jsonl", out: join(h.dataDir, "exports", "all.jsonl"), minGroupSize: 2, ...qwen3 });
    expect(m.rollouts.excluded.infra_error).toBe(1);
    expect(m.groups.dropped.map((g) => g.group).sort()).toEqual(["g-chat", "g-infra", "g-sub"]);
    expect(m.rows).toBe(3); // g-hello: the clean sample and the two of the fork
  });
});
