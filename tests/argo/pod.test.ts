/**
 * The steps the rendered pods run (`bun workflows/argo/step.ts …`), run here as the pods would
 * run them, against a stand-in for the proxy's control API that follows docs/contracts.md
 * (registration → base URLs and key; finish with reward and status; pause / resume).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { exportTrajectories, groupDatasetPath } from "../../trajectories/index.ts";
import { manifestPath, type ExportManifest } from "../../trajectories/testing.ts";
import { scenarioRecords } from "../../trajectories/testing.ts";
import { summarizeResults } from "../../workflows/argo/pod.ts";

const ROOT = join(import.meta.dir, "..", "..");
const FIXTURE = join(ROOT, "workflows", "argo", "fixtures", "experiment.yaml");
const TOKEN = "admin-secret";
// Each test spawns the steps as processes (as the pods run them); on a loaded 2-core CI box that takes seconds.
setDefaultTimeout(30_000);

type Call = { path: string; auth: string | null; body: any };
let calls: Call[] = [];
let proxy: ReturnType<typeof Bun.serve>;

beforeAll(() => {
  proxy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const body = (await request.json().catch(() => null)) as any;
      calls.push({ path: url.pathname, auth: request.headers.get("authorization"), body });
      if (request.headers.get("authorization") !== `Bearer ${TOKEN}`) return Response.json({ error: "unauthorized" }, { status: 401 });
      if (url.pathname === "/control/rollouts") {
        const id = body.rollout_id;
        const base = `http://${url.host}`;
        return Response.json({ rollout_id: id, api_key: `key-${id}`, openai_base_url: `${base}/r/${id}/v1`, anthropic_base_url: `${base}/r/${id}`, policy_version: 0 }, { status: 201 });
      }
      return Response.json({ ok: true });
    },
  });
});
afterAll(() => {
  proxy.stop(true);
});

async function step(args: string[], env: Record<string, string> = {}) {
  const run = Bun.spawn(["bun", "workflows/argo/step.ts", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe", env: { ...process.env, FORGE_ADMIN_TOKEN: TOKEN, ...env } });
  const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  return { stdout, stderr, code };
}

/** register → harness → verify → finish, as the four containers of the rollout pod, each with its volumes. */
async function rollout(experiment: string, task: string, options: { timeout?: string; proxyUrl?: string; retry?: number; index?: number; plan?: string; results?: string } = {}) {
  const pod = mkdtempSync(join(tmpdir(), "forge-pod-"));
  const volume = (name: string) => {
    mkdirSync(join(pod, name));
    return join(pod, name);
  };
  const [workspace, state, harnessOut, verdict, scratch, control] = [volume("workspace"), volume("forge"), volume("harness-out"), volume("verdict"), volume("verify"), volume("control")];
  const proxyUrl = options.proxyUrl ?? `http://127.0.0.1:${proxy.port}`;
  // By task (as before) or by index into a plan, as the rendered pod runs: register resolves the item into /item.
  const item = join(volume("item"), "item.json");
  const which = options.index !== undefined ? ["--index", String(options.index), "--item", item] : ["--task", task, "--attempt", "0"];
  const ids = ["--run", "run", ...which, "--iteration", "0", "--retry", String(options.retry ?? 0)];
  const register = await step(["register", "--experiment", experiment, "--proxy", proxyUrl, "--workspace", workspace, "--state", state, "--control", control, ...(options.plan ? ["--plan-dir", options.plan] : []), ...ids]);
  // The harness and verify containers have no admin token in their env; pass one anyway to prove it is dropped.
  const harness = await step(["harness", "--state", state, "--workspace", workspace, "--harness-out", harnessOut, "--timeout-seconds", options.timeout ?? "60"]);
  const verify = await step(["verify", "--experiment", experiment, "--workspace", workspace, "--harness-out", harnessOut, "--verdict", verdict, "--scratch", scratch, ...(options.index !== undefined ? ["--item", item] : ["--task", task])]);
  const finish = await step(["finish", "--experiment", experiment, "--proxy", proxyUrl, "--harness-out", harnessOut, "--verdict", verdict, "--control", control, ...(options.results ? ["--results-dir", options.results] : []), ...ids]);
  const resultFile = join(control, "result.json");
  return { register, harness, verify, finish, workspace, state, harnessOut, control, result: existsSync(resultFile) ? JSON.parse(readFileSync(resultFile, "utf8")) : undefined };
}

describe("rollout pod steps", () => {
  test("plan writes tasks × k to the plan directory in chunks; its outputs are counts and the shard list", async () => {
    const data = mkdtempSync(join(tmpdir(), "forge-plan-"));
    const outputs = join(data, "outputs");
    const args = ["plan", "--experiment", FIXTURE, "--iteration", "1", "--plan-dir", join(data, "plans", "wf", "iteration-1"), "--results-dir", join(data, "results", "wf", "iteration-1"), "--outputs", outputs];
    const { stdout, code } = await step(args);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ iteration: 1, count: 8, chunk: 1000, chunks: 1, max_per_workflow: 1000, shards: 1, shard_parallelism: 16 });
    const items = JSON.parse(readFileSync(join(data, "plans", "wf", "iteration-1", "items-000000.json"), "utf8"));
    expect(items.slice(0, 2)).toEqual([{ task_id: "count-lines", attempt: "0" }, { task_id: "count-lines", attempt: "1" }]);
    expect(items.map((p: { task_id: string }) => p.task_id)).toEqual([...Array(4).fill("count-lines"), ...Array(4).fill("hello-file")]);
    const output = (name: string) => readFileSync(join(outputs, name), "utf8");
    expect([output("count"), output("rollout-count"), output("shards"), output("shard-parallelism")]).toEqual(["8", "8", "[]", "16"]);
    expect(existsSync(join(data, "results", "wf", "iteration-1"))).toBe(true);
    // A retried plan step writes the same files.
    expect((await step(args)).code).toBe(0);
    expect(JSON.parse(readFileSync(join(data, "plans", "wf", "iteration-1", "items-000000.json"), "utf8"))).toEqual(items);
  });

  test("a rollout pod by index: register reads its item from the plan, verify and finish from /item; the result lands in the results directory, which report reads", async () => {
    const data = mkdtempSync(join(tmpdir(), "forge-plan-"));
    const plan = join(data, "plans", "run", "iteration-0");
    const results = join(data, "results", "run", "iteration-0");
    expect((await step(["plan", "--experiment", FIXTURE, "--iteration", "0", "--plan-dir", plan, "--results-dir", results, "--outputs", join(data, "out")])).code).toBe(0);
    // Index 5 is hello-file, attempt 1 (count-lines × 4, then hello-file × 4).
    const done = await rollout(FIXTURE, "", { index: 5, plan, results });
    expect(done.finish.code).toBe(0);
    // The fixture harness counts data.txt, which hello-file has not: it fails, and the verifier scores 0.
    expect(done.result).toEqual({ rollout_id: "run.i0.hello-file.1", task_id: "hello-file", reward: 0, status: "failed", passed: false });
    expect(JSON.parse(readFileSync(join(results, "5.json"), "utf8"))).toEqual(done.result);
    const register = calls.findLast((c) => c.path === "/control/rollouts")!;
    expect(register.body).toMatchObject({ rollout_id: "run.i0.hello-file.1", task_id: "hello-file", attempt: 1, group: "hello-file@i0" });
    // The report: one result of 8, the other 7 never reported (lost rollouts count as infra errors).
    const out = join(data, "rate");
    const report = await step(["report", "--plan-dir", plan, "--results-dir", results, "--iteration", "0", "--workflow", "w", "--namespace", "n", "--out", out], { KUBECONFIG: join(data, "none"), KUBERNETES_SERVICE_HOST: "" });
    expect(report.code).toBe(0);
    expect(JSON.parse(report.stdout)).toMatchObject({ rollouts: 8, scored: 1, passed: 0, infraErrors: 7 });
    expect(readFileSync(out, "utf8")).toBe("0.000");
  });

  test("a plan the pod cannot read: register leaves an infrastructure error, verify does not run, main exits 75", async () => {
    const data = mkdtempSync(join(tmpdir(), "forge-plan-"));
    const done = await rollout(FIXTURE, "", { index: 3, plan: join(data, "missing"), results: join(data, "results") });
    expect(JSON.parse(readFileSync(join(done.control, "register.json"), "utf8"))).toMatchObject({ infra: true, error: expect.stringContaining("plan.json") });
    expect(done.verify.code).toBe(0);
    expect(done.finish.code).toBe(75);
    expect(done.finish.stderr).toContain("register");
  });

  test("a directory task: registered, staged without its tests, harness run, verified, reported", async () => {
    calls = [];
    const { result, workspace, verify, finish } = await rollout(FIXTURE, "count-lines");
    expect(verify.stderr).toBe("");
    expect(finish.code).toBe(0);
    expect(result).toEqual({ rollout_id: "run.i0.count-lines.0", task_id: "count-lines", reward: 1, status: "ok", passed: true });
    expect(readFileSync(join(workspace, "count.txt"), "utf8").trim()).toBe("3");
    const register = calls.find((c) => c.path === "/control/rollouts")!;
    expect(register.auth).toBe(`Bearer ${TOKEN}`);
    expect(register.body).toEqual({ rollout_id: "run.i0.count-lines.0", experiment: "argo-fixture", iteration: 0, task_id: "count-lines", group: "count-lines@i0", attempt: 0, harness: "command" });
    const finished = calls.find((c) => c.path === "/control/rollouts/run.i0.count-lines.0/finish")!;
    expect(finished.body).toMatchObject({ reward: 1, status: "ok", metrics: { harness_exit_code: 0, retry: 0 } });
  });

  test("a harness that exits non-zero is status failed; its verifier still runs and scores 0", async () => {
    // The fixture's command reads data.txt, which hello-file does not have.
    const { result, harnessOut } = await rollout(FIXTURE, "hello-file");
    expect(result).toMatchObject({ reward: 0, status: "failed", passed: false });
    expect(JSON.parse(readFileSync(join(harnessOut, "harness-result.json"), "utf8")).exit_code).toBe(1);
  });

  test("the harness gets the rollout's URLs and key, never the admin token; a crash is status failed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-exp-"));
    const script = 'echo "$OPENAI_BASE_URL $OPENAI_API_KEY $ANTHROPIC_BASE_URL" > env.txt; echo "token=${FORGE_ADMIN_TOKEN:-none}" >> env.txt; exit 3';
    writeFileSync(
      join(dir, "experiment.yaml"),
      `apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: {name: envcheck}\nspec:\n  policy: {model: m}\n  harness: {name: command, command: [bash, -c, ${JSON.stringify(script)}]}\n  environment: {tasks: [{id: t1, instruction: x, test: "grep -q /r/ env.txt"}]}\n`,
    );
    const { result, workspace } = await rollout(join(dir, "experiment.yaml"), "t1");
    const [urls, token] = readFileSync(join(workspace, "env.txt"), "utf8").trim().split("\n");
    expect(urls).toBe(`http://127.0.0.1:${proxy.port}/r/run.i0.t1.0/v1 key-run.i0.t1.0 http://127.0.0.1:${proxy.port}/r/run.i0.t1.0`);
    expect(token).toBe("token=none");
    expect(result).toMatchObject({ status: "failed", reward: 1 });
  });

  test("a hanging harness is killed at the timeout and reported as timeout", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-exp-"));
    writeFileSync(
      join(dir, "experiment.yaml"),
      `apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: {name: hang}\nspec:\n  policy: {model: m}\n  harness: {name: command, command: [bash, -c, "sleep 30 & sleep 30"]}\n  environment: {tasks: [{id: t1, instruction: x, test: "true"}]}\n`,
    );
    const started = Date.now();
    const { result } = await rollout(join(dir, "experiment.yaml"), "t1", { timeout: "1" });
    expect(result).toMatchObject({ status: "timeout" });
    // The harness would sleep 30 s: the pod's steps ended well before that, so it was killed
    // (a bound far from the 1 s timeout: four steps start Bun, which takes seconds under load).
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  test("an unreachable proxy is an infrastructure error: main exits 75, which the template retries", async () => {
    const { register, harness, finish, result } = await rollout(FIXTURE, "count-lines", { proxyUrl: "http://127.0.0.1:1" });
    // The containers before main never fail (a failed dependency would make main exit 64, not 75).
    expect([register.code, harness.code]).toEqual([0, 0]);
    expect(register.stderr).toContain("unreachable");
    expect(harness.stdout).toContain("not run");
    expect(finish.code).toBe(75);
    expect(finish.stderr).toContain("registration failed");
    expect(result).toBeUndefined(); // the output parameter's default says infra_error
  });
});

// Weight sync against real engine stand-ins: tests/proxy/weight-sync.test.ts.
describe("report and veRL config", () => {
  /** A real export (scenario records: groups g1 and g2) with its group dataset, at `batch`. */
  const exportScenario = async (batch: string) => {
    async function* records() {
      yield* scenarioRecords();
    }
    return exportTrajectories(records(), { format: "verl", out: batch, minGroupSize: 1, groupRows: 1 });
  };

  test("verl-config copies the ForgeAgentLoop, points its replay at the iteration's batch and writes the rows veRL trains on", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-verl-"));
    const batch = join(dir, "iteration-1", "batch.parquet");
    await exportScenario(batch);
    const out = join(dir, "verl");
    const { code } = await step(["verl-config", "--out", out, "--batch", batch, "--experiment-name", "argo-fixture"]);
    expect(code).toBe(0);
    expect(readFileSync(join(out, "forge_verl", "agent_loop.py"), "utf8")).toContain('@register("forge_agent")');
    expect(parse(readFileSync(join(out, "agent_loop.yaml"), "utf8"))).toEqual([
      { name: "forge_agent", _target_: "forge_verl.agent_loop.ForgeAgentLoop", mode: "replay", batch_path: batch, experiment: "argo-fixture" },
    ]);
    expect(existsSync(join(out, "dataset.parquet"))).toBe(true);
  });

  test("verl-config checks the group dataset holds a full training batch (named groups, the fix)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-verl-batch-"));
    const batch = join(dir, "batch.parquet");
    const out = join(dir, "verl");
    const args = ["verl-config", "--out", out, "--batch", batch, "--experiment-name", "argo-fixture", "--train-batch-size", "2"];
    const missing = await step(args);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no export manifest");
    // The fields the check reads, typed by the export's own manifest and written where it puts it.
    const manifest = (rows: number): Pick<ExportManifest, "group_dataset" | "groups"> => ({
      groups: { seen: 2, kept: 2, dropped: [] },
      group_dataset: { path: groupDatasetPath(batch), rows, samples_per_row: 4, short_groups: 2 - rows, samples_left_out: 3 },
    });
    writeFileSync(manifestPath(batch), JSON.stringify(manifest(1)));
    const short = await step(args);
    expect(short.code).toBe(1);
    expect(short.stderr).toContain("1 group rows, fewer than data.train_batch_size=2");
    expect(short.stderr).toContain("1 groups had fewer than 4 samples");
    expect(short.stderr).toContain("data.train_batch_size=1");
    // a real export of two groups: a batch of 2 takes both rows, a batch of 1 the first only
    await exportScenario(batch);
    const ok = await step(args);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("veRL dataset: 2 group rows");
    expect(parse(readFileSync(join(out, "agent_loop.yaml"), "utf8"))[0].batch_path).toBe(batch);
    const one = await step(args.map((a) => (a === "2" ? "1" : a)));
    expect(one.stdout).toContain("veRL dataset: 1 group rows");
  });

  test("the pass rate leaves infra errors out; items may be JSON strings (as Argo aggregates them)", () => {
    const raw = JSON.stringify([
      JSON.stringify({ reward: 1, status: "ok", passed: true }),
      { reward: 0, status: "ok", passed: false },
      { reward: 0, status: "infra_error", passed: false },
      { reward: 1, status: "timeout", passed: true },
    ]);
    expect(summarizeResults(raw, 2)).toEqual({ iteration: 2, rollouts: 4, scored: 3, passed: 2, infraErrors: 1, passRate: 2 / 3, meanReward: 2 / 3 });
  });

  test("report writes the pass rate for the output parameter (no cluster: no annotation)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-report-"));
    writeFileSync(join(dir, "results.json"), JSON.stringify([{ reward: 1, status: "ok", passed: true }, { reward: 0, status: "ok", passed: false }]));
    const { code } = await step(["report", "--results", join(dir, "results.json"), "--iteration", "0", "--workflow", "w", "--namespace", "n", "--out", join(dir, "rate")], {
      KUBECONFIG: join(dir, "none"),
      KUBERNETES_SERVICE_HOST: "",
    });
    expect(code).toBe(0);
    expect(readFileSync(join(dir, "rate"), "utf8")).toBe("0.500");
  });
});
