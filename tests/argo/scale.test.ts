/**
 * 10,000 and 50,000 rollouts per iteration against Argo's limits (tests/argo/limits.ts, read
 * from Argo v4.1.2's source): the experiment is rendered, the real plan step writes its plan
 * and outputs, and the check follows the Workflow as the controller runs it — every parameter
 * and output substituted, every fan-out expanded, every child Workflow created, the node status
 * of each Workflow object (every retry used) — measuring each against its limit.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseExperimentFile } from "../../schemas/index.ts";
import { ARGO_LIMITS, checkArgoLimits, type ScaleReport } from "./limits.ts";
import { PLAN_OUTPUT_NAMES } from "../../workflows/argo/fanout.ts";
import { analyzeFigures } from "../../workflows/argo/analyze.ts";
import { renderExperiment, type KubeObject } from "../../workflows/argo/render.ts";
import { runStep } from "../../workflows/argo/step.ts";

// Each check builds tens of thousands of node statuses; on a loaded 2-core box that takes a while.
setDefaultTimeout(300_000);

type Scale = { rollouts: number; k: number; maxPerWorkflow?: number; async?: boolean; gui?: boolean };

/** An experiment of `rollouts / k` JSONL tasks × k, rendered, with the plan step run for iteration 0. */
async function renderAtScale({ rollouts, k, maxPerWorkflow, async, gui }: Scale) {
  const dir = mkdtempSync(join(tmpdir(), "forge-scale-"));
  const tasks = rollouts / k;
  writeFileSync(join(dir, "tasks.jsonl"), Array.from({ length: tasks }, (_, i) => JSON.stringify({ id: `t${i}`, instruction: `Write ${i}`, expected: String(i) })).join("\n"));
  // Browser tasks: directories with a site (the rollout pod gets the site sidecar and the browser).
  if (gui) {
    for (let i = 0; i < tasks; i++) {
      const task = join(dir, "tasks", `t${i}`);
      mkdirSync(join(task, "site"), { recursive: true });
      mkdirSync(join(task, "tests"));
      writeFileSync(join(task, "instruction.md"), `Open {site_url} and press button ${i}.`);
      writeFileSync(join(task, "task.toml"), "[environment]\nbrowser = true\n");
      writeFileSync(join(task, "site", "index.html"), `<button>${i}</button>`);
      writeFileSync(join(task, "tests", "test.sh"), 'grep -q POST "$FORGE_SITE_LOG" && echo 1 > "$FORGE_LOGS/reward.txt" || echo 0 > "$FORGE_LOGS/reward.txt"\n');
    }
  }
  const path = join(dir, "experiment.yaml");
  writeFileSync(
    path,
    `apiVersion: openforge.dev/v1
kind: Experiment
metadata: {name: scale}
spec:
  policy: {model: Qwen/Qwen3-8B, upstreams: ["http://vllm:8000"], mode: train}
  harness: {name: ${gui ? "claude-code, image: harness-browser:1" : "codex"}}
  environment: {tasks: ${gui ? "tasks, browser: {executablePath: /usr/bin/chromium}" : "tasks.jsonl"}}
  rollouts: {k: ${k}, parallelism: 512, infraRetries: 2${maxPerWorkflow ? `, maxPerWorkflow: ${maxPerWorkflow}` : ""}}
  training: {iterations: 2${async ? ", async: true" : ""}}
`,
  );
  const experiment = parseExperimentFile(path);
  const objects = renderExperiment(experiment, { namespace: "forge", experimentPath: path });
  // The plan step as the pod runs it (its experiment file is the one the ConfigMap mounts).
  const outputs = join(dir, "outputs");
  const code = await runStep(["plan", "--experiment", path, "--iteration", "0", "--plan-dir", join(dir, "plan"), "--results-dir", join(dir, "results"), "--outputs", outputs]);
  expect(code).toBe(0);
  const plan = Object.fromEntries(PLAN_OUTPUT_NAMES.map((name) => [name, readFileSync(join(outputs, name), "utf8")]));
  const runtime = {
    // report and admit write a number each (pass rate with 3 decimals, the batch size); analyze
    // one per figure (a double in full).
    outputs: {
      plan,
      report: { "pass-rate": "0.000" },
      admit: { "train-batch-size": String(tasks) },
      analyze: Object.fromEntries(analyzeFigures(experiment).map((figure) => [figure.parameter, "0.30000000000000004"])),
    },
    retries: 2,
  };
  return { objects, plan, runtime, dir };
}

function expectWithinLimits(report: ScaleReport) {
  const failed = report.violations.map((v) => `${v.subject}: ${v.what} ${v.value} > ${v.limit}`);
  expect(failed).toEqual([]);
}

describe.each([
  { rollouts: 10_000, k: 4 },
  { rollouts: 50_000, k: 10 },
])("$rollouts rollouts per iteration", (scale) => {
  test("every object, parameter, output, argument list and Workflow status is within Argo's and Kubernetes' limits", async () => {
    const { objects, plan, runtime } = await renderAtScale(scale);
    for (const object of objects) expect(Buffer.byteLength(JSON.stringify(object))).toBeLessThan(ARGO_LIMITS.objectBytes);
    // The plan is split: one child Workflow per 1,000 rollouts, none fanned out in the top one.
    const shards = JSON.parse(plan.shards!) as { shard: string; start: string; end: string }[];
    expect(plan["rollout-count"]).toBe("0");
    expect(shards).toHaveLength(scale.rollouts / 1000);
    // The children's ranges cover every index once.
    const covered = shards.flatMap((s) => Array.from({ length: Number(s.end) - Number(s.start) + 1 }, (_, i) => Number(s.start) + i));
    expect(covered).toEqual(Array.from({ length: scale.rollouts }, (_, i) => i));

    const report = checkArgoLimits(objects, runtime);
    expectWithinLimits(report);
    // What was measured: the plan's outputs, the child Workflows' manifests and statuses, the rollout pod's template.
    const whats = new Set(report.checks.map((c) => `${c.subject.replace(/-s\d+/, "-sN")}: ${c.what}`));
    expect([...whats].some((w) => /plan: output parameter shards/.test(w))).toBe(true);
    expect([...whats].some((w) => /rollout-shard-workflow: resource manifest/.test(w))).toBe(true);
    expect([...whats].some((w) => /-i0-sN\/rollout\/main: args JSON/.test(w))).toBe(true);
    // The top Workflow plus one child per shard per iteration (the plan of iteration 1 is the same).
    const children = report.workflows.filter((w) => /-i\d-s\d+$/.test(w.workflow));
    expect(children).toHaveLength(2 * shards.length);
    for (const child of children) {
      // 1,000 rollouts × (1 try + 2 retries) pods and the exit handler, under the 1 MiB a Workflow may take.
      expect(child.pods).toBe(3001);
      expect(child.objectBytes).toBeLessThan(ARGO_LIMITS.workflowBytes);
    }
    console.log(
      `${scale.rollouts} rollouts: ${report.checks.length} checks; largest child status ${Math.max(...children.map((c) => c.nodesBytes))} B raw, ` +
        `${Math.max(...children.map((c) => c.compressedBytes))} B compressed, object ${Math.max(...children.map((c) => c.objectBytes))} B; ` +
        `plan outputs ${Object.values(plan).reduce((n, v) => n + v.length, 0)} B`,
    );
  });
});

test("async iterations (rollouts overlapping the previous step) at 10,000 rollouts: within the limits too", async () => {
  const { runtime, objects } = await renderAtScale({ rollouts: 10_000, k: 4, async: true });
  expect((objects.find((o) => o.kind === "WorkflowTemplate") as unknown as { spec: { templates: { name: string }[] } }).spec.templates.map((t) => t.name)).toContain("iteration-1-rollouts");
  const report = checkArgoLimits(objects, runtime);
  expectWithinLimits(report);
  expect(report.workflows.filter((w) => /-i\d-s\d+$/.test(w.workflow))).toHaveLength(20);
});

test("browser tasks with sites (the rollout pod with the site sidecar, the browser and /dev/shm) at 2,000 rollouts: split and within the limits alike", async () => {
  const { runtime, objects } = await renderAtScale({ rollouts: 2_000, k: 4, gui: true });
  const rollout = (objects.find((o) => o.kind === "WorkflowTemplate") as unknown as { spec: { templates: Record<string, any>[] } }).spec.templates.find((t) => t.name === "rollout")!;
  expect(rollout.volumes.map((v: { name: string }) => v.name)).toEqual(expect.arrayContaining(["dshm", "site-log"]));
  // After the harness bundle's copy, the site sidecar.
  expect(rollout.initContainers.map((c: { name: string; restartPolicy?: string }) => [c.name, c.restartPolicy])).toEqual([["bundle", undefined], ["site", "Always"]]);
  const report = checkArgoLimits(objects, runtime);
  expectWithinLimits(report);
  expect(report.workflows.filter((w) => /-i\d-s\d+$/.test(w.workflow))).toHaveLength(4);
});

test("the check can fail: one Workflow of 10,000 rollouts has a node status over 1 MiB even compressed (why iterations are split)", async () => {
  const { objects, runtime } = await renderAtScale({ rollouts: 10_000, k: 4, maxPerWorkflow: 100_000 });
  const report = checkArgoLimits(objects, runtime);
  const status = report.violations.find((v) => v.what.startsWith("stored object"));
  expect(status).toBeDefined();
  expect(status!.value).toBeGreaterThan(ARGO_LIMITS.workflowBytes);
  expect(report.workflows[0]!.pods).toBeGreaterThan(2 * 30_000);
});

test("the check can fail: aggregating each rollout's result into a parameter (the old report) is over what Argo inlines", async () => {
  const { objects, runtime } = await renderAtScale({ rollouts: 10_000, k: 4, maxPerWorkflow: 100_000 });
  const broken = structuredClone(objects) as KubeObject[];
  const template = broken.find((o) => o.kind === "WorkflowTemplate") as unknown as { spec: { templates: Record<string, any>[] } };
  template.spec.templates.find((t) => t.name === "rollout")!.outputs = { parameters: [{ name: "result", valueFrom: { path: "/control/result.json" } }] };
  const report = template.spec.templates.find((t) => t.name === "iteration-0")!.dag.tasks.find((t: { name: string }) => t.name === "report");
  report.arguments.parameters[0].value = "{{tasks.rollouts.outputs.parameters.result}}";
  const result = JSON.stringify({ rollout_id: "scale-0123abcd.i0.t1234.3", task_id: "t1234", reward: 1, status: "ok", passed: true });
  const checked = checkArgoLimits(broken, { ...runtime, outputs: { ...runtime.outputs, plan: { ...runtime.outputs.plan, "rollout-count": "10000", shards: "[]" }, rollout: { result } } });
  const over = checked.violations.filter((v) => v.subject.endsWith("/report") || v.subject.endsWith("iteration-0.report"));
  // 10,000 results of ~110 bytes: over the 128 KiB Argo inlines, and over the 1 MiB of the ConfigMap it offloads to.
  expect(over.map((v) => v.what)).toContain("argument run");
  expect(Math.max(...over.map((v) => v.value))).toBeGreaterThan(ARGO_LIMITS.configMapBytes);
});
