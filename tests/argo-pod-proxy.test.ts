/**
 * The rollout pod's three phases (`bun workflows/argo/step.ts register | harness | verify`) run
 * as the pod runs them, against the real recording proxy and the policy simulator, on a
 * quickstart task with the built-in forge-react harness: the proxy ends up holding the
 * rollout's model calls and the reward the verifier reported.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPolicySimulator, startProxy } from "../proxy/index.ts";

setDefaultTimeout(60_000);
const ROOT = join(import.meta.dir, "..");
const QUICKSTART = join(ROOT, "examples", "quickstart", "experiment.yaml");
const TOKEN = `admin-${crypto.randomUUID()}`;

let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;

beforeAll(async () => {
  sim = await startPolicySimulator({ seed: 7, script: join(ROOT, "examples", "policies", "quickstart.yaml"), model: "forge-sim/qwen3-sim" });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: mkdtempSync(join(tmpdir(), "forge-argo-data-")), mode: "train", adminToken: TOKEN });
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

test("register → forge-react harness → verify through the real proxy records calls and the reward", async () => {
  const pod = mkdtempSync(join(tmpdir(), "forge-pod-"));
  const [workspace, state] = [join(pod, "workspace"), join(pod, "forge")];
  mkdirSync(workspace);
  mkdirSync(state);
  const ids = ["--run", "wf-test", "--task", "hello-file", "--iteration", "0", "--attempt", "0"];
  const common = ["--experiment", QUICKSTART, "--proxy", proxy.url, "--workspace", workspace, "--state", state, ...ids];
  const register = await step(["register", ...common]);
  expect(register.stderr).toBe("");
  expect(register.code).toBe(0);
  const harness = await step(["harness", "--state", state, "--workspace", workspace, "--timeout-seconds", "60"]);
  expect(harness.code).toBe(0);
  const verify = await step(["verify", ...common]);
  expect(verify.code).toBe(0);
  const result = JSON.parse(readFileSync(join(state, "result.json"), "utf8"));
  expect(result).toMatchObject({ rollout_id: "wf-test.i0.hello-file.0", task_id: "hello-file" });
  expect(["ok", "failed"]).toContain(result.status);

  const response = await fetch(`${proxy.url}/control/rollouts/${result.rollout_id}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(response.status).toBe(200);
  const stored = (await response.json()) as { rollout: Record<string, unknown>; result?: { reward?: number; status: string; verifierOutput?: string }; calls: number };
  expect(stored.rollout).toMatchObject({ experiment: "quickstart", taskId: "hello-file", group: "hello-file@i0", harness: "forge-react" });
  expect(stored.calls).toBeGreaterThan(0);
  // Records as protobuf JSON: enum names, and a reward of 0 omitted as the default.
  expect(stored.result?.status).toBe(`ROLLOUT_STATUS_${result.status.toUpperCase()}`);
  expect(stored.result?.reward ?? 0).toBe(result.reward);
  expect(stored.result?.verifierOutput).toContain(`[reward ${result.reward} from`);
});
