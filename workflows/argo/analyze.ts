/**
 * The Argo UI as the run's dashboard (docs/argo.md, "Analyse a run"): after each iteration's
 * report, an `analyze` step runs `forge analyze` over the iteration's rollouts and leaves
 *
 * - the static HTML report (`report.html`, no scripts: the UI serves artifacts under a
 *   Content-Security-Policy that blocks them), the pass@k table as text (`pass-at-k.txt`) and
 *   the whole analysis (`analysis.json`) as output artifacts with `archive: none`, which the UI
 *   shows inline; the per-rollout trajectory pages as one `.tgz` artifact to download;
 * - its figures as output parameters, which the template's `metrics.prometheus` turns into
 *   gauges on the workflow controller's metrics endpoint when the step completes
 *   (`argo_workflows_forge_pass_at_k{experiment, run, iteration, k}`, …).
 *
 * The step never stops training: its DAG task continues on failure (no artifact repository
 * configured, a damaged log), and `spec.metrics.argoArtifacts: false` renders it without
 * artifacts for a cluster that has no artifact repository.
 * With a sharded proxy the logs are on the shards' own claims, which this step does not read
 * yet: its figures are then empty (NaN) — docs/argo.md, "Known limits".
 */
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { IComGithubArgoprojArgoWorkflowsV4PkgApisWorkflowV1alpha1Template as Template } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/Template";
import type { IComGithubArgoprojArgoWorkflowsV4PkgApisWorkflowV1alpha1Prometheus as Prometheus } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/Prometheus";
import type { Experiment } from "../../schemas/index.ts";
import { DATA_DIR, FORGE_APP_DIR, LABEL_ITERATION, LABEL_ROLE } from "./names.ts";

/** Where the analyze step writes its artifacts and (under `params/`) its output parameters. */
export const ANALYZE_OUT = "/tmp/analysis";
const STEP_SCRIPT = `${FORGE_APP_DIR}/workflows/argo/step.ts`;
const param = (name: string) => `{{inputs.parameters.${name}}}`;

/**
 * Where the analyze step leaves the iteration's figures for the train step's trackers (the
 * format of workflows/local/figures.ts, read by `python -m forge_verl.figures`).
 */
export function analyzeFiguresPath(iteration: number | string): string {
  return `${DATA_DIR}/train/{{workflow.name}}/iteration-${iteration}.figures.json`;
}

/** A figure of the iteration: its output parameter, its gauge and what the gauge says. */
type Figure = { parameter: string; metric: string; help: string; k?: number };

/**
 * The figures the analyze step outputs, for the experiment's k values: pass@k and pass^k per k
 * (one gauge each, labelled k), mean reward, infrastructure errors, samples per rollout and
 * drift (tokens realigned against the recorded context: docs/trajectories.md).
 *
 * @example
 * analyzeFigures(experiment).map((f) => f.parameter) // ["pass-at-1", "pass-hat-1", …, "mean-reward", …]
 */
export function analyzeFigures(experiment: Experiment): Figure[] {
  const perK = experiment.spec.metrics.k.flatMap((k): Figure[] => [
    { parameter: `pass-at-${k}`, metric: "forge_pass_at_k", help: "pass@k of the iteration's rollouts (unbiased estimator; NaN when no task has k valid trials)", k },
    { parameter: `pass-hat-${k}`, metric: "forge_pass_hat_k", help: "pass^k of the iteration's rollouts (NaN when no task has k valid trials)", k },
  ]);
  return [
    ...perK,
    { parameter: "mean-reward", metric: "forge_mean_reward", help: "mean reward of the iteration's scored tasks (forge analyze's mean_reward)" },
    { parameter: "infra-errors", metric: "forge_infra_errors", help: "rollouts of the iteration that ended in an infrastructure error" },
    { parameter: "rollouts", metric: "forge_rollouts", help: "rollouts registered in the iteration" },
    { parameter: "samples-per-rollout", metric: "forge_samples_per_rollout", help: "training samples per assembled rollout (more than 1: the history was rewritten)" },
    { parameter: "drift-tokens", metric: "forge_drift_tokens", help: "tokens of the iteration's trajectories realigned against the recorded context (drift)" },
  ];
}

/** The template's `metrics.prometheus`: one gauge per figure, emitted when the step succeeds. */
function prometheus(experiment: Experiment): Prometheus[] {
  return analyzeFigures(experiment).map((figure) => ({
    name: figure.metric,
    help: figure.help,
    labels: [
      { key: "experiment", value: experiment.metadata.name },
      { key: "run", value: "{{workflow.name}}" },
      { key: "iteration", value: param("iteration") },
      ...(figure.k === undefined ? [] : [{ key: "k", value: String(figure.k) }]),
    ],
    when: "{{status}} == Succeeded",
    gauge: { value: `{{outputs.parameters.${figure.parameter}}}`, realtime: false },
  }));
}

/**
 * The analyze template: `step.ts analyze` over the data volume (read-write: compaction writes
 * `parquet/` beside the log), scoped to this run (the Workflow) and iteration.
 */
export function analyzeTemplate(experiment: Experiment): Template {
  const { metrics } = experiment.spec;
  const file = (name: string, path: string) => ({ name, path: `${ANALYZE_OUT}/${path}`, archive: { none: {} } });
  return {
    name: "analyze",
    inputs: { parameters: [{ name: "run" }, { name: "iteration" }] },
    metadata: { labels: { [LABEL_ROLE]: "analyze", [LABEL_ITERATION]: param("iteration") } },
    container: {
      name: "main",
      image: experiment.spec.proxy.image,
      workingDir: FORGE_APP_DIR,
      command: ["bun", STEP_SCRIPT],
      // The experiment's metric settings, which Argo's rollouts do not carry as labels.
      args: [
        "analyze",
        "--data",
        DATA_DIR,
        "--run",
        param("run"),
        "--iteration",
        param("iteration"),
        "--k",
        metrics.k.join(","),
        "--pass-threshold",
        String(metrics.passThreshold),
        "--missing-trials",
        metrics.missingTrials,
        "--out",
        ANALYZE_OUT,
        "--figures",
        analyzeFiguresPath(param("iteration")),
      ],
      resources: { requests: { cpu: "1", memory: "2Gi" }, limits: { memory: "8Gi" } },
      volumeMounts: [{ name: "data", mountPath: DATA_DIR }, { name: "analysis", mountPath: ANALYZE_OUT }],
    },
    // An emptyDir for the outputs: the forge containers' root filesystem is read-only.
    volumes: [{ name: "analysis", emptyDir: {} }],
    outputs: {
      parameters: analyzeFigures(experiment).map((figure) => ({ name: figure.parameter, valueFrom: { path: `${ANALYZE_OUT}/params/${figure.parameter}`, default: "NaN" } })),
      ...(metrics.argoArtifacts
        ? {
            artifacts: [
              file("report", "report.html"),
              file("pass-at-k", "pass-at-k.txt"),
              file("analysis", "analysis.json"),
              // The trajectory pages the report links to, as one archive (a directory artifact
              // is shown in the UI only under a key ending in "/", which depends on the repository).
              { name: "rollout-pages", path: `${ANALYZE_OUT}/report.rollouts`, optional: true },
            ],
          }
        : {}),
    },
    metrics: { prometheus: prometheus(experiment) },
  };
}

/** A number as an Argo parameter a gauge can parse (Go's ParseFloat reads "NaN"). */
const gaugeValue = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? String(value) : "NaN");

/**
 * The analyze step: compacts the log, analyses the run's iteration, writes the report, the
 * pass@k table, the analysis and one file per figure under `out`, and prints the table.
 */
export async function analyzeStep(options: { data: string; run: string; iteration: number; out: string; ks: number[]; threshold: number; missingTrials: "exclude" | "fail"; figures?: string }): Promise<void> {
  const { analyze, formatPassSummary, openAnalytics, writeReport } = await import("../../analytics/index.ts");
  mkdirSync(join(options.out, "params"), { recursive: true });
  const session = await openAnalytics(options.data);
  try {
    const scope = { run: options.run, iteration: options.iteration };
    const analysis = await analyze(session.connection, { scope, details: true, ks: options.ks, threshold: options.threshold, missingTrials: options.missingTrials }, session.compaction);
    const { byRollout } = await writeReport(session.connection, options.data, analysis, join(options.out, "report.html"));
    const table = formatPassSummary(analysis);
    writeFileSync(join(options.out, "pass-at-k.txt"), `${table}\n`);
    writeFileSync(join(options.out, "analysis.json"), JSON.stringify(analysis, null, 2));
    const pass = analysis.pass.length === 1 ? analysis.pass[0]! : undefined;
    const pages = [...byRollout.values()];
    const figures: Record<string, string> = {
      "mean-reward": gaugeValue(pass?.mean_reward),
      "infra-errors": gaugeValue(pass?.infra_errors ?? 0),
      rollouts: gaugeValue(pass?.rollouts ?? 0),
      "samples-per-rollout": gaugeValue(pages.length ? pages.reduce((sum, page) => sum + page.samples, 0) / pages.length : Number.NaN),
      "drift-tokens": gaugeValue(pages.reduce((sum, page) => sum + page.drift_tokens, 0)),
    };
    for (const k of analysis.options.ks) {
      figures[`pass-at-${k}`] = gaugeValue(pass?.[`pass@${k}`]);
      figures[`pass-hat-${k}`] = gaugeValue(pass?.[`pass^${k}`]);
    }
    for (const [name, value] of Object.entries(figures)) writeFileSync(join(options.out, "params", name), value);
    if (options.figures) {
      // The same figures as TensorBoard scalars (forge/pass@1, …) at the step veRL logs this
      // iteration's training at (it resumes from global_step_i), written whole.
      const scalars = Object.fromEntries(
        Object.entries(figures).map(([name, value]) => [`forge/${name.replace(/^pass-at-(\d+)$/, "pass@$1").replace(/^pass-hat-(\d+)$/, "pass^$1").replaceAll("-", "_")}`, value === "NaN" ? null : Number(value)]),
      );
      mkdirSync(dirname(options.figures), { recursive: true });
      writeFileSync(`${options.figures}.tmp`, JSON.stringify({ iteration: options.iteration, global_step: options.iteration + 1, run: options.run, figures: scalars }, null, 2));
      renameSync(`${options.figures}.tmp`, options.figures);
    }
    console.log(table);
  } finally {
    session.close();
  }
}
