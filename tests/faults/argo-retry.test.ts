/**
 * Retries of a rollout pod, run as Argo runs them (the four containers as processes, `--retry`
 * = Argo's {{retries}}) against the real recording proxy and the policy simulator, with the
 * quickstart's forge-react harness:
 *
 * - a pod lost after its harness ran (evicted before verify/finish) is retried: the new try
 *   registers its own id, the lost try is finished as superseded (infra_error, excluded from
 *   training), and the rollout ends ok;
 * - a `main` container run twice (its first answer lost) reports the same verdict again: ok;
 * - a pod that failed after the rollout was finished is not run again;
 * - a harness whose launcher fails is an infra_error the template retries (exit 75);
 * - the retry expression retries everything but main's own final failures.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { readRecords } from "../../records/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { trajectoryOf } from "../../trajectories/index.ts";
import { INFRA_EXIT_CODE, ROLLOUT_RETRY_EXPRESSION } from "../../workflows/argo/workflow.ts";

setDefaultTimeout(120_000);
const ROOT = join(import.meta.dir, "..", "..");
const QUICKSTART = join(ROOT, "examples", "quickstart", "experiment.yaml");
const TOKEN = `admin-${crypto.randomUUID()}`;

let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let dataDir: string;

beforeAll(async () => {
  sim = await startPolicySimulator({ seed: 7, script: join(ROOT, "examples", "policies", "quickstart.yaml"), model: "forge-sim/qwen3-sim" });
  dataDir = mkdtempSync(join(tmpdir(), "forge-retry-data-"));
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir, mode: "train", adminToken: TOKEN, healthIntervalMs: 0 });
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

/** One pod: fresh volumes; `until` stops after that container (the pod was lost there). */
async function pod(options: { experiment?: string; run: string; task: string; retry: number; until?: "register" | "harness" | "verify" }) {
  const root = mkdtempSync(join(tmpdir(), "forge-pod-"));
  const volume = (name: string) => {
    mkdirSync(join(root, name));
    return join(root, name);
  };
  const [workspace, state, harnessOut, verdict, scratch, control] = [volume("workspace"), volume("forge"), volume("harness-out"), volume("verdict"), volume("verify"), volume("control")];
  const experiment = options.experiment ?? QUICKSTART;
  const ids = ["--run", options.run, "--task", options.task, "--iteration", "0", "--attempt", "0", "--retry", String(options.retry)];
  const finishArgs = ["finish", "--experiment", experiment, "--proxy", proxy.url, "--harness-out", harnessOut, "--verdict", verdict, "--control", control, ...ids];
  const out = { register: await step(["register", "--experiment", experiment, "--proxy", proxy.url, "--workspace", workspace, "--state", state, "--control", control, ...ids]) } as Record<string, Awaited<ReturnType<typeof step>>>;
  expect(out.register!.code).toBe(0);
  const result = () => JSON.parse(readFileSync(join(control, "result.json"), "utf8"));
  if (options.until === "register") return { out, result, finishArgs };
  out.harness = await step(["harness", "--state", state, "--workspace", workspace, "--harness-out", harnessOut, "--timeout-seconds", "60"]);
  expect(out.harness.code).toBe(0);
  if (options.until === "harness") return { out, result, finishArgs };
  out.verify = await step(["verify", "--experiment", experiment, "--workspace", workspace, "--harness-out", harnessOut, "--verdict", verdict, "--scratch", scratch, "--task", options.task]);
  expect(out.verify.code).toBe(0);
  if (options.until === "verify") return { out, result, finishArgs };
  out.finish = await step(finishArgs);
  return { out, result, finishArgs };
}

async function info(id: string) {
  const response = await fetch(`${proxy.url}/control/rollouts/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: response.status, body: (await response.json()) as { rollout: Record<string, unknown>; result?: { status: string; reward?: number; error?: string }; calls: number } };
}

describe("a retried rollout pod", () => {
  test("lost after the harness ran, retried: the new try registers and finishes ok; the lost try is superseded, not scored", async () => {
    const first = await pod({ run: "wf-evict", task: "hello-file", retry: 0, until: "harness" });
    expect(first.out.register!.stdout).toContain("registered wf-evict.i0.hello-file.0 (task hello-file, try 0");
    const lost = await info("wf-evict.i0.hello-file.0");
    expect(lost.body.calls).toBeGreaterThan(0); // the harness had made its model calls
    expect(lost.body.result).toBeUndefined();

    // Argo's retry: the same pod spec with {{retries}} = 1.
    const second = await pod({ run: "wf-evict", task: "hello-file", retry: 1 });
    expect(second.out.finish!.code).toBe(0);
    expect(second.result()).toMatchObject({ rollout_id: "wf-evict.i0.hello-file.0.r1", task_id: "hello-file", status: "ok" });

    const superseded = await info("wf-evict.i0.hello-file.0");
    expect(superseded.body.result).toMatchObject({ status: "ROLLOUT_STATUS_INFRA_ERROR" });
    expect(superseded.body.result!.error).toContain('superseded by retry "wf-evict.i0.hello-file.0.r1"');
    const retried = await info("wf-evict.i0.hello-file.0.r1");
    expect(retried.body.rollout).toMatchObject({ retry_of: "wf-evict.i0.hello-file.0", retry: 1, group: "hello-file@i0" }); // attempt 0: JSON omits the default
    expect(retried.body.result).toMatchObject({ status: "ROLLOUT_STATUS_OK" });
    expect(retried.body.calls).toBeGreaterThan(0);

    // The lost try's calls never reach training: its result is an infra_error; the retry's count.
    const lostTrajectory = await trajectoryOf(readRecords(dataDir), "wf-evict.i0.hello-file.0");
    expect(lostTrajectory).toMatchObject({ valid: false, excluded: "infra_error" });
    expect(await trajectoryOf(readRecords(dataDir), "wf-evict.i0.hello-file.0.r1")).toMatchObject({ valid: true });
  });

  test("the main container run twice (its first answer lost): the same verdict again is accepted, exit 0", async () => {
    const done = await pod({ run: "wf-twice", task: "shout", retry: 0 });
    expect(done.out.finish!.code).toBe(0);
    const again = await step(done.finishArgs);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('"rollout_id":"wf-twice.i0.shout.0"');
    // A different verdict for a finished rollout is refused.
    const response = await fetch(`${proxy.url}/control/rollouts/wf-twice.i0.shout.0/finish`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ reward: 0.123, status: "failed" }),
    });
    expect(response.status).toBe(409);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("rollout_finished");
  });

  test("a pod that failed after its rollout finished is not run again: the retry reports the finished try's result", async () => {
    const done = await pod({ run: "wf-after", task: "sum-numbers", retry: 0 });
    expect(done.out.finish!.code).toBe(0);
    const earlier = done.result();
    const retry = await pod({ run: "wf-after", task: "sum-numbers", retry: 1 });
    expect(retry.out.register!.stdout).toContain("already finished in try wf-after.i0.sum-numbers.0");
    expect(retry.out.harness!.stdout).toContain("not run");
    expect(retry.out.finish!.code).toBe(0);
    expect(retry.result()).toEqual(earlier);
    expect((await info("wf-after.i0.sum-numbers.0.r1")).status).toBe(404); // never registered
  });

  test("a register whose answer was lost (409 for its own id) is an infrastructure error: main exits 75, the next try runs", async () => {
    const first = await pod({ run: "wf-409", task: "capital", retry: 0, until: "register" });
    expect(first.out.register!.code).toBe(0);
    const again = await pod({ run: "wf-409", task: "capital", retry: 0 });
    expect(again.out.register!.stderr).toContain("already registered");
    expect(again.out.finish!.code).toBe(INFRA_EXIT_CODE);
    const next = await pod({ run: "wf-409", task: "capital", retry: 1 });
    expect(next.out.finish!.code).toBe(0);
    expect(next.result()).toMatchObject({ rollout_id: "wf-409.i0.capital.0.r1" });
  });

  test("a harness whose launcher fails (binary missing) is finished as infra_error and main exits 75 for a retry", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-launch-"));
    const experiment = join(dir, "experiment.yaml");
    writeFileSync(
      experiment,
      "apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: {name: launch}\nspec:\n  policy: {model: m}\n  harness: {name: command, command: [no-such-harness-binary, run]}\n  environment: {tasks: [{id: t, instruction: x, test: 'true'}]}\n",
    );
    const missing = await pod({ experiment, run: "wf-launch", task: "t", retry: 0 });
    expect(missing.out.verify!.stdout).toBe(""); // the verifier did not run
    expect(missing.out.finish!.code).toBe(INFRA_EXIT_CODE);
    expect(missing.result()).toMatchObject({ status: "infra_error", reward: 0, passed: false });
    expect((await info("wf-launch.i0.t.0")).body.result).toMatchObject({ status: "ROLLOUT_STATUS_INFRA_ERROR", error: expect.stringContaining("harness did not start") });

    writeFileSync(experiment, readFileSync(experiment, "utf8").replace("[no-such-harness-binary, run]", "[bash, -c, 'exit 127']"));
    const exit127 = await pod({ experiment, run: "wf-launch", task: "t", retry: 1 });
    expect(exit127.out.finish!.code).toBe(INFRA_EXIT_CODE);
    expect((await info("wf-launch.i0.t.0.r1")).body.result).toMatchObject({ status: "ROLLOUT_STATUS_INFRA_ERROR", error: expect.stringContaining("launcher failed with exit 127") });
  });
});

test("the retry expression: everything but main's own final failures (1, 2) is retried", () => {
  // The expression uses only comparisons and &&, the same in expr-lang (Argo) and JavaScript.
  const retried = (exitCode: string, status = "Failed") => new Function("lastRetry", `return ${ROLLOUT_RETRY_EXPRESSION}`)({ exitCode, status }) as boolean;
  expect(retried(String(INFRA_EXIT_CODE))).toBe(true); // main: infrastructure error
  expect(retried("-1")).toBe(true); // evicted: Failed with no exit code
  expect(retried("64")).toBe(true); // a sibling container failed or was OOM-killed: the emissary's code
  expect(retried("137")).toBe(true); // main itself killed
  expect(retried("0", "Error")).toBe(true); // outputs not saved (wait container), node lost
  expect(retried("1")).toBe(false); // main: an error a retry cannot fix
  expect(retried("2")).toBe(false); // bad usage (a render bug)
});
