/**
 * Calls served by a rollout's own servers (a trainer's replicas) are recorded with the weight
 * version the answering server reports (vLLM 0.33.0's `weight_versions`, which the proxy asks
 * for), and a version other than the registered one is recorded with the reason. A cancelled
 * rollout (the trainer's session timed out) refuses its further calls with 409, aborts the one
 * in flight, and no call of it is recorded after its result.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startPolicySimulator } from "../../simulator/index.ts";
import { type StartedPolicySimulator } from "../../simulator/testing.ts";
import { startProxyHarness, upstreamRequestsOf, type ProxyHarness } from "../../proxy/testing.ts";
import { RolloutStatus, type RolloutResult } from "../../schemas/index.ts";

let h: ProxyHarness;
let own: StartedPolicySimulator;
let slow: StartedPolicySimulator;
beforeAll(async () => {
  h = await startProxyHarness();
  own = await startPolicySimulator({ seed: 5 });
  slow = await startPolicySimulator({ seed: 6, chunkDelayMs: 400 });
});
afterAll(async () => {
  await h.close();
  await own.stop();
  await slow.stop();
});

const label = async (server: StartedPolicySimulator, version: string) => {
  const r = await fetch(`${server.url}/update_weight_version`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ new_version: version }) });
  expect(r.status).toBe(200);
};

test("each call records the version the server that answered reported, and a mismatch with its reason", async () => {
  const r = await h.register({ task_id: "t-v", upstreams: [`${own.url}/v1`], policy_version: 3 });
  const ask = (stream: boolean) =>
    fetch(`${r.openai_base_url}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], stream }),
    }).then((x) => x.text());
  await label(own, "3");
  const answer = JSON.parse(await ask(false));
  expect(answer.choices[0].weight_versions ?? null).toBeNull(); // the harness did not ask for it
  await label(own, "4"); // the trainer's weight sync moved on while the rollout still ran
  const streamed = await ask(true);
  expect(streamed).not.toContain('"version"');
  await label(own, "default"); // weights nobody labelled
  await ask(false);
  const calls = await h.calls(r.rollout_id);
  expect(calls.map((c) => [c.servedWeightVersion, c.policyVersion])).toEqual([
    ["3", 3],
    ["4", 4],
    ["default", 3],
  ]);
  expect(calls[0]!.policyVersionMismatch).toBe("");
  expect(calls[1]!.policyVersionMismatch).toContain("served by weight version 4; the rollout was registered with version 3");
  expect(calls[2]!.policyVersionMismatch).toContain('"default", not a policy version');
  for (const sent of upstreamRequestsOf(calls)) expect(sent.return_weight_versions).toBe(true);
});

test("a rollout served by the proxy's own upstreams is not asked for the served version", async () => {
  const r = await h.register({ task_id: "t-plain" });
  await h.client(r).chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
  const [call] = await h.calls(r.rollout_id);
  expect(upstreamRequestsOf([call!])[0]!.return_weight_versions).toBeUndefined();
  expect([call!.servedWeightVersion, call!.policyVersionMismatch]).toEqual(["", ""]);
});

test("cancel: the call in flight is aborted and recorded before the result, later calls get 409", async () => {
  await label(slow, "0");
  const r = await h.register({ task_id: "t-cancel", upstreams: [`${slow.url}/v1`], policy_version: 0 });
  const call = () =>
    fetch(`${r.openai_base_url}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "write a long answer" }], stream: true }),
    });
  const inFlight = call().then((x) => x.text()).catch((e) => String(e));
  while (slow.samples.length === 0) await Bun.sleep(20); // the server has the call
  const cancel = await h.control(`/control/rollouts/${r.rollout_id}/cancel`, { reason: "the trainer's session timed out", status: "timeout" });
  expect(cancel.status).toBe(200);
  expect(await cancel.json()).toMatchObject({ cancelled: true, aborted: 1, drained: true });
  await inFlight;
  const after = await call();
  expect(after.status).toBe(409);
  expect(await after.text()).toContain("rollout_finished");
  // Idempotent: the result stays.
  const again = await h.control(`/control/rollouts/${r.rollout_id}/cancel`, { reason: "again" });
  expect(await again.json()).toMatchObject({ cancelled: false });

  const mine = (await h.records()).filter((x) => (x.kind.case === "modelCall" || x.kind.case === "rolloutResult") && x.kind.value.rolloutId === r.rollout_id);
  expect(mine.map((x) => x.kind.case)).toEqual(["modelCall", "rolloutResult"]); // the aborted call, then the result: nothing after it
  const result = mine[1]!.kind.value as RolloutResult;
  expect(result.status).toBe(RolloutStatus.TIMEOUT);
  expect(result.error).toContain("cancelled: the trainer's session timed out");
  expect(result.metrics["forge.cancelled"]).toBe(1);
});

test("cancel refuses a bad body and an unknown rollout, naming the field", async () => {
  const r = await h.register({ task_id: "t-bad" });
  const bad = await h.control(`/control/rollouts/${r.rollout_id}/cancel`, { reason: "x", status: "ok" });
  expect(bad.status).toBe(400);
  expect(await bad.text()).toContain("status");
  expect((await h.control(`/control/rollouts/nope/cancel`, { reason: "x" })).status).toBe(404);
});
