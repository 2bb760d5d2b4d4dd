/**
 * The rollout pod's three phases (`bun workflows/argo/step.ts register | harness | verify`) run
 * as the pod runs them, against the real recording proxy and the policy simulator, on a
 * quickstart task with the built-in forge-react harness: the proxy ends up holding the
 * rollout's model calls and the reward the verifier reported.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { groupDatasetPath } from "../../trajectories/index.ts";
import { type ExportManifest } from "../../trajectories/testing.ts";
import { parseExperimentFile } from "../../schemas/index.ts";
import { exportArgs } from "../../workflows/argo/index.ts";

setDefaultTimeout(60_000);
const ROOT = join(import.meta.dir, "..", "..");
const QUICKSTART = join(ROOT, "examples", "quickstart", "experiment.yaml");
const TOKEN = `admin-${crypto.randomUUID()}`;

let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let dataDir: string;

beforeAll(async () => {
  sim = await startPolicySimulator({ seed: 7, script: join(ROOT, "examples", "policies", "quickstart.yaml"), model: "forge-sim/qwen3-sim" });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: (dataDir = mkdtempSync(join(tmpdir(), "forge-argo-data-"))), mode: "train", adminToken: TOKEN });
});
afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
});

async function step(args: string[]) {
  const run = Bun.spawn(["bun", "workflows/argo/step.ts", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe", env: { ...process.env, FORGE_ADMIN_TOKEN: TOKEN } });
  const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  return { stdout, stderr, code };
}

/** The four containers of one rollout pod, as the rendered containerSet runs them; returns result.json. */
async function runPod(options: { run: string; task: string; iteration: number; attempt: number }) {
  const pod = mkdtempSync(join(tmpdir(), "forge-pod-"));
  const volume = (name: string) => {
    mkdirSync(join(pod, name));
    return join(pod, name);
  };
  const [workspace, state, harnessOut, verdict, scratch, control] = [volume("workspace"), volume("forge"), volume("harness-out"), volume("verdict"), volume("verify"), volume("control")];
  const ids = ["--run", options.run, "--task", options.task, "--iteration", String(options.iteration), "--attempt", String(options.attempt)];
  const register = await step(["register", "--experiment", QUICKSTART, "--proxy", proxy.url, "--workspace", workspace, "--state", state, "--control", control, ...ids]);
  expect(register.stderr).toBe("");
  expect(register.code).toBe(0);
  const harness = await step(["harness", "--state", state, "--workspace", workspace, "--harness-out", harnessOut, "--timeout-seconds", "60"]);
  expect(harness.code).toBe(0);
  const verify = await step(["verify", "--experiment", QUICKSTART, "--workspace", workspace, "--harness-out", harnessOut, "--verdict", verdict, "--scratch", scratch, "--task", options.task]);
  expect(verify.code).toBe(0);
  const finish = await step(["finish", "--experiment", QUICKSTART, "--proxy", proxy.url, "--harness-out", harnessOut, "--verdict", verdict, "--control", control, ...ids]);
  expect(finish.code).toBe(0);
  return JSON.parse(readFileSync(join(control, "result.json"), "utf8"));
}

test("register → forge-react harness → verify through the real proxy records calls and the reward", async () => {
  const result = await runPod({ run: "wf-test", task: "hello-file", iteration: 0, attempt: 0 });
  expect(result).toMatchObject({ rollout_id: "wf-test.i0.hello-file.0", task_id: "hello-file" });
  expect(["ok", "failed"]).toContain(result.status);

  const response = await fetch(`${proxy.url}/control/rollouts/${result.rollout_id}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(response.status).toBe(200);
  const stored = (await response.json()) as { rollout: Record<string, unknown>; result?: { reward?: number; status: string; verifier_output?: string }; calls: number };
  expect(stored.rollout).toMatchObject({ rollout_id: result.rollout_id, experiment: "quickstart", task_id: "hello-file", group: "hello-file@i0", harness: "forge-react" });
  expect(stored.calls).toBeGreaterThan(0);
  // Records as protobuf JSON: enum names, and a reward of 0 omitted as the default.
  expect(stored.result?.status).toBe(`ROLLOUT_STATUS_${result.status.toUpperCase()}`);
  expect(stored.result?.reward ?? 0).toBe(result.reward);
  expect(stored.result?.verifier_output).toContain(`[reward ${result.reward} from`);
});

test("the rendered export step, run on what the pods recorded: one GRPO row per group naming k samples, other iterations left out", async () => {
  // k = 2 keeps the test short; the flags are the rendered template's, with /data → the proxy's dir.
  const parsed = parseExperimentFile(QUICKSTART);
  const experiment = { ...parsed, spec: { ...parsed.spec, rollouts: { ...parsed.spec.rollouts, k: 2 } } };
  for (const attempt of [0, 1]) await runPod({ run: "wf-export", task: "shout", iteration: 0, attempt });
  await runPod({ run: "wf-export", task: "shout", iteration: 1, attempt: 0 });
  const out = join(mkdtempSync(join(tmpdir(), "forge-export-")), "iteration-0", "batch.parquet");
  const args = exportArgs(experiment, 0).map((a) => (a === "/data" ? dataDir : a));
  args.splice(args.indexOf("--out") + 1, 1, out);
  expect(args.slice(4, 16)).toEqual(["--group-rows", "2", "--min-group-size", "2", "--max-group-rows", "8", "--max-prompt-length", "8192", "--max-response-length", "16384", "--experiment", "quickstart"]);
  const run = Bun.spawn(["bun", "bin/forge.ts", "export", ...args, "--json"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [stdout, code] = await Promise.all([new Response(run.stdout).text(), run.exited]);
  expect(code).toBe(0);
  const manifest = JSON.parse(stdout) as ExportManifest;
  // The iteration-1 rollout is filtered out; the first test's hello-file rollout is a group of one.
  expect(manifest.filter).toMatchObject({ experiment: "quickstart", iteration: 0 });
  expect(manifest.filter.skipped_rollouts).toBeGreaterThanOrEqual(1);
  expect(manifest.group_dataset).toMatchObject({ path: groupDatasetPath(out), rows: 1, samples_per_row: 2 });
  const rows = readFileSync(groupDatasetPath(out).replace(/\.parquet$/, ".jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ uid: "shout@i0", agent_name: "forge_agent", task_id: "shout" });
  expect(rows[0].extra_info.rollout_ids).toHaveLength(2);
  // The train step's init container accepts a batch of one group and refuses two, from the real manifest.
  const verl = join(dirname(out), "verl");
  const config = (size: string) => step(["verl-config", "--out", verl, "--batch", out, "--experiment-name", "quickstart", "--train-batch-size", size]);
  expect((await config("1")).code).toBe(0);
  const short = await config("2");
  expect(short.code).toBe(1);
  expect(short.stderr).toContain("1 group rows, fewer than data.train_batch_size=2");
});
