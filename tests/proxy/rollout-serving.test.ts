/**
 * A rollout registered with its own upstreams (a trainer's servers, e.g. veRL's replicas) is
 * served by them, not by the proxy's; its calls are recorded with the registered policy
 * version and carry the registered sampling, whatever the harness sent; a restarted proxy
 * serves it the same way (the serving is in the Rollout record's labels).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startPolicySimulator } from "../../simulator/index.ts";
import { type StartedPolicySimulator } from "../../simulator/testing.ts";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";

let h: ProxyHarness;
let own: StartedPolicySimulator;
beforeAll(async () => {
  h = await startProxyHarness();
  own = await startPolicySimulator({ seed: 99 });
});
afterAll(async () => {
  await h.close();
  await own.stop();
});

const decoder = new TextDecoder();

test("own upstreams override the router's; the version and sampling are the registered ones", async () => {
  const r = await h.register({ task_id: "t-own", upstreams: [`${own.url}/v1`], policy_version: 7, sampling: { temperature: 0.6, top_p: 0.9, top_k: 20 } });
  expect(r.policy_version).toBe(7);
  const ask = () => h.client(r).chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }], temperature: 0.1 });
  await ask();
  expect(own.samples.length).toBe(1);
  expect(h.sims[0]!.samples.length).toBe(0);
  await h.restart();
  await ask();
  expect(own.samples.length).toBe(2);
  expect(h.sims[0]!.samples.length).toBe(0);
  const calls = await h.calls(r.rollout_id);
  expect(calls.map((c) => [c.upstream, c.policyVersion])).toEqual([
    [own.url, 7],
    [own.url, 7],
  ]);
  for (const call of calls) {
    // The harness asked for 0.1: what went upstream (and is recorded) is the rollout's sampling.
    const sent = call.upstreamRequestBody.length > 0 ? JSON.parse(decoder.decode(call.upstreamRequestBody)) : JSON.parse(decoder.decode(call.upstreamRequestPatch));
    expect(sent).toMatchObject({ temperature: 0.6, top_p: 0.9, top_k: 20 });
  }
  const rollout = (await h.records()).find((x) => x.kind.case === "rollout" && x.kind.value.rolloutId === r.rollout_id)!.kind.value as { group: string; labels: Record<string, string> };
  expect(rollout.group).toBe("t-own@v7");
  expect(JSON.parse(rollout.labels["forge.upstreams"]!)).toEqual([own.url]);
});

test("a rollout without its own upstreams is served by the proxy's at the proxy's version", async () => {
  const before = h.sims[0]!.samples.length;
  const r = await h.register({ task_id: "t-plain" });
  await h.client(r).chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
  expect(h.sims[0]!.samples.length).toBe(before + 1);
  expect((await h.calls(r.rollout_id))[0]!.policyVersion).toBe(r.policy_version);
});

test("bad serving fields are refused, naming the field", async () => {
  for (const [body, field] of [
    [{ upstreams: ["ftp://x"] }, "upstreams.0"],
    [{ upstreams: [] }, "upstreams"],
    [{ policy_version: -1 }, "policy_version"],
    [{ sampling: { top_p: 0 } }, "sampling.top_p"],
    [{ sampling: { seed: 1 } }, "sampling"],
  ] as const) {
    const response = await h.control("/control/rollouts", { experiment: "e", task_id: "t", ...body });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain(field);
  }
});

test("the trajectory route with ?images=1 names each sample's images in order and carries their Blobs (online multi_modal_data)", async () => {
  const red = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
  const r = await h.register({ task_id: "t-img", upstreams: [`${own.url}/v1`] });
  const url = `data:image/png;base64,${red}`;
  await h.client(r).chat.completions.create({
    model: "m",
    messages: [{ role: "user", content: [{ type: "text", text: "same?" }, { type: "image_url", image_url: { url } }, { type: "image_url", image_url: { url } }] }],
  });
  expect((await h.control(`/control/rollouts/${r.rollout_id}/finish`, { reward: 1, status: "ok" })).status).toBe(200);
  const t = (await (await h.control(`/control/rollouts/${r.rollout_id}/trajectory?images=1`, undefined, "GET")).json()) as any;
  const sha = new Bun.CryptoHasher("sha256").update(Buffer.from(red, "base64")).digest("hex");
  expect(t.samples[0].image_refs).toEqual([sha, sha]);
  expect(t.blobs[sha]).toEqual({ media_type: "image/png", data: red });
  const plain = (await (await h.control(`/control/rollouts/${r.rollout_id}/trajectory`, undefined, "GET")).json()) as any;
  expect(plain.blobs).toBeUndefined();
});

test("the proxy's upstream key goes to its own upstreams only, never to a rollout's", async () => {
  const seen: (string | null)[] = [];
  const spy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      seen.push(request.headers.get("authorization"));
      // a relay to the simulator that notes what authorization it was sent
      return fetch(new URL(new URL(request.url).pathname, own.url), { method: request.method, headers: { "content-type": "application/json" }, body: await request.arrayBuffer() });
    },
  });
  const keyed = await startProxyHarness({ proxy: { upstreamApiKey: "sk-secret-upstream-key" } });
  try {
    const r = await keyed.register({ task_id: "t-key", upstreams: [`http://127.0.0.1:${spy.port}/v1`] });
    await keyed.client(r).chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
    expect(seen).toEqual([null]);
  } finally {
    await keyed.close();
    spy.stop(true);
  }
});
