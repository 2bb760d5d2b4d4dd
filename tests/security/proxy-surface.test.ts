/**
 * Security of the recording proxy over its HTTP surface: per-rollout keys reach only their own
 * rollout, control routes need the admin token and guessing it is throttled, a finished
 * rollout's key serves nothing more, keys are compared in constant time, no secret (nor any
 * credential header) lands in the log or the process output, loopback by default with a warning
 * otherwise, base URLs never from the Host header, and the concurrency limit. What a request's
 * bytes can do (size, framing, nesting) is tests/security/proxy-framing.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createProxy, parseListen, PROXY_DEFAULTS } from "../../proxy/testing.ts";
import { readRecords } from "../../records/index.ts";
import type { ModelCall } from "../../schemas/index.ts";
import { startChaosUpstream, type ChaosUpstream } from "../faults/chaos-upstream.ts";
import { startForgeProcess } from "../faults/forge-process.ts";
import { ADMIN, startProxyUnderTest, type ProxyUnderTest } from "../faults/proxy-under-test.ts";

let t: ProxyUnderTest;
beforeAll(async () => {
  // Many wrong tokens on purpose: the failed-attempt throttle (tests/security/) is not under test here.
  t = await startProxyUnderTest({ chunks: 2, proxy: { maxBodyBytes: 64 * 1024, adminThrottle: { burst: 1000 } } });
});
afterAll(() => t.close());

const json = { "content-type": "application/json" };
/** Headers on the allow-list (proxy/capture/headers.ts): stored as sent. */
const ALLOWED = { "user-agent": "attack-suite/1.0", "x-stainless-os": "Linux", "session-id": "s-1" };
const body = (content = "hi") => JSON.stringify({ model: "m", messages: [{ role: "user", content }] });

describe("per-rollout keys", () => {
  test("a rollout's key reaches only its own rollout's routes", async () => {
    const a = await t.register("a");
    const b = await t.register("b");
    const post = (route: string, key?: string, header: "authorization" | "x-api-key" = "authorization") =>
      fetch(`${t.proxy.url}${route}`, { method: "POST", headers: { ...json, ...(key ? { [header]: header === "authorization" ? `Bearer ${key}` : key } : {}) }, body: body() });
    expect((await post(`/r/${a.rollout_id}/v1/chat/completions`, a.api_key)).status).toBe(200);
    expect((await post(`/r/${a.rollout_id}/v1/chat/completions`, a.api_key, "x-api-key")).status).toBe(200);
    const cross = await post(`/r/${b.rollout_id}/v1/chat/completions`, a.api_key);
    expect(cross.status).toBe(401);
    expect(((await cross.json()) as any).error.code).toBe("invalid_api_key");
    expect((await post(`/r/${b.rollout_id}/v1/chat/completions`)).status).toBe(401);
    expect((await post(`/r/${b.rollout_id}/v1/chat/completions`, ADMIN)).status).toBe(401); // the admin token is not a rollout key
    expect((await post(`/r/${b.rollout_id}/v1/completions`, a.api_key)).status).toBe(401);
    const models = await fetch(`${t.proxy.url}/r/${b.rollout_id}/v1/models`, { headers: { authorization: `Bearer ${a.api_key}` } });
    expect(models.status).toBe(401);
    // On the root routes the key picks the rollout: A's call lands in A only.
    const root = await post("/v1/chat/completions", a.api_key);
    expect(root.status).toBe(200);
    const call = (await t.calls()).find((c) => c.callId === root.headers.get("x-forge-call-id"))!;
    expect(call.rolloutId).toBe(a.rollout_id);
    expect((await t.calls()).filter((c) => c.rolloutId === b.rollout_id)).toEqual([]);
  });

  test("control routes need the admin token; a rollout key is not enough", async () => {
    const a = await t.register("c");
    const routes: [string, string, unknown?][] = [
      ["POST", "/control/rollouts", { experiment: "x", task_id: "y" }],
      ["GET", `/control/rollouts/${a.rollout_id}`],
      ["GET", `/control/rollouts/${a.rollout_id}/trajectory`],
      ["POST", `/control/rollouts/${a.rollout_id}/finish`, { reward: 1, status: "ok" }],
      ["POST", "/control/pause", {}],
      ["POST", "/control/resume", { policy_version: 9 }],
    ];
    for (const [method, route, payload] of routes) {
      for (const auth of [undefined, `Bearer ${a.api_key}`, `Bearer ${ADMIN}x`, ADMIN]) {
        const res = await fetch(`${t.proxy.url}${route}`, { method, headers: { ...json, ...(auth ? { authorization: auth } : {}) }, body: payload === undefined ? undefined : JSON.stringify(payload) });
        expect({ route, auth, status: res.status }).toEqual({ route, auth, status: 401 });
      }
    }
    const ok = await fetch(`${t.proxy.url}/control/rollouts/${a.rollout_id}`, { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(ok.status).toBe(200);
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

describe("constant-time key comparison", () => {
  test("a key wrong in its last character is refused no faster or slower than one wrong in its first", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-sec-timing-"));
    const up = await startChaosUpstream();
    const proxy = await createProxy({ upstreams: [`${up.url}/v1`], dataDir: dir, adminToken: ADMIN, healthIntervalMs: 0, groupCommitMs: 5 });
    try {
      const reg = await proxy.fetch(new Request("http://proxy/control/rollouts", { method: "POST", headers: { ...json, authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ experiment: "t", task_id: "t" }) }));
      const { rollout_id, api_key } = (await reg.json()) as { rollout_id: string; api_key: string };
      const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === "A" ? "B" : "A") + s.slice(i + 1);
      const nearly = flip(api_key, api_key.length - 1);
      const far = flip(api_key, 3);
      // In process (no sockets), interleaved, median of many: a byte-by-byte compare would make
      // `nearly` measurably slower; over sha256 digests both cost the same.
      const time = async (key: string) => {
        const t0 = Bun.nanoseconds();
        const res = await proxy.fetch(new Request(`http://proxy/r/${rollout_id}/v1/chat/completions`, { method: "POST", headers: { ...json, authorization: `Bearer ${key}` }, body: body() }));
        expect(res.status).toBe(401);
        return Bun.nanoseconds() - t0;
      };
      const a: number[] = [];
      const b: number[] = [];
      for (let i = 0; i < 600; i++) {
        a.push(await time(nearly));
        b.push(await time(far));
      }
      const median = (xs: number[]) => xs.sort((x, y) => x - y)[xs.length >> 1]!;
      const ratio = median(a) / median(b);
      expect(ratio).toBeGreaterThan(0.7);
      expect(ratio).toBeLessThan(1.4);
    } finally {
      await proxy.close();
      await up.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("no secret in the log or the output", () => {
  test("upstream key, rollout keys, admin token and any credential header appear nowhere in the data dir or the process output; allow-listed headers are kept", async () => {
    const up: ChaosUpstream = await startChaosUpstream({ chunks: 3 });
    const credentials: Record<string, string> = {
      "x-goog-api-key": `goog-${crypto.randomUUID()}`,
      "openai-api-key": `sk-openai-${crypto.randomUUID()}`,
      "anthropic-api-key": `sk-ant-${crypto.randomUUID()}`,
      "x-auth-token": `tok-${crypto.randomUUID()}`,
      // One nobody could have listed: the allow-list stores it redacted all the same.
      "x-some-vendor-credential": `vendor-${crypto.randomUUID()}`,
    };
    const dir = mkdtempSync(join(tmpdir(), "forge-sec-secrets-"));
    const upstreamKey = `sk-upstream-${crypto.randomUUID()}`;
    const admin = `admin-${crypto.randomUUID()}`;
    const proxy = await startForgeProcess(["--upstream", `${up.url}/v1`, "--data", dir, "--listen", "127.0.0.1:0"], { FORGE_UPSTREAM_API_KEY: upstreamKey, FORGE_ADMIN_TOKEN: admin });
    try {
      const reg = await fetch(`${proxy.url}/control/rollouts`, { method: "POST", headers: { ...json, authorization: `Bearer ${admin}` }, body: JSON.stringify({ experiment: "s", task_id: "s" }) });
      const r = (await reg.json()) as { rollout_id: string; api_key: string };
      for (const [stream, header] of [[false, "authorization"], [true, "x-api-key"]] as const) {
        const res = await fetch(`${proxy.url}/r/${r.rollout_id}/v1/chat/completions`, {
          method: "POST",
          headers: { ...json, ...credentials, ...ALLOWED, [header]: header === "authorization" ? `Bearer ${r.api_key}` : r.api_key, cookie: "session=secret-cookie" },
          body: JSON.stringify({ model: "m", stream, messages: [{ role: "user", content: "hello" }] }),
        });
        expect(res.status).toBe(200);
        await res.text();
      }
      await fetch(`${proxy.url}/control/rollouts/${r.rollout_id}/finish`, { method: "POST", headers: { ...json, authorization: `Bearer ${admin}` }, body: JSON.stringify({ reward: 1, status: "ok" }) });
      // The upstream did get its key: it is used, only not stored.
      expect(up.requests.every((q) => q.headers.authorization === `Bearer ${upstreamKey}`)).toBe(true);
      await proxy.kill("SIGTERM");
      const files: string[] = [];
      const walk = (d: string) => {
        for (const n of readdirSync(d)) {
          const p = join(d, n);
          if (statSync(p).isDirectory()) walk(p);
          else files.push(p);
        }
      };
      walk(dir);
      expect(files.length).toBeGreaterThan(0);
      const everything = files.map((f) => readFileSync(f).toString("latin1")).join("\n") + proxy.output();
      for (const secret of [upstreamKey, admin, r.api_key, "secret-cookie", ...Object.values(credentials)]) expect({ secret, found: everything.includes(secret) }).toEqual({ secret, found: false });
      expect(everything).toContain("[redacted]");
      // Each call (stream and not) keeps the allow-listed headers as sent and names every credential header redacted.
      const calls: ModelCall[] = [];
      for await (const { record } of readRecords(dir)) if (record.kind.case === "modelCall") calls.push(record.kind.value);
      expect(calls).toHaveLength(2);
      for (const call of calls) {
        const headers = Object.fromEntries(call.requestHeaders.map((h) => [h.name, h.value]));
        for (const name of [...Object.keys(credentials), "cookie"]) expect({ name, value: headers[name] }).toEqual({ name, value: "[redacted]" });
        expect(headers["authorization"] ?? headers["x-api-key"]).toBe("[redacted]");
        expect(headers).toMatchObject(ALLOWED);
      }
    } finally {
      await proxy.kill("SIGKILL").catch(() => {});
      await up.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe("binding", () => {
  test("the default listen address is loopback", () => {
    expect(parseListen(PROXY_DEFAULTS.listen).hostname).toBe("127.0.0.1");
  });

  // 192.0.2.1 (TEST-NET-1) is on no interface: the CLI prints its warning, then the bind fails,
  // so nothing ever listens beyond loopback.
  const startNonLoopback = async (env: Record<string, string>, extra: string[] = []) => {
    const dir = mkdtempSync(join(tmpdir(), "forge-sec-bind-"));
    try {
      const child = Bun.spawn(["bun", join(import.meta.dir, "..", "..", "bin", "forge.ts"), "proxy", "--upstream", "http://127.0.0.1:9/v1", "--data", dir, "--listen", "192.0.2.1:0", ...extra], {
        stdout: "pipe",
        stderr: "pipe",
        env: { ...process.env, FORGE_ADMIN_TOKEN: "", ...env },
      });
      const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
      await child.exited;
      return { out, err, code: child.exitCode };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  test("bound beyond loopback without an admin token: a warning", async () => {
    const { err, code } = await startNonLoopback({});
    expect(err).toMatch(/WARNING: listening on 192\.0\.2\.1 \(not loopback\)/);
    expect(code).not.toBe(0);
  });

  test("bound beyond loopback with an admin token: no warning", async () => {
    const { err } = await startNonLoopback({}, ["--admin-token", "given-token"]);
    expect(err).not.toMatch(/WARNING/);
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

describe("concurrency limit", () => {
  test("past --max-concurrent-calls a call gets 429 with Retry-After; finished calls free their slots", async () => {
    const limited = await startProxyUnderTest({ chunks: 20, chunkDelayMs: 20, proxy: { maxConcurrentCalls: 2 } });
    try {
      const r = await limited.register("limited");
      // Two streams hold both slots for ~400 ms while a third call arrives.
      const first = limited.chat(r, "one", { stream: true });
      const second = limited.chat(r, "two", { stream: true });
      const [a, b] = await Promise.all([first, second]);
      const refused = await limited.chat(r, "three");
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(((await refused.json()) as any).error).toMatchObject({ type: "rate_limit_error", code: "too_many_concurrent_calls" });
      await Promise.all([a.text(), b.text()]);
      const later = await limited.chat(r, "four");
      expect(later.status).toBe(200);
      await later.text();
      const metrics = await (await fetch(`${limited.proxy.url}/metrics`)).text();
      expect(metrics).toContain("forge_proxy_overloaded_total 1");
      // The refused call served nothing, so nothing is recorded for it.
      expect((await limited.calls()).length).toBe(3);
    } finally {
      await limited.close();
    }
  });
});
