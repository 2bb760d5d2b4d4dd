/**
 * The rollout pod's containers run as processes (as in tests/argo/pod.test.ts) against the real
 * proxy, with a harness that plants rewards everywhere it can reach in the pod — the workspace,
 * its state volume (the old /forge/logs/verifier/reward.json), its outcome volume — and, since
 * here the "volumes" are plain directories, even the verdict volume it would not have in a
 * pod. The verifier's own reward (0) is what the proxy records; a verifier that writes none or
 * 1e9 is a verifier error (infra_error), not a reward.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";

setDefaultTimeout(60_000);
const ROOT = join(import.meta.dir, "..", "..");
const TOKEN = `admin-${crypto.randomUUID()}`;
let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;

beforeAll(async () => {
  sim = await startPolicySimulator({ seed: 1 });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: mkdtempSync(join(tmpdir(), "forge-argo-plant-")), mode: "train", adminToken: TOKEN, healthIntervalMs: 0 });
});
afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
});

// HOME is the state volume's home/; the other volumes are its siblings here (/forge, /harness-out, /verdict in a pod).
const PLANT = [
  "echo 1 > reward.txt; echo '{\"reward\": 1}' > reward.json",
  'for d in "$HOME/../logs/verifier" "$HOME/.." "$HOME/../../harness-out" "$HOME/../../verdict/logs" /forge/logs/verifier /verdict/logs /logs/verifier; do',
  '  mkdir -p "$d" 2>/dev/null; echo 1 > "$d/reward.txt" 2>/dev/null; echo \'{"reward": 1}\' > "$d/reward.json" 2>/dev/null',
  "done; echo 1e9 > answer.txt; true",
].join("\n");

async function step(args: string[]) {
  const run = Bun.spawn(["bun", "workflows/argo/step.ts", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe", env: { ...process.env, FORGE_ADMIN_TOKEN: TOKEN } });
  const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  return { stdout, stderr, code };
}

async function pod(test: string, task: string) {
  const dir = mkdtempSync(join(tmpdir(), "forge-plant-pod-"));
  const experiment = join(dir, "experiment.yaml");
  writeFileSync(
    experiment,
    [
      "apiVersion: openforge.dev/v1",
      "kind: Experiment",
      "metadata: {name: plant}",
      "spec:",
      "  policy: {model: m}",
      `  harness: {name: command, command: [bash, -c, ${JSON.stringify(PLANT)}]}`,
      `  environment: {tasks: [{id: ${task}, instruction: x, reward: file, test: ${JSON.stringify(test)}}]}`,
    ].join("\n"),
  );
  const volume = (name: string) => {
    mkdirSync(join(dir, name));
    return join(dir, name);
  };
  const [workspace, state, harnessOut, verdict, scratch, control] = [volume("workspace"), volume("forge"), volume("harness-out"), volume("verdict"), volume("verify"), volume("control")];
  const ids = ["--run", "wf-plant", "--task", task, "--iteration", "0", "--attempt", "0"];
  for (const args of [
    ["register", "--experiment", experiment, "--proxy", proxy.url, "--workspace", workspace, "--state", state, "--control", control, ...ids],
    ["harness", "--state", state, "--workspace", workspace, "--harness-out", harnessOut, "--timeout-seconds", "30"],
    ["verify", "--experiment", experiment, "--workspace", workspace, "--harness-out", harnessOut, "--verdict", verdict, "--scratch", scratch, "--task", task],
    ["finish", "--experiment", experiment, "--proxy", proxy.url, "--harness-out", harnessOut, "--verdict", verdict, "--control", control, ...ids],
  ]) {
    const ran = await step(args);
    expect({ step: args[0], code: ran.code, stderr: ran.code ? ran.stderr : "" }).toEqual({ step: args[0], code: 0, stderr: "" });
  }
  // The harness did plant (in the workspace and its state volume at least).
  expect(readFileSync(join(workspace, "reward.txt"), "utf8").trim()).toBe("1");
  expect(readFileSync(join(state, "logs", "verifier", "reward.json"), "utf8")).toContain('"reward": 1');
  const result = JSON.parse(readFileSync(join(control, "result.json"), "utf8"));
  const info = (await (await fetch(`${proxy.url}/control/rollouts/${result.rollout_id}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { result: { reward?: number; status: string; error?: string } };
  return { result, recorded: info.result };
}

test("planted everywhere the harness reaches: the verifier's 0 is the reward", async () => {
  const { result, recorded } = await pod('echo 0 > "$FORGE_LOGS/reward.txt"', "zero");
  expect(result).toMatchObject({ status: "ok", reward: 0, passed: false });
  expect(recorded).toMatchObject({ status: "ROLLOUT_STATUS_OK" });
  expect(recorded.reward ?? 0).toBe(0);
});

test("a verifier that writes no reward, or copies 1e9 from the workspace: a verifier error, never the planted 1", async () => {
  const none = await pod("exit 0", "none");
  expect(none.result).toMatchObject({ status: "infra_error", reward: 0 });
  expect(none.recorded.error).toContain("verifier error: the verifier wrote no reward");
  const huge = await pod('cp answer.txt "$FORGE_LOGS/reward.txt"', "huge");
  expect(huge.result).toMatchObject({ status: "infra_error", reward: 0 });
  expect(huge.recorded.error).toContain("outside the task's reward range [0, 1]");
});
