/**
 * Control API, sticky routing, pause/resume with policy versions, restart on the same data
 * dir, metrics and health, recorder failure, eval mode and upstreams without token ids.
 */
import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import { promisify } from "node:util";
import { CallStatus, RolloutStatus, TokenStatus } from "../../schemas/index.ts";
import type { WriterIo } from "../../records/index.ts";
import { NOT_AN_ENGINE, resolvePrompts, startProxyHarness } from "../../proxy/testing.ts";

const chat = (content: string) => ({ model: "qwen3", messages: [{ role: "user" as const, content }] });

describe("rollouts", () => {
  test("register, read, finish (fsynced RolloutResult); finish twice is refused", async () => {
    const h = await startProxyHarness();
    try {
      const r = await h.register({ rollout_id: "ro-fixed", harness: "openai-node", labels: { commit: "abc" } });
      expect(r.rollout_id).toBe("ro-fixed");
      expect(r.api_key).toMatch(/^fk-[A-Za-z0-9_-]{43}$/);
      expect(r.openai_base_url).toBe(`${h.proxy.url}/r/ro-fixed/v1`);
      expect((await h.control("/control/rollouts", { rollout_id: "ro-fixed", experiment: "e", task_id: "t" })).status).toBe(409);
      await h.client(r).chat.completions.create(chat("one"));
      const finished = await h.control("/control/rollouts/ro-fixed/finish", { reward: 0.5, status: "failed", verifier_output: "1 of 2 checks" });
      expect(finished.status).toBe(200);
      expect(await finished.json()).toMatchObject({ rollout_id: "ro-fixed", calls: 1, synced: true });
      expect((await h.control("/control/rollouts/ro-fixed/finish", { reward: 1, status: "ok" })).status).toBe(409);
      const read = (await (await h.control("/control/rollouts/ro-fixed", undefined, "GET")).json()) as any;
      expect(read.calls).toBe(1);
      expect(read.token_status_counts).toEqual({ COMPLETE: 1 });
      expect(read.result.reward).toBe(0.5);
      expect(read.rollout.labels).toEqual({ commit: "abc" });
      // snake_case like every other control route (the record's proto field names).
      expect(read.rollout).toMatchObject({ rollout_id: "ro-fixed", experiment: "test", task_id: "task-1", key_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
      expect(read.result).toMatchObject({ rollout_id: "ro-fixed", verifier_output: "1 of 2 checks", status: "ROLLOUT_STATUS_FAILED" });
      const maps = new Set(["labels", "metrics", "token_status_counts"]); // keys are data, not fields
      const keys = (value: unknown): string[] =>
        value && typeof value === "object" ? Object.entries(value).flatMap(([k, v]) => (maps.has(k) ? [k] : [k, ...keys(v)])) : [];
      expect(keys(read).filter((k) => /[A-Z]/.test(k))).toEqual([]);
      const records = await h.records();
      const result = records.find((x) => x.kind.case === "rolloutResult")!.kind.value as any;
      expect(result.status).toBe(RolloutStatus.FAILED);
      const rollout = records.find((x) => x.kind.case === "rollout")!.kind.value as any;
      expect(rollout.keySha256).toHaveLength(64);
      expect(JSON.stringify(records.map((x) => x.kind.value))).not.toContain(r.api_key);
    } finally {
      await h.close();
    }
  });

  test("restart on the same data dir continues seq, keys and prompt deltas", async () => {
    const h = await startProxyHarness();
    try {
      const r = await h.register();
      const messages: any[] = [{ role: "user", content: "first" }];
      const a = await h.client(r).chat.completions.create({ model: "qwen3", messages });
      messages.push({ role: "assistant", content: a.choices[0]!.message.content }, { role: "user", content: "second" });
      await h.restart();
      // Closed cleanly: its segment comes back from its index, and the open rollout gets its token history back at its next call.
      expect(h.proxy.proxy.state.restored).toEqual({ rollouts: 1, calls: 1, damaged: 0, indexed: 1, scanned: 0, open: 1 });
      // Same key, same base URL: the harness does not notice the restart.
      await h.client(r).chat.completions.create({ model: "qwen3", messages });
      const sample = h.sims[0]!.samples.at(-1)!;
      const calls = await h.calls(r.rollout_id);
      expect(calls.map((c) => c.seq)).toEqual([1, 2]);
      expect(calls[1]!.prefixOf).toBe(calls[0]!.callId);
      expect(resolvePrompts(calls).get(calls[1]!.callId)).toEqual(sample.prompt_token_ids);
    } finally {
      await h.close();
    }
  });
});

describe("routing", () => {
  test("calls of one rollout stick to one upstream; a dead upstream is routed around", async () => {
    const h = await startProxyHarness({ simulators: 2 });
    try {
      const rollouts = await Promise.all(Array.from({ length: 8 }, () => h.register()));
      for (const r of rollouts) for (let i = 0; i < 3; i++) await h.client(r).chat.completions.create(chat(`call ${i}`));
      const byRollout = new Map<string, Set<string>>();
      for (const c of await h.calls()) {
        const set = byRollout.get(c.rolloutId) ?? new Set();
        set.add(c.upstream);
        byRollout.set(c.rolloutId, set);
      }
      for (const set of byRollout.values()) expect(set.size).toBe(1);
      const used = new Set([...byRollout.values()].map((s) => [...s][0]));
      expect(used.size).toBe(2); // 8 rollouts over 2 upstreams: both used
      // Stop one simulator: its rollouts move to the other, the rest stay.
      const deadUrl = h.sims[0]!.url;
      await h.sims[0]!.stop();
      for (const r of rollouts) await h.client(r).chat.completions.create(chat("after"));
      const after = (await h.calls()).filter((c) => c.seq === 4);
      expect(after.every((c) => c.upstream !== deadUrl && c.status === CallStatus.OK)).toBe(true);
      const moved = after.filter((c) => [...byRollout.get(c.rolloutId)!][0] === deadUrl);
      expect(moved.every((c) => c.upstreamAttempts >= 1)).toBe(true);
      const health = (await (await fetch(`${h.proxy.url}/healthz`)).json()) as any;
      expect(health.upstreams.find((u: any) => u.url === deadUrl).healthy).toBe(false);
    } finally {
      await h.close();
    }
  });
});

describe("pause / resume", () => {
  test("pause drains in-flight calls, holds new ones, resume releases them under the new policy version", async () => {
    const h = await startProxyHarness({ sim: { chunkDelayMs: 20 } });
    try {
      const r = await h.register();
      const client = h.client(r);
      const inflight = (async () => {
        let text = "";
        for await (const c of await client.chat.completions.create({ ...chat("a long one please"), stream: true })) text += c.choices[0]?.delta?.content ?? "";
        return text;
      })();
      const gate = h.proxy.proxy.state.gate;
      const until = async (ok: () => boolean) => {
        for (let i = 0; i < 1000 && !ok(); i++) await Bun.sleep(5);
      };
      await until(() => gate.inFlight === 1);
      const pausing = h.control("/control/pause", { timeout_ms: 10_000 });
      await until(() => gate.paused);
      let heldDone = false;
      const held = client.chat.completions.create(chat("held")).then((x) => ((heldDone = true), x));
      await until(() => gate.waiting === 1);
      const paused = (await (await pausing).json()) as any;
      expect(paused).toMatchObject({ paused: true, drained: true, in_flight: 0 });
      await inflight;
      await Bun.sleep(50);
      expect(heldDone).toBe(false);
      const metrics = await (await fetch(`${h.proxy.url}/metrics`)).text();
      expect(metrics).toContain("forge_proxy_paused 1");
      const resumed = (await (await h.control("/control/resume", { policy_version: 7 })).json()) as any;
      expect(resumed).toMatchObject({ paused: false, policy_version: 7, released: 1 });
      await held;
      const calls = await h.calls(r.rollout_id);
      expect(calls.map((c) => c.policyVersion)).toEqual([0, 7]);
      const next = await h.register();
      expect(next.policy_version).toBe(7);
    } finally {
      await h.close();
    }
  });

  test("a call held past the bound gets 429 with Retry-After", async () => {
    const h = await startProxyHarness({ proxy: { pauseBoundMs: 100 } });
    try {
      const r = await h.register();
      await h.control("/control/pause", {});
      const response = await fetch(`${r.openai_base_url}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" }, body: JSON.stringify(chat("x")) });
      expect(response.status).toBe(429);
      expect(response.headers.get("retry-after")).toBe("1");
      expect(((await response.json()) as any).error.code).toBe("paused");
    } finally {
      await h.close();
    }
  });
});

describe("modes and token status", () => {
  test("eval mode sends the request unchanged and records NOT_REQUESTED", async () => {
    const h = await startProxyHarness({ proxy: { mode: "eval" } });
    try {
      const r = await h.register();
      await h.client(r).chat.completions.create(chat("eval"));
      const [call] = await h.calls(r.rollout_id);
      expect(call!.tokenStatus).toBe(TokenStatus.NOT_REQUESTED);
      expect(call!.upstreamRequestBody.length).toBe(0);
      expect(call!.promptTokenIds).toEqual([]);
    } finally {
      await h.close();
    }
  });

  test("an upstream that gives no ids is recorded MISSING (never re-tokenized) and counted in /metrics", async () => {
    // A stand-in for an API that ignores return_token_ids.
    const plain = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => Response.json({ id: "x", object: "chat.completion", model: "m", choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }] }),
    });
    const h = await startProxyHarness({ simulators: 0, proxy: { upstreams: [`http://127.0.0.1:${plain.port}/v1`], ...NOT_AN_ENGINE } });
    try {
      const r = await h.register();
      await h.client(r).chat.completions.create(chat("x"));
      const [call] = await h.calls(r.rollout_id);
      expect(call!.tokenStatus).toBe(TokenStatus.MISSING);
      expect(call!.completionTokenIds).toEqual([]);
      const metrics = await (await fetch(`${h.proxy.url}/metrics`)).text();
      const scope = 'experiment="test",iteration="0",policy_version="0"';
      expect(metrics).toContain(`forge_proxy_token_missing_total{${scope},protocol="chat"} 1`);
      expect(metrics).toContain(`forge_proxy_calls_total{${scope},protocol="chat",status="OK",code="200"} 1`);
      expect(metrics).toContain(`forge_proxy_call_duration_seconds_count{${scope},protocol="chat"} 1`);
    } finally {
      await h.close();
      await plain.stop(true);
    }
  });
});

describe("recorder failure", () => {
  test("a log that cannot be written: the call is refused with 503 and /healthz says why", async () => {
    let fail = false;
    const io: WriterIo = {
      writev: (fd, buffers, position) => {
        if (fail) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", errno: -28 });
        return fs.writevSync(fd, buffers, position);
      },
      ftruncate: (fd, length) => fs.ftruncateSync(fd, length),
      fdatasync: promisify(fs.fdatasync),
      fdatasyncSync: (fd) => fs.fdatasyncSync(fd),
    };
    const h = await startProxyHarness({ proxy: { recorderIo: io } });
    try {
      const r = await h.register();
      expect((await fetch(`${h.proxy.url}/healthz`)).status).toBe(200);
      fail = true;
      const response = await fetch(`${r.openai_base_url}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" }, body: JSON.stringify(chat("x")) });
      expect(response.status).toBe(503);
      expect(((await response.json()) as any).error.code).toBe("recorder_unavailable");
      // Later calls are refused before reaching the upstream.
      const samples = h.sims[0]!.samples.length;
      const again = await fetch(`${r.openai_base_url}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" }, body: JSON.stringify(chat("y")) });
      expect(again.status).toBe(503);
      expect(h.sims[0]!.samples.length).toBe(samples);
      const health = await fetch(`${h.proxy.url}/healthz`);
      expect(health.status).toBe(503);
      expect(((await health.json()) as any).recorder).toContain("no space left");
      fail = false;
    } finally {
      await h.close();
    }
  });
});
