/**
 * An iteration that lost rollouts still trains: pods of the quickstart tasks (k = 2) run as Argo
 * runs them against the real proxy, one rollout lost after its harness ran (its retries
 * exhausted) and one task's rollouts lost entirely; then the rendered export step and the admit
 * step. Groups short of k are dropped and counted, training goes on with the complete ones when
 * at least `training.minGroupFraction` of the groups survived, and fails clearly below it.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { parseExperimentFile } from "../../schemas/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { admitGroups } from "../../workflows/argo/pod.ts";
import { exportArgs } from "../../workflows/argo/workflow.ts";

setDefaultTimeout(240_000);
const ROOT = join(import.meta.dir, "..", "..");
const TOKEN = `admin-${crypto.randomUUID()}`;
let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let dataDir: string;
let dir: string;

beforeAll(async () => {
  sim = await startPolicySimulator({ seed: 7, script: join(ROOT, "examples", "policies", "quickstart.yaml"), model: "forge-sim/qwen3-sim" });
  dir = mkdtempSync(join(tmpdir(), "forge-lost-"));
  dataDir = join(dir, "data");
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir, mode: "train", adminToken: TOKEN, healthIntervalMs: 0 });
});
afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
});

function experimentFile(name: string, minGroupFraction: number): string {
  const path = join(dir, `${name}.yaml`);
  writeFileSync(
    path,
    [
      "apiVersion: openforge.dev/v1",
      "kind: Experiment",
      "metadata: {name: lost}",
      "spec:",
      `  policy: {model: forge-sim/qwen3-sim, mode: train, upstreams: ["${sim.url}"]}`,
      "  harness: {name: forge-react, options: {maxTurns: 8}}",
      `  environment: {tasks: ${join(ROOT, "examples", "quickstart", "tasks")}}`,
      "  rollouts: {k: 2}",
      `  training: {gpus: 1, minGroupFraction: ${minGroupFraction}}`,
    ].join("\n"),
  );
  return path;
}

async function step(args: string[]) {
  // No cluster: the admit step only annotates the workflow inside one.
  const env = { ...process.env, FORGE_ADMIN_TOKEN: TOKEN, KUBECONFIG: join(dir, "no-kubeconfig"), KUBERNETES_SERVICE_HOST: "" };
  const run = Bun.spawn(["bun", "workflows/argo/step.ts", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe", env });
  const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  return { stdout, stderr, code };
}

/** One rollout pod; `lost` stops it after the harness (evicted, retries exhausted). */
async function pod(experiment: string, task: string, attempt: number, lost = false) {
  const root = mkdtempSync(join(tmpdir(), "forge-pod-"));
  const volume = (name: string) => {
    mkdirSync(join(root, name));
    return join(root, name);
  };
  const [workspace, state, harnessOut, verdict, scratch, control] = [volume("workspace"), volume("forge"), volume("harness-out"), volume("verdict"), volume("verify"), volume("control")];
  const ids = ["--run", "wf-lost", "--task", task, "--iteration", "0", "--attempt", String(attempt)];
  expect((await step(["register", "--experiment", experiment, "--proxy", proxy.url, "--workspace", workspace, "--state", state, "--control", control, ...ids])).code).toBe(0);
  expect((await step(["harness", "--state", state, "--workspace", workspace, "--harness-out", harnessOut, "--timeout-seconds", "60"])).code).toBe(0);
  if (lost) return;
  expect((await step(["verify", "--experiment", experiment, "--workspace", workspace, "--harness-out", harnessOut, "--verdict", verdict, "--scratch", scratch, "--task", task])).code).toBe(0);
  expect((await step(["finish", "--experiment", experiment, "--proxy", proxy.url, "--harness-out", harnessOut, "--verdict", verdict, "--control", control, ...ids])).code).toBe(0);
}

describe("lost rollouts", () => {
  test("groups short of k are dropped and counted; the iteration trains on the rest, or fails below the threshold", async () => {
    const experiment = experimentFile("half", 0.5);
    // capital, fix-greeting, hello-file complete; shout loses one of two; sum-numbers loses both (never registered).
    await Promise.all([
      ...["capital", "fix-greeting", "hello-file"].flatMap((task) => [pod(experiment, task, 0), pod(experiment, task, 1)]),
      pod(experiment, "shout", 0),
      pod(experiment, "shout", 1, true),
    ]);

    // The rendered export step, /data → this proxy's data directory.
    const out = join(dir, "exports", "iteration-0", "batch.parquet");
    const args = exportArgs(parseExperimentFile(experiment), 0).map((a) => (a === "/data" ? dataDir : a));
    args.splice(args.indexOf("--out") + 1, 1, out);
    const exported = Bun.spawnSync(["bun", "bin/forge.ts", "export", ...args, "--json"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    expect(exported.exitCode).toBe(0);
    const manifest = JSON.parse(exported.stdout.toString());
    // shout's group (one valid rollout) falls below --min-group-size 2; sum-numbers has no group at all.
    expect(manifest.group_dataset).toMatchObject({ rows: 3, samples_per_row: 2 });
    expect(manifest.groups).toMatchObject({ seen: 4, kept: 3 });
    expect(manifest.rollouts).toMatchObject({ seen: 8, valid: 7, excluded: { "unfinished (no RolloutResult)": 1 } }); // the lost shout rollout

    const admit = (file: string) =>
      step(["admit", "--experiment", file, "--batch", out, "--iteration", "0", "--workflow", "wf-lost", "--namespace", "n", "--out", join(dir, "train-batch-size")]);
    const ok = await admit(experiment);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({ iteration: 0, groups: 5, complete: 3, short: 1, lost: 1, train_batch_size: 3, left_out_for_gpus: 0 });
    expect(await Bun.file(join(dir, "train-batch-size")).text()).toBe("3");
    // The train step's init container accepts the batch it was given.
    const verl = await step(["verl-config", "--out", join(dirname(out), "verl"), "--batch", out, "--experiment-name", "lost", "--train-batch-size", "3"]);
    expect(verl.code).toBe(0);

    // Below the threshold the iteration fails, saying what was lost and what to change.
    const strict = await admit(experimentFile("strict", 0.8));
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain("3 of 5 groups complete (1 short of k=2, 1 with no sample");
    expect(strict.stderr).toContain("at least 4 are needed (training.minGroupFraction is 0.8)");
  });
});

test("admitGroups: the batch divides over the GPUs, an override must be met, and the counts add up", () => {
  const base = { iteration: 2, groups: 10, short: 1, k: 4, minGroupFraction: 0.5 };
  expect(admitGroups({ ...base, complete: 9, gpus: 1 }).train_batch_size).toBe(9);
  // 9 × 4 = 36 samples over 8 GPUs does not divide; 8 × 4 = 32 does: one complete group is left out, counted.
  expect(admitGroups({ ...base, complete: 9, gpus: 8 })).toMatchObject({ train_batch_size: 8, left_out_for_gpus: 1, lost: 0 });
  expect(admitGroups({ ...base, complete: 6, gpus: 1, trainBatchSize: 6 }).train_batch_size).toBe(6);
  expect(() => admitGroups({ ...base, complete: 6, gpus: 1, trainBatchSize: 8 })).toThrow(/at least 8 are needed \(training.overrides sets data.train_batch_size=8\)/);
  expect(() => admitGroups({ ...base, complete: 4, gpus: 1 })).toThrow(/4 of 10 groups complete \(1 short of k=4, 5 with no sample/);
  expect(() => admitGroups({ ...base, complete: 5, gpus: 3, k: 1 })).toThrow(/no batch of at least 5 groups/);
});
