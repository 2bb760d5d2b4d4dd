import { expect, test } from "bun:test";
import { promptDelta } from "../../records/index.ts";
import { create, ModelCallSchema, RolloutSchema, TokenStatus, type ModelCall } from "../../schemas/index.ts";
import { historyOf } from "./history.ts";
import { createRolloutRegistry } from "./rollouts.ts";

/** A rollout recorded as the live proxy records it: each prompt a delta against its recent calls. */
function recordRollout(turns: number, seed: number): ModelCall[] & { live: ReturnType<typeof createRolloutRegistry>["get"] extends (id: string) => infer S ? S : never } {
  let s = seed;
  const random = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const ids = (n: number) => Array.from({ length: n }, () => Math.floor(random() * 150_000));
  const live = createRolloutRegistry({ recentCalls: 4 });
  const state = live.add(create(RolloutSchema, { rolloutId: "r" }));
  const calls: ModelCall[] = [];
  let conversation = ids(50);
  for (let seq = 1; seq <= turns; seq++) {
    // Mostly the conversation grows; now and then a harness compacts it (a prompt that forks).
    if (seq % 7 === 0) conversation = conversation.slice(0, 20).concat(ids(5));
    const prompt = conversation.concat(ids(10));
    const completion = ids(8);
    const delta = promptDelta(prompt, state.recent);
    const status = seq % 5 === 0 ? TokenStatus.MISSING : seq % 3 === 0 ? TokenStatus.PARTIAL : TokenStatus.COMPLETE;
    const call = create(ModelCallSchema, { rolloutId: "r", seq, callId: `r-${seq}`, prefixOf: delta.prefixOf, prefixLen: delta.prefixLen, promptTokenIds: delta.suffix, promptLen: prompt.length, completionTokenIds: completion, tokenStatus: status });
    live.noteCall(state, call, status === TokenStatus.MISSING ? undefined : prompt);
    calls.push(call);
    conversation = prompt.concat(completion);
  }
  return Object.assign(calls, { live: state });
}

test("the history rebuilt from the delta chain is what the live proxy held, and what replaying every call gives", () => {
  for (const [turns, seed] of [[1, 1], [6, 2], [40, 3], [120, 4]] as const) {
    const calls = recordRollout(turns, seed);
    // Replaying every call in turn (what a restart did before).
    const replay = createRolloutRegistry({ recentCalls: 4 });
    const state = replay.add(create(RolloutSchema, { rolloutId: "r" }));
    for (const call of calls) replay.replayCall(call);
    expect(state.recent.length).toBe(Math.min(4, calls.filter((c) => c.tokenStatus !== TokenStatus.MISSING).length));
    expect(historyOf(calls, 4)).toEqual(state.recent);
    expect(historyOf(calls, 4)).toEqual(calls.live!.recent);
  }
});

test("a broken chain (a parent missing, lengths that do not add up) leaves that call out, as replaying would", () => {
  const calls = recordRollout(10, 9);
  const withoutParent = calls.filter((c) => c.seq !== 8);
  const history = historyOf(withoutParent, 4);
  expect(history.map((h) => h.callId)).not.toContain("r-9");
  const lying = calls.map((c) => (c.seq === 10 ? create(ModelCallSchema, { ...c, promptLen: c.promptLen + 5 }) : c));
  expect(historyOf(lying, 4).map((h) => h.callId)).not.toContain("r-10");
});
