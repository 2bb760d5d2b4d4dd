/**
 * Attack 2 of issue 35: a harness guessing admin tokens to make its own run lose its rollouts.
 * The sandbox's bridge used to carry every route of the proxy: 300 wrong tokens from the harness
 * got loopback throttled (12 × 401, then 429), and the executor's own `finish`, from the same
 * address, got 429 `admin_attempts_throttled`; the rollout became an infra error and its result
 * never reached the log. Now the bridge passes only model routes (workflows/local/bridge.ts), and
 * the executor's control client waits out a throttle another local client caused.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";
import { readRecords } from "../../records/index.ts";
import { controlClient } from "../../workflows/local/control.ts";
import { runLocal } from "../../workflows/local/executor.ts";
import { findBwrap } from "../../workflows/local/sandbox.ts";
import { taskFromSpec } from "../../workflows/tasks/index.ts";

let root: string;
let harness: ProxyHarness;
let proxy: ProxyHarness["proxy"];
let ADMIN: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "forge-control-attack-"));
  harness = await startProxyHarness({ sim: { seed: 1 }, proxy: { mode: "train" }, dataDir: join(root, "proxy-data") });
  proxy = harness.proxy;
  ADMIN = harness.adminToken;
});
afterAll(async () => {
  await harness?.close();
  rmSync(root, { recursive: true, force: true });
});

/**
 * The guessing harness: 300 wrong admin tokens at the control API through its base URL's
 * origin, then the ways around a path filter, then one model call by its own key. Prints each
 * status once with its count.
 */
const GUESSER = `
const base = new URL(process.env.OPENAI_BASE_URL);
const origin = base.origin;
const counts = {};
const note = (what, status) => { counts[what + " " + status] = (counts[what + " " + status] ?? 0) + 1; };
for (let i = 0; i < 300; i++) {
  const r = await fetch(origin + "/control/rollouts", { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer guess-" + i }, body: "{}" });
  note("guess", r.status);
  await r.arrayBuffer();
}
const rid = process.env.FORGE_ROLLOUT_ID;
for (const path of ["/control/rollouts/" + rid + "/finish", "/metrics", "/healthz", "/r/x/../../control/rollouts", "/v1/../control/rollouts", "/v1/%2e%2e/control/rollouts", "/r/%2e%2e/control/rollouts", "/r/x/v1/../../../control/rollouts"]) {
  const r = await fetch(origin + path, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer guess" }, body: JSON.stringify({ reward: 1, status: "ok" }) });
  note("around " + path, r.status);
  await r.arrayBuffer();
}
// Unnormalised paths on a raw connection (fetch would resolve the dot segments itself).
const net = require("node:net");
for (const path of ["/v1/../control/rollouts", "/r/x/../../control/rollouts", "/v1/%2e%2e/control/rollouts", "//control/rollouts"]) {
  const status = await new Promise((resolve) => {
    let got = "";
    const socket = net.connect(Number(base.port), base.hostname, () => socket.write("POST " + path + " HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\nAuthorization: Bearer guess\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\n{}"));
    socket.on("data", (data) => (got += data));
    socket.on("close", () => resolve(got.split(" ")[1]));
    socket.on("error", () => resolve("error"));
  });
  note("around raw " + path, status);
}
const chat = await fetch(base.href.replace(/\\/$/, "") + "/chat/completions", { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer " + process.env.OPENAI_API_KEY }, body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "still served?" }] }) });
note("model call", chat.status);
console.log(JSON.stringify(counts));
`;

describe.skipIf(!findBwrap())("a harness guessing admin tokens from the sandbox", () => {
  test("never reaches the control API, and every rollout of its run finishes with its result in the log", async () => {
    const task = taskFromSpec({ id: "guesser", instruction: "guess", files: {}, metadata: {}, test: "exit 0" }, "t");
    const dataDir = join(root, "run");
    const { outcomes } = await runLocal({
      run: "guess",
      experiment: "control-attack",
      tasks: [task],
      k: 3,
      harness: "command",
      harnessCommand: [process.execPath, "-e", GUESSER],
      model: "m",
      proxyUrl: proxy.url,
      adminToken: ADMIN,
      dataDir,
      parallelism: 3,
      timeoutSeconds: 120,
      quiet: true,
      sandbox: "bwrap",
    });
    expect(outcomes).toHaveLength(3);
    for (const outcome of outcomes) {
      expect(outcome, outcome.error).toMatchObject({ status: "ok", reward: 1 });
      const seen = JSON.parse(readFileSync(join(outcome.dir, "logs", "harness.stdout"), "utf8").trim()) as Record<string, number>;
      // Every guess is stopped at the bridge (403), never answered by the control API (401, 429).
      expect(seen["guess 403"]).toBe(300);
      for (const [what, count] of Object.entries(seen)) {
        if (what.startsWith("around ")) expect(what, `${what} × ${count}`).toMatch(/ (403|404)$/);
      }
      expect(Object.keys(seen).some((what) => / (401|429)$/.test(what))).toBe(false);
      expect(seen["model call 200"]).toBe(1);
    }
    // The run's results are all in the proxy's log, each as the executor reported it.
    const results: string[] = [];
    for await (const { record } of readRecords(join(root, "proxy-data"))) {
      if (record.kind.case === "rolloutResult" && record.kind.value.rolloutId.startsWith("guess.")) results.push(record.kind.value.rolloutId);
    }
    expect(results.sort()).toEqual(outcomes.map((outcome) => outcome.rollout_id).sort());
    // And the control API was never throttled: the right token is served at once.
    const health = await fetch(`${proxy.url}/control/rollouts`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ experiment: "x", task_id: "after" }) });
    expect(health.status).toBe(201);
  }, 180_000);
});

describe("the executor's control client", () => {
  test("waits out an admin throttle another client at its address caused, as Retry-After says", async () => {
    let calls = 0;
    const server = Bun.serve({
      port: 0,
      fetch() {
        calls++;
        if (calls <= 2) return Response.json({ error: { message: "too many failed admin-token attempts", code: "admin_attempts_throttled" } }, { status: 429, headers: { "retry-after": "1" } });
        return Response.json({});
      },
    });
    try {
      const started = performance.now();
      await controlClient(`http://127.0.0.1:${server.port}`, "t").finish("r1", { reward: 1, status: "ok" });
      expect(calls).toBe(3);
      expect(performance.now() - started).toBeGreaterThanOrEqual(1900);
    } finally {
      await server.stop(true);
    }
  });

  test("any other error is not retried", async () => {
    let calls = 0;
    const server = Bun.serve({
      port: 0,
      fetch() {
        calls++;
        return Response.json({ error: { message: "too many concurrent calls", code: "too_many_concurrent_calls" } }, { status: 429, headers: { "retry-after": "1" } });
      },
    });
    try {
      await expect(controlClient(`http://127.0.0.1:${server.port}`, "t").finish("r1", { reward: 1, status: "ok" })).rejects.toThrow("HTTP 429");
      expect(calls).toBe(1);
    } finally {
      await server.stop(true);
    }
  });
});
