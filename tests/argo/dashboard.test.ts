/**
 * The Argo UI as a run's dashboard (docs/argo.md, "Analyse a run"): each iteration's analyze
 * step (workflows/argo/analyze.ts) renders with the HTML report, the pass@k table and the
 * analysis as `archive: none` artifacts, its figures as output parameters feeding
 * `metrics.prometheus` gauges; rollout pods report progress through $ARGO_PROGRESS_FILE; the
 * train pods' logs survive pod GC. The rendered quickstart validates against Argo's CRD schema,
 * the names against the rules Argo's validator applies (workflow/validate/validate.go,
 * workflow/metrics/util.go), and the step itself runs on the quickstart's real run data: its
 * figures are forge analyze's and its report renders with JavaScript disabled.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Workflow, WorkflowTemplate } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1";
import { parseExperimentFile } from "../../schemas/index.ts";
import { renderExperiment, type KubeObject } from "../../workflows/argo/render.ts";
import { reportRolloutProgress } from "../../workflows/argo/progress.ts";
import { chromiumPath, headlessChromium } from "../../analytics/testing.ts";
import { oraclePython } from "../reference/oracle.ts";

const root = join(import.meta.dir, "..", "..");
const QUICKSTART = join(root, "examples", "quickstart", "experiment.yaml");
const FIXTURE = join(root, "workflows", "argo", "fixtures", "experiment.yaml");
type AnyTemplate = Record<string, any>;

const render = (path: string) => renderExperiment(parseExperimentFile(path), { namespace: "forge", experimentPath: path });
const byKind = (objects: KubeObject[], kind: string) => objects.find((o) => o.kind === kind) as any;
const templates = (objects: KubeObject[]) => byKind(objects, "WorkflowTemplate").spec.templates as AnyTemplate[];
const template = (objects: KubeObject[], name: string) => templates(objects).find((t) => t.name === name)!;

// Argo's rules: parameter and artifact names (validate.go paramOrArtifactNameRegex), metric
// names and label keys (metrics/util.go: Prometheus's legacy metric-name rule, no ':').
const ARGO_PARAM_NAME = /^[-a-zA-Z0-9_]+$/;
const ARGO_METRIC_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

describe("rendered for Argo", () => {
  test("the quickstart validates against Argo's schema with the analyze step, its artifacts and gauges", () => {
    const objects = render(QUICKSTART);
    expect(() => new WorkflowTemplate(byKind(objects, "WorkflowTemplate")).validate()).not.toThrow();
    expect(() => new Workflow(byKind(objects, "Workflow")).validate()).not.toThrow();
    const iteration = template(objects, "iteration-0").dag.tasks as AnyTemplate[];
    const analyze = iteration.find((t) => t.name === "analyze")!;
    expect(analyze).toMatchObject({ template: "analyze", dependencies: ["report"], continueOn: { failed: true, error: true } });
    // Nothing waits for it but the train step (for its figures), and it continues on failure:
    // a failed analysis never stops export or training.
    expect(iteration.filter((t) => (t.dependencies ?? []).includes("analyze")).map((t) => t.name)).toEqual([]);
    const trainIteration = template(render(FIXTURE), "iteration-0").dag.tasks as AnyTemplate[];
    expect(trainIteration.filter((t) => (t.dependencies ?? []).includes("analyze")).map((t) => t.name)).toEqual(["train"]);

    const step = template(objects, "analyze");
    expect(step.container.args).toEqual([
      "analyze", "--data", "/data", "--run", "{{inputs.parameters.run}}", "--iteration", "{{inputs.parameters.iteration}}",
      "--k", "1,2,4", "--pass-threshold", "1", "--missing-trials", "exclude", "--out", "/tmp/analysis",
      "--figures", "/data/train/{{workflow.name}}/iteration-{{inputs.parameters.iteration}}.figures.json",
    ]);
    expect(step.container.volumeMounts).toContainEqual({ name: "data", mountPath: "/data" });
    // The UI shows a file artifact inline when its key has an extension and it is not archived.
    const artifacts = step.outputs.artifacts as AnyTemplate[];
    expect(artifacts.map((a) => a.name)).toEqual(["report", "pass-at-k", "analysis", "rollout-pages"]);
    for (const artifact of artifacts.slice(0, 3)) {
      expect(artifact.archive).toEqual({ none: {} });
      expect(artifact.path).toMatch(/^\/tmp\/analysis\/[\w-]+\.(html|txt|json)$/);
    }
    for (const name of [...artifacts.map((a) => a.name), ...step.outputs.parameters.map((p: AnyTemplate) => p.name)]) expect(name).toMatch(ARGO_PARAM_NAME);

    const outputs = new Set(step.outputs.parameters.map((p: AnyTemplate) => p.name));
    expect([...outputs]).toEqual(["pass-at-1", "pass-hat-1", "pass-at-2", "pass-hat-2", "pass-at-4", "pass-hat-4", "mean-reward", "infra-errors", "rollouts", "samples-per-rollout", "drift-tokens"]);
    for (const p of step.outputs.parameters) expect(p.valueFrom).toEqual({ path: `/tmp/analysis/params/${p.name}`, default: "NaN" });
    const gauges = step.metrics.prometheus as AnyTemplate[];
    expect(new Set(gauges.map((g) => g.name))).toEqual(new Set(["forge_pass_at_k", "forge_pass_hat_k", "forge_mean_reward", "forge_infra_errors", "forge_rollouts", "forge_samples_per_rollout", "forge_drift_tokens"]));
    const helpOf = new Map<string, string>();
    for (const gauge of gauges) {
      expect(gauge.name).toMatch(ARGO_METRIC_NAME);
      expect(gauge.help.length).toBeGreaterThan(0);
      // One help string per name (Prometheus rejects two).
      expect(helpOf.get(gauge.name) ?? gauge.help).toBe(gauge.help);
      helpOf.set(gauge.name, gauge.help);
      for (const label of gauge.labels) expect(label.key).toMatch(ARGO_METRIC_NAME);
      expect(gauge.labels.slice(0, 3)).toEqual([
        { key: "experiment", value: "quickstart" },
        { key: "run", value: "{{workflow.name}}" },
        { key: "iteration", value: "{{inputs.parameters.iteration}}" },
      ]);
      expect(gauge.when).toBe("{{status}} == Succeeded");
      const parameter = /^\{\{outputs\.parameters\.([-\w]+)\}\}$/.exec(gauge.gauge.value)?.[1];
      expect(outputs.has(parameter)).toBe(true);
    }
    expect(gauges.filter((g) => g.name === "forge_pass_at_k").map((g) => g.labels[3])).toEqual([1, 2, 4].map((k) => ({ key: "k", value: String(k) })));
  });

  test("train pods are kept by pod GC (never archiveLogs, which fails a pod without an artifact repository); argoArtifacts: false renders no artifact at all", () => {
    const objects = render(FIXTURE);
    const spec = byKind(objects, "WorkflowTemplate").spec;
    expect(spec.podGC).toEqual({
      strategy: "OnPodSuccess",
      deleteDelayDuration: "5m",
      labelSelector: { matchExpressions: [{ key: "openforge.dev/role", operator: "NotIn", values: ["train"] }] },
    });
    const train = templates(objects).filter((t) => /^train-\d+$/.test(t.name));
    expect(train.length).toBeGreaterThan(0);
    for (const t of train) {
      expect(t.metadata.labels["openforge.dev/role"]).toBe("train");
      expect(t.archiveLocation).toBeUndefined();
    }

    const dir = mkdtempSync(join(tmpdir(), "forge-argo-dash-"));
    try {
      const file = join(dir, "experiment.yaml");
      writeFileSync(file, readFileSync(FIXTURE, "utf8").replace(/^  metrics:\n/m, "  metrics:\n    argoArtifacts: false\n"));
      for (const path of readdirSync(join(root, "workflows", "argo", "fixtures"))) {
        if (path !== "experiment.yaml" && !existsSync(join(dir, path))) Bun.spawnSync(["cp", "-r", join(root, "workflows", "argo", "fixtures", path), dir]);
      }
      const off = render(file);
      expect(() => new WorkflowTemplate(byKind(off, "WorkflowTemplate")).validate()).not.toThrow();
      expect(JSON.stringify(templates(off))).not.toContain('"artifacts"');
      expect(JSON.stringify(templates(off))).not.toContain('"archiveLocation"');
      expect(template(off, "analyze").metrics.prometheus.length).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

test("the proxy's pods carry Prometheus's scrape annotations (single and sharded)", () => {
  const scrape = { "prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/metrics" };
  const deployment = byKind(render(QUICKSTART), "Deployment");
  expect(deployment.spec.template.metadata.annotations).toEqual(scrape);
  expect(deployment.spec.template.spec.containers[0].ports).toContainEqual({ name: "http", containerPort: 8080 });
  // The quickstart's layout (its simulator script is ../policies/quickstart.yaml), with two shards.
  const base = mkdtempSync(join(tmpdir(), "forge-argo-scrape-"));
  const dir = join(base, "quickstart");
  try {
    Bun.spawnSync(["cp", "-r", join(root, "examples", "quickstart"), dir]);
    Bun.spawnSync(["cp", "-r", join(root, "examples", "policies"), join(base, "policies")]);
    const file = join(dir, "experiment.yaml");
    writeFileSync(file, readFileSync(QUICKSTART, "utf8").replace("  rollouts:\n", "  proxy:\n    shards: 2\n  rollouts:\n"));
    const statefulSet = byKind(render(file), "StatefulSet");
    expect(statefulSet.spec.template.metadata.annotations).toEqual(scrape);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

describe("rollout progress ($ARGO_PROGRESS_FILE)", () => {
  test("each stage writes N/4 whole; other steps and no file: nothing", () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-progress-"));
    try {
      const file = join(dir, "progress");
      const env = { ARGO_PROGRESS_FILE: file };
      expect(["register", "harness", "verify", "finish"].map((step) => [reportRolloutProgress(step, env), readFileSync(file, "utf8")])).toEqual([
        ["1/4", "1/4"],
        ["2/4", "2/4"],
        ["3/4", "3/4"],
        ["4/4", "4/4"],
      ]);
      expect(reportRolloutProgress("report", env)).toBeUndefined();
      expect(reportRolloutProgress("harness", {})).toBeUndefined();
      expect(readdirSync(dir)).toEqual(["progress"]);
      // An unwritable file never fails the stage.
      expect(reportRolloutProgress("verify", { ARGO_PROGRESS_FILE: join(dir, "missing", "progress") })).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the step entry point writes it after a stage that succeeded, not after one that failed", () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-progress-"));
    try {
      const file = join(dir, "progress");
      // A failing stage (bad usage): no progress.
      const failed = Bun.spawnSync(["bun", join(root, "workflows", "argo", "step.ts"), "harness"], { env: { ...process.env, ARGO_PROGRESS_FILE: file }, stderr: "pipe" });
      expect(failed.exitCode).toBe(2);
      expect(existsSync(file)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the analyze step on the quickstart's real run", () => {
  let data = "";
  let run = "";
  let analysis: { pass: Record<string, number>[]; totals: Record<string, number> };
  beforeAll(() => {
    data = mkdtempSync(join(tmpdir(), "forge-analyze-step-"));
    const forge = Bun.spawnSync(["bun", join(root, "bin", "forge.ts"), "run", QUICKSTART, "--data", join(data, "run"), "--quiet"], { cwd: root, stdout: "pipe", stderr: "pipe" });
    if (forge.exitCode !== 0) throw new Error(`forge run: ${forge.stderr}`);
    run = /--run (\S+)/.exec(forge.stdout.toString())![1]!;
    const analyzed = Bun.spawnSync(["bun", join(root, "bin", "forge.ts"), "analyze", "--data", join(data, "run"), "--run", run, "--json", "--quiet"], { cwd: root, stdout: "pipe", stderr: "pipe" });
    analysis = JSON.parse(analyzed.stdout.toString());
  }, 120_000);
  afterAll(() => rmSync(data, { recursive: true, force: true }));

  test("its output parameters are forge analyze's figures; report, table and analysis are written; the report needs no script", async () => {
    const out = join(data, "analysis");
    const step = Bun.spawnSync(
      ["bun", join(root, "workflows", "argo", "step.ts"), "analyze", "--data", join(data, "run"), "--run", run, "--iteration", "0", "--k", "1,2,4", "--pass-threshold", "1", "--missing-trials", "exclude", "--out", out, "--figures", join(data, "train", "iteration-0.figures.json")],
      { cwd: root, stdout: "pipe", stderr: "pipe" },
    );
    expect(step.stderr.toString()).not.toContain("step analyze:");
    expect(step.exitCode).toBe(0);
    const param = (name: string) => readFileSync(join(out, "params", name), "utf8");
    const [pass] = analysis.pass;
    for (const k of [1, 2, 4]) {
      // DuckDB's parallel sums may round the last bit differently from one query to the next.
      expect(Number(param(`pass-at-${k}`))).toBeCloseTo(pass![`pass@${k}`]!, 12);
      expect(Number(param(`pass-hat-${k}`))).toBeCloseTo(pass![`pass^${k}`]!, 12);
    }
    expect(Number(param("mean-reward"))).toBeCloseTo(pass!.mean_reward!, 12);
    expect(Number(param("infra-errors"))).toBe(0);
    expect(Number(param("rollouts"))).toBe(20);
    // The quickstart runs token-in: one sample per rollout, nothing realigned (forge run prints it).
    expect(Number(param("samples-per-rollout"))).toBe(1);
    expect(Number(param("drift-tokens"))).toBe(0);
    // Every declared output parameter has its file (a missing one would fail the step in Argo).
    const declared = template(render(QUICKSTART), "analyze").outputs.parameters.map((p: AnyTemplate) => p.name).sort();
    expect(readdirSync(join(out, "params")).sort()).toEqual(declared);

    // The figures for the train step's trackers: the same values, as TensorBoard tags, at veRL's step of iteration 0.
    const figures = JSON.parse(readFileSync(join(data, "train", "iteration-0.figures.json"), "utf8"));
    expect(figures).toMatchObject({ iteration: 0, global_step: 1, run });
    expect(Object.keys(figures.figures).sort()).toEqual(["forge/drift_tokens", "forge/infra_errors", "forge/mean_reward", "forge/pass@1", "forge/pass@2", "forge/pass@4", "forge/pass^1", "forge/pass^2", "forge/pass^4", "forge/rollouts", "forge/samples_per_rollout"]);
    expect(figures.figures["forge/pass@2"]).toBe(Number(param("pass-at-2")));
    expect(figures.figures["forge/samples_per_rollout"]).toBe(1);
    // What the train pod's forge-figures container runs on it (veRL's TensorBoard writer, in the reference venv), read back by TensorBoard.
    const python = oraclePython();
    const logdir = join(data, "tensorboard");
    const written = Bun.spawnSync([python, join(root, "integrations", "verl", "forge_verl", "figures.py")], {
      env: { ...process.env, FORGE_FIGURES: join(data, "train", "iteration-0.figures.json"), TENSORBOARD_DIR: logdir, FORGE_FIGURES_WAIT_SECONDS: "0" },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(written.exitCode, written.stderr.toString()).toBe(0);
    const read = Bun.spawnSync(
      [python, "-c", `import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
print(json.dumps({tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}))`, logdir],
      { stdout: "pipe", stderr: "pipe" },
    );
    const scalars = JSON.parse(read.stdout.toString()) as Record<string, [number, number][]>;
    expect(scalars["forge/pass@1"]).toEqual([[1, expect.closeTo(pass!["pass@1"]!, 6)]]);
    expect(scalars["forge/drift_tokens"]![0]![1]).toBe(Number(param("drift-tokens")));

    expect(readFileSync(join(out, "pass-at-k.txt"), "utf8")).toMatch(/^experiment\s+run\s+iteration\s+tasks\s+scored/m);
    expect(JSON.parse(readFileSync(join(out, "analysis.json"), "utf8")).pass.map((row: Record<string, number>) => row.successes)).toEqual(analysis.pass.map((row) => row.successes));
    const html = readFileSync(join(out, "report.html"), "utf8");
    // Nothing loaded from elsewhere (the UI's CSP blocks remote loads); its only scripts are the
    // embedded data and a check that marks drawn charts, which the content does not need (below).
    expect(html).not.toMatch(/<script[^>]*\ssrc=|\son\w+=|javascript:/i);
    expect(html).not.toMatch(/\b(src|href)="(https?:)?\/\//);
    expect(readdirSync(join(out, "report.rollouts")).length).toBe(20);

    if (!existsSync(chromiumPath)) return console.warn(`skipped the render: no ${chromiumPath} (apt-get install -y chromium)`);
    // Served as the Argo server serves an artifact: its Content-Security-Policy (the default of
    // server/artifacts/artifact_server.go), which blocks every script and remote load.
    const ARGO_ARTIFACT_CSP = "sandbox allow-same-origin; base-uri 'none'; default-src 'none'; img-src 'self'; style-src 'self' 'unsafe-inline'";
    writeFileSync(join(out, "probe.html"), `<html><body><p id="p">static</p><script>document.getElementById("p").textContent = "scripted"</script></body></html>`);
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (request) => {
        const path = join(out, decodeURIComponent(new URL(request.url).pathname));
        if (!path.startsWith(out) || !existsSync(path)) return new Response("not found", { status: 404 });
        const headers: Record<string, string> = { "content-type": "text/html; charset=utf-8" };
        if (new URL(request.url).searchParams.get("csp") !== "off") headers["content-security-policy"] = ARGO_ARTIFACT_CSP;
        return new Response(Bun.file(path), { headers });
      },
    });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      // The policy is real: the probe's script runs without it and not with it.
      expect((await headlessChromium(`${base}/probe.html?csp=off`, join(data, "probe-js.png"), "400,300")).dom).toContain(">scripted<");
      expect((await headlessChromium(`${base}/probe.html`, join(data, "probe.png"), "400,300")).dom).toContain(">static<");
      const rendered = await headlessChromium(`${base}/report.html`, join(data, "report.png"));
      expect(rendered.code).toBe(0);
      // The charts, the pass@k table and the rollouts are in the DOM as written, no script ran.
      expect(rendered.dom).toContain('data-chart="pass-curve"');
      expect(rendered.dom).not.toMatch(/<svg[^>]*data-rendered=/);
      expect(rendered.dom).toMatch(/<table id="pass-table">[\s\S]*pass@4/);
      expect(rendered.dom).toContain(`<a href="report.rollouts/${run}.i0.capital.0.html">`);
    } finally {
      server.stop(true);
    }
  }, 180_000);
});
