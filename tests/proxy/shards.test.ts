/**
 * A sharded proxy (proxy/shards.ts, proxy/routes/shards.ts): three real proxies, each with its
 * own data directory under one root, in front of the policy simulator. Registrations sent to
 * any shard land on the owner of the rollout (its first try's id hashed), whose base URLs come
 * back; finishes, reads and the trajectory route work from any shard; a retry lands with its
 * first try and supersedes it; pause and resume hold every shard, and a pause one shard cannot
 * take is undone on the others. The shards' logs are read back merged: readRecords and
 * `forge export` on the root, analytics over it, and `forge run --proxy-shards 2` end to end.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { startProxy } from "../../proxy/index.ts";
import { type StartedProxy } from "../../proxy/testing.ts";
import { shardOf } from "../../proxy/shards.ts";
import { readRecords } from "../../records/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { type StartedPolicySimulator } from "../../simulator/testing.ts";
import { findBwrap } from "../../workflows/local/sandbox.ts";
import { openAnalytics } from "../../analytics/index.ts";

setDefaultTimeout(120_000);
const ROOT = join(import.meta.dir, "..", "..");
const ADMIN = "shards-admin";
const N = 3;
let sim: StartedPolicySimulator;
let shards: StartedProxy[] = [];
let urls: string[] = [];
let root: string;

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });

async function startShard(i: number): Promise<StartedProxy> {
  return startProxy({
    listen: new URL(urls[i]!).host,
    upstreams: [`${sim.url}/v1`],
    dataDir: join(root, `shard-${i}`),
    adminToken: ADMIN,
    groupCommitMs: 5,
    healthIntervalMs: 0,
    shards: { index: i, count: N, urls },
  });
}

const control = (url: string, path: string, body?: unknown, method = body === undefined ? "GET" : "POST") =>
  fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

beforeAll(async () => {
  sim = await startPolicySimulator({ seed: 5 });
  root = mkdtempSync(join(tmpdir(), "forge-shards-"));
  urls = (await Promise.all(Array.from({ length: N }, freePort))).map((p) => `http://127.0.0.1:${p}`);
  shards = await Promise.all(Array.from({ length: N }, (_, i) => startShard(i)));
});
afterAll(async () => {
  for (const s of shards) await s.stop().catch(() => {});
  await sim.stop();
  rmSync(root, { recursive: true, force: true });
});

type Registration = { rollout_id: string; api_key: string; openai_base_url: string };

describe("a sharded proxy", () => {
  const registered: Registration[] = [];

  test("registrations sent to any shard land on the rollout's owner, whose base URL comes back; calls and finishes work", async () => {
    const ids = Array.from({ length: 12 }, (_, i) => `wf.i0.task-${i}.0`);
    const owners = ids.map((id) => shardOf(id, N));
    // The hash spreads them: every shard owns some.
    expect(new Set(owners).size).toBe(N);
    for (const [i, id] of ids.entries()) {
      const via = urls[i % N]!;
      const response = await control(via, "/control/rollouts", { rollout_id: id, experiment: "shards", task_id: `task-${i}`, group: `task-${i}@i0` });
      expect(response.status).toBe(201);
      expect(response.headers.get("x-forge-shard")).toBe(String(owners[i]));
      const r = (await response.json()) as Registration;
      expect(r.openai_base_url).toBe(`${urls[owners[i]!]}/r/${id}/v1`);
      registered.push(r);
    }
    // Without an id: registered where it was sent, under an id that shard owns.
    const anonymous = (await (await control(urls[2]!, "/control/rollouts", { experiment: "shards", task_id: "anon" })).json()) as Registration;
    expect(shardOf(anonymous.rollout_id, N)).toBe(2);
    expect(anonymous.openai_base_url.startsWith(urls[2]!)).toBe(true);
    expect(shards[2]!.proxy.state.registry.get(anonymous.rollout_id)).toBeDefined();

    for (const [i, r] of registered.entries()) {
      const client = new OpenAI({ baseURL: r.openai_base_url, apiKey: r.api_key, maxRetries: 0 });
      await client.chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: `hello ${i}` }] });
      // Finished through another shard than the owner.
      const finish = await control(urls[(owners[i]! + 1) % N]!, `/control/rollouts/${r.rollout_id}/finish`, { reward: i % 2, status: "ok" });
      expect(finish.status).toBe(200);
    }
    // Each shard recorded exactly its own rollouts.
    for (let s = 0; s < N; s++) {
      expect(ids.filter((_, i) => owners[i] === s).every((id) => shards[s]!.proxy.state.registry.get(id)?.result !== undefined)).toBe(true);
      expect(ids.filter((_, i) => owners[i] !== s).some((id) => shards[s]!.proxy.state.registry.get(id))).toBe(false);
    }
    // Read and trajectory routes from any shard.
    const read = await control(urls[(owners[3]! + 2) % N]!, `/control/rollouts/${ids[3]}`);
    expect(read.status).toBe(200);
    expect(((await read.json()) as { calls: number }).calls).toBe(1);
    const trajectory = await control(urls[(owners[4]! + 1) % N]!, `/control/rollouts/${ids[4]}/trajectory`);
    expect(((await trajectory.json()) as { samples: unknown[] }).samples).toHaveLength(1);
    expect((await control(urls[0]!, "/control/rollouts/no-such-rollout")).status).toBe(404);
  });

  test("a retry lands with its first try (whatever its own id hashes to) and supersedes it", async () => {
    const first = "wf.i0.retried.0";
    const owner = shardOf(first, N);
    // A retry id that would hash to another shard on its own.
    let retry = 1;
    while (shardOf(`${first}.r${retry}`, N) === owner) retry++;
    const id = `${first}.r${retry}`;
    expect((await control(urls[(owner + 1) % N]!, "/control/rollouts", { rollout_id: first, experiment: "shards", task_id: "retried" })).status).toBe(201);
    const again = await control(urls[(owner + 2) % N]!, "/control/rollouts", { rollout_id: id, experiment: "shards", task_id: "retried", retry_of: first, retry });
    expect(again.status).toBe(201);
    expect(again.headers.get("x-forge-shard")).toBe(String(owner));
    expect(shards[owner]!.proxy.state.registry.get(first)?.result?.error).toContain("superseded");
    // Found by the retry's id from any shard (its hashed owner does not have it: the others are asked).
    const read = await control(urls[shardOf(id, N)]!, `/control/rollouts/${id}`);
    expect(read.status).toBe(200);
  });

  test("pause and resume hold and release every shard", async () => {
    const paused = await control(urls[1]!, "/control/pause", {});
    expect(paused.status).toBe(200);
    expect(await paused.json()).toMatchObject({ paused: true, drained: true, in_flight: 0, shards: N });
    for (const s of shards) expect(s.proxy.state.gate.paused).toBe(true);
    const resumed = await control(urls[0]!, "/control/resume", { policy_version: 3 });
    expect(await resumed.json()).toMatchObject({ paused: false, policy_version: 3, shards: N });
    for (const s of shards) expect([s.proxy.state.gate.paused, s.proxy.state.gate.policyVersion]).toEqual([false, 3]);
  });

  test("a pause one shard cannot take is undone on the others: 503 naming it", async () => {
    await shards[2]!.stop();
    try {
      const paused = await control(urls[0]!, "/control/pause", {});
      expect(paused.status).toBe(503);
      expect(((await paused.json()) as { error: { message: string } }).error.message).toMatch(/pause did not reach every proxy shard \(undone on the others\): shard 2 .*unreachable/);
      for (const s of shards.slice(0, 2)) expect([s.proxy.state.gate.paused, s.proxy.state.gate.policyVersion]).toEqual([false, 3]);
    } finally {
      shards[2] = await startShard(2);
    }
    // The restarted shard is back with its rollouts (its own log).
    expect(shards[2]!.proxy.state.restored.rollouts).toBeGreaterThan(0);
  });

  test("the shards' logs read back merged: readRecords and forge export on the root, analytics over it", async () => {
    expect(readdirSync(root).sort()).toEqual(["shard-0", "shard-1", "shard-2"]);
    const rollouts = new Set<string>();
    for await (const { record } of readRecords(root)) if (record.kind.case === "rollout") rollouts.add(record.kind.value.rolloutId);
    expect(rollouts.size).toBe(12 + 1 + 2);
    const out = join(root, "export.jsonl");
    const exported = Bun.spawnSync(["bun", "bin/forge.ts", "export", "--data", root, "--format", "jsonl", "--min-group-size", "1", "--out", out, "--json"], { cwd: ROOT });
    expect(exported.stderr.toString()).toBe("");
    const manifest = JSON.parse(exported.stdout.toString());
    expect(manifest.rollouts.seen).toBe(15);
    // Repeated --data reads the same.
    const twice = Bun.spawnSync(["bun", "bin/forge.ts", "export", ...[0, 1, 2].flatMap((i) => ["--data", join(root, `shard-${i}`)]), "--format", "jsonl", "--min-group-size", "1", "--out", join(root, "export-2.jsonl"), "--json"], { cwd: ROOT });
    expect(twice.stderr.toString()).toBe("");
    expect(JSON.parse(twice.stdout.toString()).rollouts.seen).toBe(15);
    const session = await openAnalytics(root);
    try {
      const rows = (await session.connection.runAndReadAll("SELECT count(*)::INT AS n FROM rollouts")).getRowObjectsJson();
      expect(rows).toEqual([{ n: 15 }]);
      // Each shard's segments compacted (or re-read while its proxy writes) under a key of their own.
      const keys = [...session.compaction.compacted, ...session.compaction.reread];
      expect(new Set(keys.map((key) => key.split("/")[0]))).toEqual(new Set(["shard-0", "shard-1", "shard-2"]));
      expect(keys.every((key) => /^shard-\d\/seg-\d+\.forge$/.test(key))).toBe(true);
    } finally {
      session.close();
    }
  });
});

test("forge run --proxy-shards 2: rollouts spread over two proxy processes, exported and scored from both", () => {
  const dir = mkdtempSync(join(tmpdir(), "forge-run-shards-"));
  try {
    const experiment = join(dir, "experiment.yaml");
    writeFileSync(
      experiment,
      [
        "apiVersion: openforge.dev/v1",
        "kind: Experiment",
        "metadata: {name: sharded}",
        "spec:",
        "  policy: {model: forge-sim/qwen3-sim, mode: train}",
        "  harness: {name: command, command: [bash, -c, 'curl -s -o /dev/null -H \"authorization: Bearer $OPENAI_API_KEY\" -H content-type:application/json -d \"{\\\"model\\\":\\\"m\\\",\\\"messages\\\":[{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"hi\\\"}]}\" $OPENAI_BASE_URL/chat/completions || exit 3; echo done']}",
        "  environment: {tasks: [{id: a, instruction: x, expected: done}, {id: b, instruction: y, expected: done}, {id: c, instruction: z, expected: done}]}",
        // In the bwrap sandbox where it works: each rollout reaches its own shard through the sandbox's bridges.
        `  rollouts: {k: 4, parallelism: 4, sandbox: ${findBwrap() ? "bwrap" : "none"}}`,
        "  metrics: {k: [1]}",
      ].join("\n"),
    );
    const run = Bun.spawnSync(["bun", "bin/forge.ts", "run", experiment, "--data", join(dir, "data"), "--proxy-shards", "2", "--json", "--quiet", "--allow-root-unsandboxed"], { cwd: ROOT, env: { ...process.env, FORGE_ALLOW_ROOT_UNSANDBOXED: "1" } });
    const stderr = run.stderr.toString();
    expect(run.exitCode, stderr).toBe(0);
    const out = JSON.parse(run.stdout.toString());
    expect(out.outcomes).toHaveLength(12);
    // Every harness reached its shard (curl -f fails the rollout otherwise).
    expect(out.outcomes.map((o: { status: string; reward: number }) => `${o.status}:${o.reward}`)).toEqual(Array(12).fill("ok:1"));
    expect(readdirSync(join(dir, "data")).filter((n) => n.startsWith("shard-")).sort()).toEqual(["shard-0", "shard-1"]);
    // Both shards recorded rollouts, and the export and pass@k cover all twelve.
    const perShard = [0, 1].map((i) => readdirSync(join(dir, "data", `shard-${i}`, "log")).filter((n) => n.endsWith(".forge")).length);
    expect(perShard.every((n) => n > 0)).toBe(true);
    expect(out.pass.pass[0].tasks_scored).toBe(3);
    expect(out.export.samples).toBeGreaterThan(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
