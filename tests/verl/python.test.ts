/**
 * The veRL suite: integrations/verl against the real veRL 0.9.1 (the pinned environment
 * `.venv/reference`, built by python/build-env.sh; missing, the suite fails naming the script).
 *
 * Replay: records with groups, forks, images and an overlong rollout are exported here and the
 * Python suite drives ForgeAgentLoop through veRL's own V1 worker, TransferQueue, RLHFDataset,
 * GRPO advantage, hydra config and validate_config (integrations/verl/tests/). The Argo
 * command is rendered here for the iterations the suite replays veRL's fit() loop on.
 */
import { afterAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CallStatus, RolloutStatus, TokenMode, type Record as ForgeRecord } from "../../schemas/index.ts";
import { ExperimentSchema } from "../../schemas/testing.ts";
import { openSegmentLog, readRecords } from "../../records/index.ts";
import { scratchDir } from "../../records/testing.ts";
import { exportTrajectories, trajectoryOf } from "../../trajectories/index.ts";
import { rolloutRecords } from "../../trajectories/testing.ts";
import { verlCommand } from "../../workflows/argo/index.ts";
import { startProxyHarness } from "../../proxy/testing.ts";
import { tokenInOptions } from "../../proxy/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { type StartedPolicySimulator } from "../../simulator/testing.ts";
import { oraclePython } from "../reference/oracle.ts";

const scratch = scratchDir("forge-verl-py-");
afterAll(() => scratch.cleanup());
const ROOT = join(import.meta.dir, "..", "..");

/** Two 1×1 PNGs (red, blue): real images PIL opens. */
export const PNGS = {
  red: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC",
  blue: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGNgYPgPAAEDAQAIicLsAAAAAElFTkSuQmCC",
};
const sha = (base64: string) => createHash("sha256").update(Buffer.from(base64, "base64")).digest("hex");
const span = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

/**
 * Four GRPO groups of two rollouts (experiment verl-suite, iteration 0), as veRL's rollout.n = 2
 * replays them: g1 one clean rollout and one that forks (its first sample's response is longer
 * than the suite's rollout.response_length of 32: the loop leaves that sample out); g2 equal
 * rewards; g3 an image rollout (red, blue, red again) and one whose final prompt is longer
 * than rollout.prompt_length 64 (left out whole: GRPO compares g3 over one session); g4 plain.
 */
export function suiteRecords(): ForgeRecord[] {
  const out: ForgeRecord[] = [];
  const meta = (group: string) => ({ task: `task-${group}`, group, experiment: "verl-suite", policyVersion: 3 });
  const r1 = rolloutRecords("r1", meta("g1"));
  r1.call({ prompt: span(100, 5), completion: span(200, 4) });
  r1.call({ prompt: [...span(100, 5), ...span(200, 4), 7, 8], completion: span(300, 3) });
  r1.finish(1);
  const r2 = rolloutRecords("r2", meta("g1"));
  r2.call({ prompt: span(100, 5), completion: span(400, 40) });
  r2.call({ prompt: [100, 9, 9], completion: span(500, 5), policyVersion: 4 }); // compaction: a fork
  r2.finish(0, RolloutStatus.FAILED);
  const r3 = rolloutRecords("r3", meta("g2"));
  r3.call({ prompt: span(110, 6), completion: span(210, 6) });
  r3.finish(1);
  const r4 = rolloutRecords("r4", meta("g2"));
  r4.call({ prompt: span(110, 6), completion: span(220, 3) });
  r4.finish(1);
  const image = (name: keyof typeof PNGS) => ({ type: "image_url", image_url: { url: `data:image/png;base64,${PNGS[name]}` } });
  const r5 = rolloutRecords("r5", meta("g3"));
  r5.call({
    prompt: span(120, 8),
    completion: span(230, 5),
    blobRefs: [sha(PNGS.red), sha(PNGS.blue)],
    requestBody: { model: "m", messages: [{ role: "user", content: [{ type: "text", text: "what changed?" }, image("red"), image("blue"), image("red")] }] },
  });
  r5.finish(0.5);
  const r6 = rolloutRecords("r6", meta("g3"));
  r6.call({ prompt: span(1000, 80), completion: span(240, 3) });
  r6.finish(1);
  const r7 = rolloutRecords("r7", meta("g4"));
  r7.call({ prompt: span(130, 4), completion: span(250, 2) });
  r7.finish(0);
  const r8 = rolloutRecords("r8", meta("g4"));
  r8.call({ prompt: span(130, 4), completion: span(260, 7) });
  r8.finish(1);
  const lists = [r1, r2, r3, r4, r5, r6, r7, r8].map((r) => [...r.records]);
  while (lists.some((l) => l.length > 0)) for (const l of lists) if (l.length > 0) out.push(l.shift()!);
  return out;
}

/** The experiment whose Argo command the suite composes with veRL's config (lengths small enough for the records above). */
function suiteExperiment() {
  return ExperimentSchema.parse({
    apiVersion: "openforge.dev/v1",
    kind: "Experiment",
    metadata: { name: "verl-suite" },
    spec: {
      policy: { model: "Qwen/Qwen3-0.6B", upstreams: ["http://vllm:8000"], mode: "train" },
      harness: { name: "codex" },
      environment: { tasks: ["g1", "g2", "g3", "g4"].map((id) => ({ id: `task-${id}`, instruction: "x" })) },
      rollouts: { k: 2 },
      training: { iterations: 40, overrides: ["data.max_prompt_length=64", "data.max_response_length=32"] },
    },
  });
}

async function runSuite(args: string[], env: Record<string, string>): Promise<{ code: number; out: string }> {
  const python = oraclePython(); // throws naming python/build-env.sh when the venv is missing: never a skip
  const proc = Bun.spawn([python, "-m", "unittest", "-v", ...args], {
    cwd: join(ROOT, "integrations", "verl"),
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", PYTHONUNBUFFERED: "1", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  const out = `${stdout}\n${stderr}`;
  if (code !== 0) console.error(out.slice(-20000));
  return { code, out };
}

test("veRL suite: replay, GRPO, RLHFDataset, config and the 40-iteration loop against veRL 0.9.1", async () => {
  const dir = join(scratch.dir, "data");
  const log = await openSegmentLog(dir);
  for (const r of suiteRecords()) log.append(r);
  await log.close();
  const batch = join(dir, "exports", "batch.parquet");
  const manifest = await exportTrajectories(readRecords(dir), { format: "verl", out: batch, minGroupSize: 2, groupRows: 2, experiment: "verl-suite", iteration: 0 });
  expect(manifest.group_dataset).toMatchObject({ rows: 4, samples_per_row: 2, short_groups: 0 });
  expect(manifest.images).toMatchObject({ refs: 3, blobs_written: 2, blobs_missing: 0 });
  const rollouts: { [id: string]: unknown } = {};
  for (const id of ["r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"]) rollouts[id] = await trajectoryOf(readRecords(dir), id);
  const experiment = suiteExperiment();
  const iterations = [0, 1, 29, 30, 39];
  const setup = {
    batch,
    groups: manifest.group_dataset!.path,
    rollouts,
    images: { [sha(PNGS.red)]: PNGS.red, [sha(PNGS.blue)]: PNGS.blue },
    image_order: [sha(PNGS.red), sha(PNGS.blue), sha(PNGS.red)],
    command: verlCommand(experiment, 0, { taskCount: 4 }).slice(3),
    commands: Object.fromEntries(iterations.map((i) => [i, verlCommand(experiment, i, { taskCount: 4 }).slice(3)])),
    docs: join(ROOT, "docs", "verl.md"),
  };
  const setupPath = join(scratch.dir, "setup.json");
  writeFileSync(setupPath, JSON.stringify(setup));

  // Online: the proxy, whose own upstream must serve nothing here, and a simulator playing
  // veRL's inference server at an address veRL's load balancer hands the loop, its weights
  // labelled with their version as vLLM labels them. Each weight sync restarts that server,
  // same address, other weights, the next version; `alive` keeps when each instance served.
  const h = await startProxyHarness({ sim: { script: SCRIPT } });
  // The same in token-in mode (docs/token-in.md): online token-in against veRL's server.
  const ti = await startProxyHarness({ sim: { script: SCRIPT }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3" }) } });
  const port = await freePort();
  const servers: StartedPolicySimulator[] = [];
  const alive: { from: number; to: number }[] = [];
  const startServer = async () => {
    const version = servers.length;
    const server = await startPolicySimulator({ seed: 11 + version, script: SCRIPT, hostname: "127.0.0.1", port });
    const labelled = await fetch(`${server.url}/update_weight_version`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ new_version: String(version) }) });
    expect(labelled.status).toBe(200);
    servers.push(server);
    alive.push({ from: Date.now(), to: Infinity });
  };
  await startServer();
  const weights = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch() {
      await servers.at(-1)!.stop();
      alive.at(-1)!.to = Date.now();
      await startServer();
      return new Response("{}", { headers: { "content-type": "application/json" } });
    },
  });
  const onlineOut = join(scratch.dir, "online.json");
  // veRL's TensorBoard tracker (the rendered train command's default logger) writes under the
  // working directory unless TENSORBOARD_DIR says otherwise: the suite must leave the checkout clean.
  const strayTensorboard = join(ROOT, "integrations", "verl", "tensorboard_log");
  rmSync(strayTensorboard, { recursive: true, force: true });
  try {
    const { code, out } = await runSuite(["tests.test_units", "tests.test_replay", "tests.test_config", "tests.test_online"], {
      FORGE_TEST_SETUP: setupPath,
      FORGE_TEST_PROXY_URL: h.proxy.url,
      FORGE_TEST_TOKEN_IN_PROXY_URL: ti.proxy.url,
      FORGE_ADMIN_TOKEN: h.adminToken,
      FORGE_TEST_VERL_SERVER: `127.0.0.1:${port}`,
      FORGE_TEST_WEIGHTS_URL: `http://127.0.0.1:${weights.port}/`,
      FORGE_TEST_ONLINE_OUT: onlineOut,
    });
    expect(out).not.toContain("skipped");
    expect(out).toMatch(/veRL suite \(veRL 0\.9\.1\): \d+ cases checked/);
    console.log(out.match(/veRL suite.*$/m)![0]);
    expect(out).toContain("OK");
    expect(code).toBe(0);
    expect(existsSync(strayTensorboard)).toBe(false);
    const online = JSON.parse(await Bun.file(onlineOut).text());
    await checkOnline(h, { ...online, steps: online.steps.filter((s: OnlineStep) => !s.token_in) }, servers, alive);
    await checkTokenIn(ti, online.steps.find((s: OnlineStep) => s.token_in)!, servers, alive);
  } finally {
    weights.stop(true);
    for (const s of servers) await s.stop().catch(() => {});
    await h.close();
    await ti.close();
  }
}, 900_000);

type OnlineStep = { global_steps: number; validate: boolean; legacy?: boolean; token_in?: boolean; uids: string[]; outputs: { rollout_id: string; sample_id: string; min_global_steps: number; max_global_steps: number }[] };

/**
 * What the proxy recorded against what served each call: every call of every rollout the loop
 * ran was served by veRL's server (never the proxy's own upstream) and is recorded with the
 * version of the server instance that answered it (the weights' label, not a step count); the
 * validation pass is labelled, served by the weights its step trained and left out of the
 * training export; the timed-out rollout was cancelled and nothing of it is recorded after its
 * result.
 */
/**
 * The token-in step: every rollout one sample with 0 drift tokens although the harness dropped
 * its reasoning, every call token-in, served by veRL's server (the version it reported) with
 * veRL's sampling; the proxy's own upstream served nothing.
 */
async function checkTokenIn(ti: Awaited<ReturnType<typeof startProxyHarness>>, step: OnlineStep, servers: StartedPolicySimulator[], alive: { from: number; to: number }[]) {
  expect(ti.sims[0]!.samples).toHaveLength(0);
  const registered = (await ti.records()).flatMap((r) => (r.kind.case === "rollout" ? [r.kind.value] : []));
  expect(registered.filter((r) => step.uids.includes(r.group))).toHaveLength(4);
  const calls = await ti.calls();
  expect(calls.length).toBeGreaterThan(4);
  for (const call of calls) {
    const server = alive.findIndex((w) => call.startUnixMs >= w.from && call.startUnixMs <= w.to);
    expect([call.tokenMode, call.upstream, call.servedWeightVersion, call.policyVersion, call.policyVersionMismatch]).toEqual([TokenMode.TOKEN_IN, servers[server]!.url, "2", 2, ""]);
    // veRL's replicas here serve vLLM's generate route, which --token-in-route auto takes: the sampling is in its sampling_params.
    expect(JSON.parse(new TextDecoder().decode(call.engineRequest))).toMatchObject({ output_mode: "tokens", sampling_params: { temperature: 0.7, top_p: 0.95 } });
  }
  for (const r of registered) {
    const t = (await trajectoryOf(readRecords(ti.dataDir), r.rolloutId, { thinkOpen: 151667, thinkClose: 151668, thinkTrailing: [198, 271] }))!;
    expect({ samples: t.samples.length, drift: t.stats.drift_tokens, fork: t.stats.fork }).toEqual({ samples: 1, drift: 0, fork: 0 });
  }
  expect(step.outputs.map((o) => o.min_global_steps)).toEqual([2, 2, 2, 2]);
}

async function checkOnline(h: Awaited<ReturnType<typeof startProxyHarness>>, online: { steps: OnlineStep[]; hang_log: string }, servers: StartedPolicySimulator[], alive: { from: number; to: number }[]) {
  expect(h.sims[0]!.samples).toHaveLength(0);
  const records = await h.records();
  const registered = records.flatMap((r) => (r.kind.case === "rollout" ? [r.kind.value] : []));
  const results = new Map(records.flatMap((r) => (r.kind.case === "rolloutResult" ? [[r.kind.value.rolloutId, r.kind.value] as const] : [])));
  // 3 V1 training steps x 2 rows x rollout.n 2, the validation pass's 2 rows x val_kwargs.n 1,
  // and the legacy trainer's step (4) and validation pass (2).
  expect(registered).toHaveLength(20);
  const calls = await h.calls();
  const served = (at: number) => alive.findIndex((w) => at >= w.from && at <= w.to);
  const decoder = new TextDecoder();
  for (const call of calls) {
    const server = served(call.startUnixMs);
    expect(server).toBeGreaterThanOrEqual(0);
    expect(call.upstream).toBe(servers[server]!.url);
    expect(call.policyVersion).toBe(server);
    // An answered call carries the label its server reported; one aborted by the cancel has none.
    if (call.status === CallStatus.OK) expect([call.servedWeightVersion, call.policyVersionMismatch]).toEqual([String(server), ""]);
  }
  // Each server instance answered exactly the calls recorded in its window.
  // (Samples of the token-in proxy's rollouts, checked in checkTokenIn, are left aside.)
  const ids = new Set(registered.map((r) => r.rolloutId));
  for (const [i, server] of servers.entries()) expect(calls.filter((c) => served(c.startUnixMs) === i).length).toBe(server.samples.filter((x) => ids.has(x.rollout ?? "")).length);
  // The version a step's outputs carry is that of the weights serving it: 0, then 1 after the
  // first sync (the validation pass and step 2), then 2 (step 3 and the legacy trainer's step
  // and validation pass, whose global_steps 4 is only in meta_info).
  const expected = [0, 1, 1, 2, 2, 2];
  expect(online.steps).toHaveLength(expected.length);
  for (const [i, step] of online.steps.entries()) {
    const mine = registered.filter((r) => step.uids.includes(r.group));
    expect(mine.length).toBe(step.validate ? 2 : 4);
    for (const r of mine) {
      expect(r.labels["openforge.dev/validation"]).toBe(step.validate ? "true" : undefined);
      // Read from veRL's server actor (V1 steps) or, with no actor, vLLM's label (legacy steps here).
      expect(r.labels["verl.version_source"]).toBe(step.legacy ? "weight_info" : "actor");
      for (const call of calls.filter((c) => c.rolloutId === r.rolloutId)) {
        expect(call.policyVersion).toBe(expected[i]!);
        const sent = JSON.parse(decoder.decode(call.upstreamRequestBody.length > 0 ? call.upstreamRequestBody : call.upstreamRequestPatch));
        // veRL's rollout config (val_kwargs in the validation pass), not the harness's 0.1
        expect(sent).toMatchObject(step.validate ? { temperature: 0.3, top_p: 0.8 } : { temperature: 0.7, top_p: 0.95, top_k: -1 });
      }
    }
    for (const o of step.outputs) {
      const t = (await trajectoryOf(readRecords(h.dataDir), o.rollout_id))!;
      expect(t.samples.map((x) => x.sample_id)).toContain(o.sample_id);
      expect([o.min_global_steps, o.max_global_steps]).toEqual([expected[i]!, expected[i]!]);
    }
  }
  // Validation rollouts are not training data.
  const validation = new Set(registered.filter((r) => r.labels["openforge.dev/validation"] === "true").map((r) => r.rolloutId));
  expect(validation.size).toBe(4);
  const out = join(scratch.dir, "online-export.parquet");
  const manifest = await exportTrajectories(readRecords(h.dataDir), { format: "verl", out, experiment: "verl-online" });
  expect(manifest.filter.validation_rollouts).toBe(4);
  const rows = (await Bun.file(out.replace(/\.parquet$/, ".jsonl")).text()).trim().split("\n").map((l) => JSON.parse(l) as { rollout_id: string });
  expect(rows.length).toBeGreaterThan(0);
  for (const row of rows) expect(validation.has(row.rollout_id)).toBe(false);
  // The timed-out session: cancelled (status timeout), and no call of it after its result.
  const cancelled = registered.filter((r) => results.get(r.rolloutId)?.metrics["forge.cancelled"] === 1);
  expect(cancelled).toHaveLength(1);
  const id = cancelled[0]!.rolloutId;
  expect(results.get(id)!.status).toBe(RolloutStatus.TIMEOUT);
  const order = records.flatMap((r) => ((r.kind.case === "modelCall" || r.kind.case === "rolloutResult") && r.kind.value.rolloutId === id ? [r.kind.case] : []));
  expect(order.at(-1)).toBe("rolloutResult");
  expect(order.filter((k) => k === "rolloutResult")).toHaveLength(1);
  // Whatever the orphan tried after the cancel was refused (409), never served.
  const cancelledAt = results.get(id)!.finishedUnixMs / 1000;
  for (const line of online.hang_log.trim().split("\n").filter(Boolean)) {
    const [at, status] = line.split(" ");
    if (Number(at) > cancelledAt) expect(status).not.toBe("200");
  }
  const infra = registered.filter((r) => results.get(r.rolloutId)?.status === RolloutStatus.INFRA_ERROR);
  expect(infra).toHaveLength(1);
}

const SCRIPT = {
  thinking: true,
  tasks: [{ name: "hello", match: "hello.txt", steps: [{ think: "Look first.", bash: "ls" }, { think: "Write.", bash: "echo hi > hello.txt" }, { finish: "done" }] }],
};

async function freePort(): Promise<number> {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const port = probe.port!;
  probe.stop(true);
  return port;
}
