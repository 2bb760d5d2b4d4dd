/**
 * The fan-out of an iteration's rollouts, with no Argo parameter that grows with their number
 * (docs/argo.md, "Scale"):
 *
 *   plan ──► rollouts   withSequence over the plan's count, one pod per index (≤ maxPerWorkflow)
 *        └─► shards     withParam over [{shard, start, end}], one child Workflow per shard,
 *                       each running `rollout-shard`: withSequence start…end (> maxPerWorkflow)
 *        ──► report     reads the results from the data volume
 *
 * The plan step writes the plan to the data volume (plan-files.ts) and outputs only counts and
 * the shard list (one short item per child Workflow); each rollout pod reads its own item and
 * writes its result back to the volume. Which of `rollouts` / `shards` runs is decided at run
 * time by the plan: the other gets nothing to expand (count 0, an empty list) and is Skipped,
 * which a DAG dependency accepts.
 */
import type { IComGithubArgoprojArgoWorkflowsV4PkgApisWorkflowV1alpha1Template as Template } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/Template";
import type { IComGithubArgoprojArgoWorkflowsV4PkgApisWorkflowV1alpha1DAGTask as Task } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/DAGTask";
import type { Experiment } from "../../schemas/index.ts";
import { DATA_DIR, EXPERIMENT_DIR, FORGE_APP_DIR, LABEL_EXPERIMENT, LABEL_ITERATION, LABEL_ROLE, objectNames } from "./names.ts";
import { planDir, resultsDir } from "./plan-files.ts";

/** Labels of a child Workflow: the top Workflow it belongs to (`forge watch` follows them by it) and its shard. */
export const LABEL_PARENT = "openforge.dev/parent-workflow";
export const LABEL_SHARD = "openforge.dev/shard";

const STEP_SCRIPT = `${FORGE_APP_DIR}/workflows/argo/step.ts`;
const param = (name: string) => `{{inputs.parameters.${name}}}`;
const smallResources = { requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "1Gi" } };
const experimentMount = { name: "experiment", mountPath: EXPERIMENT_DIR, readOnly: true };
/** Where the plan step leaves its output parameters. */
const PLAN_OUTPUTS = "/tmp/plan";
/** The plan step's output parameters (files in PLAN_OUTPUTS; step.ts writes them). */
export const PLAN_OUTPUT_NAMES = ["count", "rollout-count", "shards", "shard-parallelism"] as const;

/**
 * The plan step: writes the iteration's plan (and creates its results directory) on the data
 * volume; its outputs are the count, the shard list and each child's parallelism.
 */
export function planTemplate(experiment: Experiment): Template {
  return {
    name: "plan",
    inputs: { parameters: [{ name: "run" }, { name: "iteration" }] },
    metadata: { labels: { [LABEL_ROLE]: "plan", [LABEL_ITERATION]: param("iteration") } },
    container: {
      name: "main",
      image: experiment.spec.proxy.image,
      workingDir: FORGE_APP_DIR,
      command: ["bun", STEP_SCRIPT],
      args: [
        "plan",
        "--experiment",
        `${EXPERIMENT_DIR}/experiment.yaml`,
        "--iteration",
        param("iteration"),
        "--plan-dir",
        planDir(param("run"), param("iteration")),
        "--results-dir",
        resultsDir(param("run"), param("iteration")),
        "--outputs",
        PLAN_OUTPUTS,
      ],
      resources: smallResources,
      volumeMounts: [{ name: "data", mountPath: DATA_DIR }, experimentMount],
    },
    outputs: {
      parameters: PLAN_OUTPUT_NAMES.map((name) => ({ name, valueFrom: { path: `${PLAN_OUTPUTS}/${name}` } })),
    },
  };
}

/** The arguments every rollout pod takes: its index in the plan, the run (top Workflow) and the iteration. */
const rolloutArguments = (run: string, iteration: string) => ({
  parameters: [
    { name: "index", value: "{{item}}" },
    { name: "run", value: run },
    { name: "iteration", value: iteration },
  ],
});

/**
 * The iteration's plan → fan-out tasks; `report` depends on `fanOutDependencies`.
 *
 * @example
 * fanOutTasks("0").map((t) => t.name) // ["plan", "rollouts", "shards"]
 */
export function fanOutTasks(iteration: string): Task[] {
  const iterationArg = { name: "iteration", value: iteration };
  const runArg = { name: "run", value: "{{workflow.name}}" };
  const plan = (name: string) => `{{tasks.plan.outputs.parameters.${name}}}`;
  return [
    { name: "plan", template: "plan", arguments: { parameters: [runArg, iterationArg] } },
    {
      name: "rollouts",
      template: "rollout",
      dependencies: ["plan"],
      // 0 when the iteration is split: an empty expansion is one Skipped node (Argo expands
      // withSequence before it evaluates `when`, so `when` would leave one node per rollout).
      withSequence: { count: plan("rollout-count") },
      // A rollout that exhausted its infrastructure retries must not stop the others.
      continueOn: { failed: true, error: true },
      arguments: rolloutArguments("{{workflow.name}}", iteration),
    },
    {
      name: "shards",
      template: "rollout-shard-workflow",
      dependencies: ["plan"],
      // One short item per child Workflow ({shard, start, end}): bounded by count / maxPerWorkflow;
      // [] when the iteration is not split.
      withParam: plan("shards"),
      continueOn: { failed: true, error: true },
      arguments: {
        parameters: [
          runArg,
          iterationArg,
          { name: "shard", value: "{{item.shard}}" },
          { name: "start", value: "{{item.start}}" },
          { name: "end", value: "{{item.end}}" },
          { name: "parallelism", value: plan("shard-parallelism") },
        ],
      },
    },
  ];
}

/** What the report step waits for: whichever fan-out ran (the other is Skipped). */
export const fanOutDependencies = ["rollouts", "shards"];

/** One environment's rollouts: an index range of the plan and the rollout template that runs them in its image. */
export type EnvironmentRange = { template: string; start: number; count: number };

/**
 * The fan-out when the tasks run in several images (task-images.ts): one task per environment,
 * over its index range of the plan (the plan orders rollouts by environment), with its own
 * rollout template. Not split into child Workflows (workflow.ts refuses more rollouts than
 * rollouts.maxPerWorkflow with several images).
 *
 * @example
 * environmentFanOut("0", [{ template: "rollout-e0", start: 0, count: 8 }, { template: "rollout-e1", start: 8, count: 4 }]).map((t) => t.name) // ["plan", "rollouts-e0", "rollouts-e1"]
 */
export function environmentFanOut(iteration: string, environments: EnvironmentRange[]): { tasks: Task[]; dependencies: string[] } {
  const [plan] = fanOutTasks(iteration);
  const tasks = environments.map((environment, index) => ({
    name: `rollouts-e${index}`,
    template: environment.template,
    dependencies: ["plan"],
    withSequence: { start: String(environment.start), count: String(environment.count) },
    continueOn: { failed: true, error: true },
    arguments: rolloutArguments("{{workflow.name}}", iteration),
  }));
  return { tasks: [plan!, ...tasks], dependencies: tasks.map((task) => task.name) };
}

/**
 * The name of shard `shard`'s child Workflow (fixed, so `apply` of a re-run finds it).
 *
 * @example
 * childWorkflowName("quick-1a2b3c4d", "0", "3") // "quick-1a2b3c4d-i0-s3"
 */
export function childWorkflowName(run: string, iteration: string, shard: string): string {
  return `${run}-i${iteration}-s${shard}`;
}

/**
 * The child Workflow of one shard, as the resource template's manifest: the experiment's own
 * WorkflowTemplate with entrypoint `rollout-shard`, its own `parallelism`, owned by the top
 * Workflow (deleted with it). JSON is YAML; `parallelism` is spliced in unquoted (an integer).
 */
function childWorkflowManifest(experiment: Experiment): string {
  const names = objectNames(experiment);
  const manifest = {
    apiVersion: "argoproj.io/v1alpha1",
    kind: "Workflow",
    metadata: {
      name: childWorkflowName(param("run"), param("iteration"), param("shard")),
      labels: {
        "app.kubernetes.io/part-of": "openforge",
        [LABEL_EXPERIMENT]: names.experiment,
        [LABEL_ROLE]: "rollout-shard",
        [LABEL_PARENT]: param("run"),
        [LABEL_ITERATION]: param("iteration"),
        [LABEL_SHARD]: param("shard"),
      },
    },
    spec: {
      workflowTemplateRef: { name: names.workflowTemplate },
      entrypoint: "rollout-shard",
      parallelism: "__PARALLELISM__",
      arguments: {
        parameters: [
          { name: "run", value: param("run") },
          { name: "iteration", value: param("iteration") },
          { name: "start", value: param("start") },
          { name: "end", value: param("end") },
        ],
      },
    },
  };
  return JSON.stringify(manifest, null, 1).replace('"__PARALLELISM__"', param("parallelism"));
}

/**
 * The two templates of a split iteration: `rollout-shard-workflow` (a resource step in the top
 * Workflow that applies one child Workflow and waits for it to end) and `rollout-shard` (the
 * child's entrypoint: the rollouts start…end of the plan).
 */
export function shardTemplates(experiment: Experiment): Template[] {
  return [
    {
      name: "rollout-shard-workflow",
      inputs: { parameters: ["run", "iteration", "shard", "start", "end", "parallelism"].map((name) => ({ name })) },
      metadata: { labels: { [LABEL_ROLE]: "rollout-shard", [LABEL_ITERATION]: param("iteration") } },
      resource: {
        action: "apply",
        setOwnerReference: true,
        manifest: childWorkflowManifest(experiment),
        successCondition: "status.phase == Succeeded",
        failureCondition: "status.phase in (Failed, Error)",
      },
    },
    {
      name: "rollout-shard",
      inputs: { parameters: ["run", "iteration", "start", "end"].map((name) => ({ name })) },
      metadata: { labels: { [LABEL_ITERATION]: param("iteration") } },
      dag: {
        tasks: [
          {
            name: "rollouts",
            template: "rollout",
            withSequence: { start: param("start"), end: param("end") },
            continueOn: { failed: true, error: true },
            arguments: rolloutArguments(param("run"), param("iteration")),
          },
        ],
      },
    },
  ];
}

/**
 * The report step: the iteration's results from the data volume (a missing one is a lost
 * rollout, counted as an infrastructure error), the pass rate onto the Workflow.
 */
export function reportTemplate(experiment: Experiment): Template {
  return {
    name: "report",
    inputs: { parameters: [{ name: "run" }, { name: "iteration" }] },
    metadata: { labels: { [LABEL_ROLE]: "report", [LABEL_ITERATION]: param("iteration") } },
    container: {
      name: "main",
      image: experiment.spec.proxy.image,
      workingDir: FORGE_APP_DIR,
      command: ["bun", STEP_SCRIPT],
      args: [
        "report",
        "--plan-dir",
        planDir(param("run"), param("iteration")),
        "--results-dir",
        resultsDir(param("run"), param("iteration")),
        "--iteration",
        param("iteration"),
        "--pass-threshold",
        String(experiment.spec.metrics.passThreshold),
        "--workflow",
        "{{workflow.name}}",
        "--namespace",
        "{{workflow.namespace}}",
        "--out",
        "/tmp/pass-rate",
      ],
      resources: smallResources,
      volumeMounts: [{ name: "data", mountPath: DATA_DIR, readOnly: true }],
    },
    outputs: { parameters: [{ name: "pass-rate", globalName: "pass-rate", valueFrom: { path: "/tmp/pass-rate" } }] },
  };
}
