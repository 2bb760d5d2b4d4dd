/**
 * Attacks on the proxy's HTTP surface, as an independent tester ran them: credentials in
 * headers nobody listed, admin-token guessing, calls on a finished rollout, a forged Host
 * header, and JSON nested 100,000 deep.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ADMIN, readAll, startProxyUnderTest, type ProxyUnderTest } from "../faults/proxy-under-test.ts";

const json = { "content-type": "application/json" };

describe("credentials in request headers", () => {
  let t: ProxyUnderTest;
  beforeAll(async () => {
    t = await startProxyUnderTest({ chunks: 2 });
  });
  afterAll(() => t.close());

  test("no credential header lands in the log; headers on the allow-list are kept as sent", async () => {
    const r = await t.register();
    const secrets: Record<string, string> = {
      "x-goog-api-key": `goog-${crypto.randomUUID()}`,
      "openai-api-key": `sk-openai-${crypto.randomUUID()}`,
      "anthropic-api-key": `sk-ant-${crypto.randomUUID()}`,
      "x-auth-token": `tok-${crypto.randomUUID()}`,
      // One nobody could have listed: the allow-list stores it redacted all the same.
      "x-some-vendor-credential": `vendor-${crypto.randomUUID()}`,
    };
    for (const stream of [false, true]) {
      const res = await t.chat(r, "hello", { stream, headers: { ...secrets, "user-agent": "attack-suite/1.0", "x-stainless-os": "Linux", "session-id": "s-1" } });
      expect(res.status).toBe(200);
      await readAll(res);
    }
    await t.proxy.proxy.state.log.sync();
    const calls = await t.calls();
    expect(calls).toHaveLength(2);
    for (const call of calls) {
      const headers = Object.fromEntries(call.requestHeaders.map((h) => [h.name, h.value]));
      for (const name of Object.keys(secrets)) expect({ name, value: headers[name] }).toEqual({ name, value: "[redacted]" });
      expect(headers["authorization"]).toBe("[redacted]");
      expect(headers["user-agent"]).toBe("attack-suite/1.0");
      expect(headers["x-stainless-os"]).toBe("Linux");
      expect(headers["session-id"]).toBe("s-1");
    }
    // Nowhere in the data dir, in any form.
    const files: string[] = [];
    const walk = (d: string) => {
      for (const n of readdirSync(d)) {
        const p = join(d, n);
        if (statSync(p).isDirectory()) walk(p);
        else files.push(p);
      }
    };
    walk(t.dataDir);
    const everything = files.map((f) => readFileSync(f).toString("latin1")).join("\n");
    for (const [name, secret] of Object.entries(secrets)) expect({ name, found: everything.includes(secret) }).toEqual({ name, found: false });
  });
});

describe("admin-token guessing", () => {
  let t: ProxyUnderTest;
  beforeAll(async () => {
    t = await startProxyUnderTest({ proxy: { adminThrottle: { burst: 5, refillMs: 500 } } });
  });
  afterAll(() => t.close());

  const control = (token: string) => fetch(`${t.proxy.url}/control/rollouts`, { method: "POST", headers: { ...json, authorization: `Bearer ${token}` }, body: JSON.stringify({ experiment: "x", task_id: "y" }) });

  test("failed attempts are throttled per address: 429 with Retry-After, the right token included, until the bucket refills", async () => {
    const statuses: number[] = [];
    let throttled: Response | undefined;
    for (let i = 0; i < 40; i++) {
      const res = await control(`guess-${i}`);
      statuses.push(res.status);
      if (res.status === 429) throttled ??= res;
      await res.arrayBuffer();
    }
    // The burst is answered 401; every guess after it, 429 (the guessing rate is the refill rate).
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(6);
    expect(statuses.slice(-20).every((s) => s === 429)).toBe(true);
    expect(Number(throttled!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await control(`guess-x`).then((r) => r.json())) as any).error.code).toBe("admin_attempts_throttled");
    // While throttled the right token gets 429 too: a 200 would tell a guesser it was right.
    const right = await control(ADMIN);
    expect(right.status).toBe(429);
    await right.arrayBuffer();
    // Once the bucket has refilled, the right token is served again.
    await Bun.sleep(Number(right.headers.get("retry-after")) * 1000 + 100);
    const later = await control(ADMIN);
    expect(later.status).toBe(201);
  });
});

describe("finished rollouts", () => {
  let t: ProxyUnderTest;
  beforeAll(async () => {
    t = await startProxyUnderTest({ chunks: 2 });
  });
  afterAll(() => t.close());

  test("refuse model calls on every door and route with 409 naming the rollout and that it finished", async () => {
    const r = await t.register();
    expect((await t.chat(r, "before the finish")).status).toBe(200);
    const fin = await fetch(`${t.proxy.url}/control/rollouts/${r.rollout_id}/finish`, { method: "POST", headers: { ...json, authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ reward: 1, status: "ok" }) });
    expect(fin.status).toBe(200);
    const before = (await t.calls()).length;
    const attempts: [string, unknown][] = [
      [`/r/${r.rollout_id}/v1/chat/completions`, { model: "m", messages: [{ role: "user", content: "after" }] }],
      ["/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "after, by key" }] }],
      [`/r/${r.rollout_id}/v1/completions`, { model: "m", prompt: "after" }],
      [`/r/${r.rollout_id}/v1/messages`, { model: "m", max_tokens: 5, messages: [{ role: "user", content: "after" }] }],
      [`/r/${r.rollout_id}/v1/responses`, { model: "m", input: "after" }],
    ];
    for (const [path, body] of attempts) {
      const res = await fetch(`${t.proxy.url}${path}`, { method: "POST", headers: { ...json, authorization: `Bearer ${r.api_key}` }, body: JSON.stringify(body) });
      const error = ((await res.json()) as any).error;
      expect({ path, status: res.status, code: error.code }).toEqual({ path, status: 409, code: "rollout_finished" });
      expect(error.message).toContain(`rollout "${r.rollout_id}" finished`);
    }
    expect((await t.calls()).length).toBe(before);
    expect(t.upstream.requests.filter((q) => q.body.includes("after")).length).toBe(0);
  });
});

describe("base URLs handed out at registration", () => {
  test("come from the listen address, not from the Host header a client sends", async () => {
    const t = await startProxyUnderTest();
    try {
      const res = await fetch(`${t.proxy.url}/control/rollouts`, {
        method: "POST",
        headers: { ...json, authorization: `Bearer ${ADMIN}`, host: "attacker.example:9999" },
        body: JSON.stringify({ experiment: "x", task_id: "y" }),
      });
      const reg = (await res.json()) as { rollout_id: string; openai_base_url: string; anthropic_base_url: string };
      expect(reg.openai_base_url).toBe(`${t.proxy.url}/r/${reg.rollout_id}/v1`);
      expect(reg.anthropic_base_url).toBe(`${t.proxy.url}/r/${reg.rollout_id}`);
    } finally {
      await t.close();
    }
  });

  test("come from --public-url when it is given", async () => {
    const t = await startProxyUnderTest({ proxy: { publicUrl: "https://forge-proxy.internal:8443/" } });
    try {
      const reg = await t.register();
      expect(reg.openai_base_url).toBe(`https://forge-proxy.internal:8443/r/${reg.rollout_id}/v1`);
    } finally {
      await t.close();
    }
  });
});

describe("deeply nested JSON", () => {
  let t: ProxyUnderTest;
  beforeAll(async () => {
    t = await startProxyUnderTest();
  });
  afterAll(() => t.close());

  const deep = "[".repeat(100_000) + "]".repeat(100_000);
  const cases: [string, string][] = [
    ["/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"metadata":${deep}}`],
    ["/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":${deep}}]}`],
    ["/v1/responses", `{"model":"m","input":"x","metadata":${deep}}`],
    ["/v1/responses", `{"model":"m","input":${deep}}`],
  ];
  for (const [path, body] of cases) {
    test(`100k-deep JSON on ${path} is a 400 naming the nesting, and nothing goes upstream`, async () => {
      const r = await t.register();
      const sent = t.upstream.requests.length;
      const res = await fetch(`${t.proxy.url}/r/${r.rollout_id}${path}`, { method: "POST", headers: { ...json, authorization: `Bearer ${r.api_key}` }, body });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.message).toMatch(/nested more than 512 levels/);
      expect(t.upstream.requests.length).toBe(sent);
    });
  }
});
