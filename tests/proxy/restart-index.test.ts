/**
 * A proxy restarted on its data dir through the segment indexes (proxy/state/log-index.ts): the
 * harness does not notice (same key, base URL, continued prompt deltas), the trajectory route
 * reads the rollout's own records across the two lives and gives what a reader of the whole log
 * gives, and a second restart reads nothing the first one indexed.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { readRecords } from "../../records/index.ts";
import { segmentIndexDir } from "../../records/testing.ts";
import { startProxyHarness, resolvePrompts, type ProxyHarness } from "../../proxy/testing.ts";
import { trajectoryOf } from "../../trajectories/index.ts";

setDefaultTimeout(60_000);
let h: ProxyHarness;
beforeAll(async () => {
  h = await startProxyHarness({ proxy: { integrityCheckDelayMs: 0 } });
});
afterAll(async () => {
  await h.close();
});

test("a restart through the indexes: the open rollout continues its deltas, the trajectory route reads its records across lives", async () => {
  const open = await h.register({ task_id: "open" });
  const done = await h.register({ task_id: "done" });
  const messages: { role: "user" | "assistant"; content: string }[] = [{ role: "user", content: "first" }];
  const a = await h.client(open).chat.completions.create({ model: "qwen3", messages });
  messages.push({ role: "assistant", content: a.choices[0]!.message.content ?? "" }, { role: "user", content: "second" });
  await h.client(done).chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: "only" }] });
  expect((await h.control(`/control/rollouts/${done.rollout_id}/finish`, { reward: 1, status: "ok" })).status).toBe(200);

  await h.restart();
  const logDir = join(h.dataDir, "log");
  expect(h.proxy.proxy.state.restored).toMatchObject({ rollouts: 2, calls: 2, indexed: 1, scanned: 0, open: 1 });
  expect(readdirSync(segmentIndexDir(logDir))).toHaveLength(1);
  // The finished rollout's counters and result came from the index.
  const info = (await (await h.control(`/control/rollouts/${done.rollout_id}`, undefined, "GET")).json()) as { calls: number; result: { reward: number } };
  expect(info).toMatchObject({ calls: 1, result: { reward: 1 } });

  const b = await h.client(open).chat.completions.create({ model: "qwen3", messages });
  messages.push({ role: "assistant", content: b.choices[0]!.message.content ?? "" }, { role: "user", content: "third" });
  await h.client(open).chat.completions.create({ model: "qwen3", messages });
  const calls = await h.calls(open.rollout_id);
  expect(calls.map((c) => [c.seq, c.prefixOf])).toEqual([
    [1, ""],
    [2, calls[0]!.callId],
    [3, calls[1]!.callId],
  ]);
  expect(resolvePrompts(calls).get(calls[2]!.callId)).toEqual(h.sims[0]!.samples.at(-1)!.prompt_token_ids);

  // The route reads the rollout's records by offset (two segments); a reader of the whole log agrees.
  const route = await (await h.control(`/control/rollouts/${open.rollout_id}/trajectory`, undefined, "GET")).json();
  const whole = await trajectoryOf(readRecords(h.dataDir), open.rollout_id);
  expect(route).toEqual(JSON.parse(JSON.stringify(whole)));
  expect((route as { samples: unknown[] }).samples.length).toBeGreaterThan(0);
  const frames = [];
  for await (const r of h.proxy.proxy.state.index.recordsOf(open.rollout_id)) frames.push(r.segment);
  expect(new Set(frames).size).toBe(2);

  // After the start, the indexed segments were checked (nothing found).
  expect(await h.proxy.proxy.state.integrity).toEqual([]);
  await h.restart();
  expect(h.proxy.proxy.state.restored).toMatchObject({ rollouts: 2, calls: 4, indexed: 2, scanned: 0, open: 1 });
});
