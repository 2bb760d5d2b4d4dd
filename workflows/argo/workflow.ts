/**
 * The experiment as an Argo `WorkflowTemplate` (all the templates) and a `Workflow` that runs it.
 *
 * Shape (see docs/argo.md): the entrypoint is a DAG of iterations generated at render time
 * (not a recursive template, so the UI shows one node per iteration and nothing depends on
 * recursion depth), each depending on the previous one. Each iteration (a DAG): plan → rollouts (withParam over the plan, one pod each,
 * bounded by `parallelism`) → report (pass rate onto the workflow), and beside the rest `analyze` (the HTML report and pass@k
 * table as artifacts, figures as Prometheus gauges: analyze.ts) → in train mode export → admit (the groups that survived) →
 * train (veRL) → weight sync. An exit handler annotates the final state.
 */
import { Workflow, WorkflowTemplate } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1";
import type { IComGithubArgoprojArgoWorkflowsV4PkgApisWorkflowV1alpha1Template as Template } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/Template";
import type { IComGithubArgoprojArgoWorkflowsV4PkgApisWorkflowV1alpha1DAGTask as Task } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/DAGTask";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { Experiment } from "../../schemas/index.ts";
import { adminTokenEnv, experimentVolume, inferenceNamespace, type ConfigItem } from "./cluster.ts";
import { READ_ONLY_ROOT_ENV, restrictedContainer, restrictedPod, restrictTemplate } from "./security.ts";
import { environmentFanOut, fanOutDependencies, fanOutTasks, planTemplate, reportTemplate, shardTemplates, type EnvironmentRange } from "./fanout.ts";
import type { ContainerResources, TaskEnvironment } from "./task-images.ts";
import { analyzeFiguresPath, analyzeTemplate } from "./analyze.ts";
import { withShardLogs } from "./proxy-shards.ts";
import { splitForAsync } from "./async.ts";
import { guiVolumes, POD_SITE_LOG_DIR, rolloutResources, siteSidecar, type GuiNeeds } from "./gui.ts";
import {
  ANNOTATION_DESCRIPTION,
  baseLabels,
  DATA_DIR,
  EXPERIMENT_DIR,
  FORGE_APP_DIR,
  LABEL_COMMIT,
  LABEL_EXPERIMENT,
  LABEL_ITERATION,
  LABEL_ROLE,
  objectNames,
  POD_PATHS,
  proxyUrl,
} from "./names.ts";

/** Where the rollout pod's forge containers see the iteration's plan, its item, and its results (data volume subPaths, an emptyDir). */
const PLAN_MOUNT = "/plan";
const RESULTS_MOUNT = "/results";
const ITEM_DIR = "/item";
const ITEM_FILE = `${ITEM_DIR}/item.json`;

/** Exit code of a rollout container for an infrastructure error (EX_TEMPFAIL): the only one retried. */
export const INFRA_EXIT_CODE = 75;

export type WorkflowOptions = {
  namespace: string;
  /** Commit the experiment file came from (gitops); becomes the `commit` parameter and label. */
  commit?: string;
  /** Use metadata.generateName instead of a fixed name (for Argo Events submit triggers). */
  generateName?: boolean;
  /** How the experiment ConfigMap's keys map back to paths under /experiment. */
  configItems?: ConfigItem[];
  /** Tasks per iteration (GRPO groups): sizes veRL's `data.train_batch_size` (render counts them). */
  taskCount?: number;
  /** Browser tasks and tasks with a site: their rollout pods get the browser and the site sidecar (gui.ts). */
  gui?: GuiNeeds;
  /**
   * The images and resources the tasks run in, in plan order (task-images.ts taskEnvironments);
   * without them every rollout runs in spec.environment.image with spec.rollouts.resources.
   */
  environments?: TaskEnvironment[];
};

/** One rollout template's task image and resources, and the index range of the plan it runs. */
export type RolloutEnvironment = EnvironmentRange & { image: string; resources: ContainerResources };

/**
 * The rollout templates of the experiment: one ("rollout") when all tasks share an image and
 * resources, else one per environment ("rollout-e0", …) over its range of the plan. Several
 * images and more rollouts than rollouts.maxPerWorkflow is refused (child Workflows run one
 * rollout template).
 *
 * @example
 * rolloutEnvironments(experiment, environments).map((e) => e.template) // ["rollout"]
 */
export function rolloutEnvironments(experiment: Experiment, environments: TaskEnvironment[] | undefined): RolloutEnvironment[] {
  const { k, maxPerWorkflow } = experiment.spec.rollouts;
  if (!environments || environments.length === 0) return [];
  const several = environments.length > 1;
  const total = environments.reduce((sum, environment) => sum + environment.taskIds.length * k, 0);
  if (several && total > maxPerWorkflow) {
    throw new Error(
      `spec.environment.tasks: ${total} rollouts in ${environments.length} task images exceed spec.rollouts.maxPerWorkflow (${maxPerWorkflow}); an iteration split into child Workflows runs one image: split the task set by image into experiments, or raise maxPerWorkflow (docs/argo.md, "Images")`,
    );
  }
  let start = 0;
  return environments.map((environment, index) => {
    const count = environment.taskIds.length * k;
    const range = { template: several ? `rollout-e${index}` : "rollout", image: environment.image, resources: environment.resources, start, count };
    start += count;
    return range;
  });
}

/** veRL's `algorithm.adv_estimator` for each training.algorithm (PPO is GAE with a critic). */
const ADV_ESTIMATOR: Record<Experiment["spec"]["training"]["algorithm"], string> = {
  grpo: "grpo",
  ppo: "gae",
  rloo: "rloo",
  reinforce_plus_plus: "reinforce_plus_plus",
  remax: "remax",
  gpg: "gpg",
};

/** Where the train step's init container writes the agent-loop config (and the ForgeAgentLoop package). */
const VERL_DIR = "/forge/verl";
const AGENT_LOOP_CONFIG = `${VERL_DIR}/agent_loop.yaml`;
/** The rows one step trains on: the first train_batch_size rows of the group dataset (verl-config writes it). */
const VERL_DATASET = `${VERL_DIR}/dataset.parquet`;

const STEP_SCRIPT = `${FORGE_APP_DIR}/workflows/argo/step.ts`;
const param = (name: string) => `{{inputs.parameters.${name}}}`;
const forgeStep = (...args: string[]) => ({ command: ["bun", STEP_SCRIPT], args });
const smallResources = { requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "1Gi" } };
const dataMount = { name: "data", mountPath: DATA_DIR };
/** The checkpoint volume (cluster.ts renderCheckpointVolumes), where veRL writes and the inference servers read. */
const checkpointsMount = (experiment: Experiment) => ({ name: "checkpoints", mountPath: experiment.spec.training.checkpoints.mountPath });
const experimentMount = { name: "experiment", mountPath: EXPERIMENT_DIR, readOnly: true };

/** The harness bundle image (images/harness-bundle): the user's, else the published one (docs/argo.md, "Images"). */
export function harnessImage(experiment: Experiment): string {
  return experiment.spec.harness.image ?? DEFAULT_BUNDLE_IMAGE;
}

/** images/harness-bundle, as images/build.sh --registry ghcr.io/openforge --tag 0.1.0 builds it. */
export const DEFAULT_BUNDLE_IMAGE = "ghcr.io/openforge/harness-bundle:0.1.0";

/**
 * Where the bundle's /opt/forge is in the rollout pod: the init container copies it into the
 * `forge-bundle` emptyDir, which the harness and verify containers mount read-only at the same
 * path inside the task's image (the step runner and its scripts name /opt/forge).
 */
export const BUNDLE_DIR = "/opt/forge";
const BUNDLE_COPY_MOUNT = "/forge-bundle";
/** What the harness and verify containers run: the bundle's busybox runs its step runner (images/harness-bundle/forge-step). */
const bundleStep = (...args: string[]) => ({ command: [`${BUNDLE_DIR}/bin/busybox`, "sh", `${BUNDLE_DIR}/bin/forge-step`], args });

/** Prompt / response lengths when the experiment's overrides do not set `data.max_*_length`. */
export const DEFAULT_PROMPT_LENGTH = 8192;
export const DEFAULT_RESPONSE_LENGTH = 16384;

/** What the veRL command is sized by, beyond the experiment. */
export type VerlOptions = {
  /**
   * GRPO groups (dataset rows) one iteration produces: the number of tasks. Sets
   * `data.train_batch_size` (one optimizer step over the whole iteration); without it, the
   * inline task list's length, else 8.
   */
  taskCount?: number;
  /**
   * `data.train_batch_size` as an Argo expression (the admit step's output: the groups that
   * survived), instead of a number fixed at render time. The experiment's override still wins.
   */
  trainBatchSize?: string;
};

/** The value of `key` in a list of hydra overrides (`key=value`, `+key=value`), if set. */
export function overrideValue(overrides: string[], key: string): string | undefined {
  const found = overrides.findLast((o) => o.slice(0, o.indexOf("=")).replace(/^[+~]+/, "") === key);
  return found?.slice(found.indexOf("=") + 1);
}

/**
 * The veRL command line of one iteration: our defaults (GRPO on the iteration's group dataset,
 * one row per task naming its k samples, run `rollout.n = k` times so the k copies share
 * veRL's per-row uid; replay of the recorded tokens; resume from the previous iteration's
 * checkpoint and train exactly one more step), then the experiment's overrides, which win on
 * the same key (Hydra rejects a key given twice). Lengths follow the overrides: setting
 * `data.max_prompt_length` also sizes `rollout.prompt_length` and the token budget per GPU.
 *
 * @example
 * verlCommand(experiment, 0).slice(0, 3) // ["python3", "-m", "verl.trainer.main_ppo"]
 * verlCommand(experiment, 0, { taskCount: 5 }).includes("actor_rollout_ref.rollout.n=4") // with rollouts.k: 4
 */
export function verlCommand(experiment: Experiment, iteration: number, options: VerlOptions = {}): string[] {
  const { training, policy, rollouts } = experiment.spec;
  const { overrides } = training;
  const { promptLength, responseLength } = verlLengths(experiment);
  const batchSize = overrideValue(overrides, "data.train_batch_size") ?? options.trainBatchSize ?? verlTrainBatchSize(experiment, options);
  // Dynamic batching packs sequences by tokens; one sequence must fit a GPU's budget.
  const tokensPerGpu = String(Number(promptLength) + Number(responseLength));
  const defaults = [
    `algorithm.adv_estimator=${ADV_ESTIMATOR[training.algorithm]}`,
    // One row per group (forge export --group-rows k), repeated k times by veRL: the k copies get
    // one uid, the GRPO group. The per-sample batch would make groups of one (docs/verl.md).
    // The group dataset's first train_batch_size rows, copied there by the train step's init
    // container once the admit step has fixed the batch: rows == train_batch_size.
    `data.train_files=${VERL_DATASET}`,
    `data.val_files=${VERL_DATASET}`,
    // The agent loop reads the row's chat (raw_prompt); the recorded prompt is checked by the
    // ForgeAgentLoop against rollout.prompt_length, so veRL need not tokenize-filter rows.
    "data.return_raw_chat=True",
    "data.filter_overlong_prompts=False",
    `data.max_prompt_length=${promptLength}`,
    `data.max_response_length=${responseLength}`,
    `data.train_batch_size=${batchSize}`,
    `actor_rollout_ref.model.path=${policy.model}`,
    `actor_rollout_ref.actor.ppo_mini_batch_size=${batchSize}`,
    "actor_rollout_ref.actor.use_dynamic_bsz=True",
    `actor_rollout_ref.actor.ppo_max_token_len_per_gpu=${tokensPerGpu}`,
    // veRL has no default engine (`name: ???`) and shards it over 2 GPUs by default; replay only
    // needs the server for weight updates, so the smallest layout that fits any GPU count.
    "actor_rollout_ref.rollout.name=vllm",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
    "actor_rollout_ref.rollout.mode=async",
    `actor_rollout_ref.rollout.n=${rollouts.k}`,
    `actor_rollout_ref.rollout.prompt_length=${promptLength}`,
    `actor_rollout_ref.rollout.response_length=${responseLength}`,
    // The recorded logprobs are returned as rollout logprobs (the behaviour policy's).
    "actor_rollout_ref.rollout.calculate_log_probs=True",
    // Replay generates nothing, so one agent-loop worker is enough, and it keeps the k copies of
    // every row in one process, in order, for any train_batch_size (a multiple of 1).
    "actor_rollout_ref.rollout.agent.num_workers=1",
    // The ForgeAgentLoop (integrations/verl) replays the recorded trajectories instead of sampling;
    // the train step's init container writes this config (verl-config).
    `actor_rollout_ref.rollout.agent.agent_loop_config_path=${AGENT_LOOP_CONFIG}`,
    "actor_rollout_ref.rollout.agent.default_agent_loop=forge_agent",
    "actor_rollout_ref.actor.checkpoint.save_contents=['model','optimizer','extra','hf_model']",
    ...(training.algorithm === "ppo" ? [`critic.model.path=${policy.model}`, `critic.ppo_max_token_len_per_gpu=${tokensPerGpu}`] : []),
    `trainer.n_gpus_per_node=${training.gpus}`,
    "trainer.nnodes=1",
    // One step per iteration, at any iteration count (veRL's fit, V1 trainer_base.py): resume
    // from the newest checkpoint (global_step_i, written by the previous iteration), so
    // global_steps starts at i; the dataset holds exactly train_batch_size rows, so
    // steps_per_epoch = 1 and current_epoch = i; the loop runs while current_epoch <
    // total_epochs and global_steps (i+1) <= total_training_steps (i+1): one step, the last,
    // which save_freq=1 saves as global_step_{i+1}. veRL's default total_epochs (30) would stop
    // every iteration from the 31st on without training or saving.
    // On the checkpoint volume the inference servers mount too, at the same path (docs/argo.md).
    `trainer.default_local_dir=${verlCheckpointDir(experiment)}`,
    "trainer.resume_mode=auto",
    `trainer.total_training_steps=${iteration + 1}`,
    `trainer.total_epochs=${iteration + 1}`,
    "trainer.save_freq=1",
    "trainer.test_freq=-1",
    "trainer.val_before_train=False",
    // veRL's trackers (training.trackers); their environment is the train step's (trainTemplate).
    `trainer.logger=[${training.trackers.map((t) => `'${t}'`).join(",")}]`,
    "trainer.project_name=openforge",
    `trainer.experiment_name=${experiment.metadata.name}`,
  ];
  const key = (override: string) => override.slice(0, override.indexOf("=")).replace(/^[+~]+/, "");
  const overridden = new Set(overrides.map(key));
  return ["python3", "-m", "verl.trainer.main_ppo", ...defaults.filter((o) => !overridden.has(key(o))), ...overrides];
}

/**
 * veRL's prompt / response lengths for the experiment: `data.max_*_length` from the overrides,
 * else the defaults; `rollout.prompt_length` / `response_length` and the export's length filter
 * follow them.
 *
 * @example
 * verlLengths(experiment) // { promptLength: "8192", responseLength: "16384" }
 */
export function verlLengths(experiment: Experiment): { promptLength: string; responseLength: string } {
  const { overrides } = experiment.spec.training;
  return {
    promptLength: overrideValue(overrides, "data.max_prompt_length") ?? String(DEFAULT_PROMPT_LENGTH),
    responseLength: overrideValue(overrides, "data.max_response_length") ?? String(DEFAULT_RESPONSE_LENGTH),
  };
}

/**
 * `data.train_batch_size` of the veRL step: the experiment's override, else one row per task.
 *
 * @example
 * verlTrainBatchSize(experiment, { taskCount: 5 }) // 5
 */
export function verlTrainBatchSize(experiment: Experiment, options: VerlOptions = {}): number {
  const override = overrideValue(experiment.spec.training.overrides, "data.train_batch_size");
  if (override !== undefined) return Number(override);
  const { tasks } = experiment.spec.environment;
  return options.taskCount ?? (Array.isArray(tasks) ? tasks.length : 8);
}

/** The per-sample batch `forge export` writes for an iteration (what the ForgeAgentLoop replays). */
export function verlBatchPath(iteration: number | string): string {
  return `${DATA_DIR}/exports/{{workflow.name}}/iteration-${iteration}/batch.parquet`;
}

/**
 * The iteration's GRPO dataset (`--group-rows k`: one row per group naming k samples), what veRL
 * trains on; `forge export` puts it beside the batch (trajectories/ groupDatasetPath).
 */
export function verlGroupDatasetPath(iteration: number | string): string {
  return `${DATA_DIR}/exports/{{workflow.name}}/iteration-${iteration}/batch.groups/dataset.parquet`;
}

/** veRL's `trainer.default_local_dir`: the same folder every iteration, so each resumes from the last. */
export function verlCheckpointDir(experiment: Experiment): string {
  return `${experiment.spec.training.checkpoints.mountPath}/{{workflow.name}}`;
}

/**
 * Where veRL writes the HF weights of training step `step` (what the weight sync loads): on the
 * checkpoint volume, a path the inference servers see the same.
 *
 * @example
 * checkpointPath(experiment, 2) // "/checkpoints/{{workflow.name}}/global_step_2/actor/huggingface"
 */
export function checkpointPath(experiment: Experiment, step: number): string {
  return `${verlCheckpointDir(experiment)}/global_step_${step}/actor/huggingface`;
}

/**
 * Retry a rollout pod unless its `main` container itself said the failure is final. `main`
 * (finish) exits 0, 75 (infrastructure: retried) or 1 / 2 (an error a retry cannot fix). Any
 * other code, or none, means the pod was disrupted before main could say: an evicted pod ends
 * Failed with the eviction message and no exit code ("-1"), an OOM kill or a killed sibling
 * container makes Argo's emissary exit 64 (or 137) in main, a lost node or a failed image pull
 * is Error. At Argo v4.1.2 (workflow/controller/operator.go): an `expression` alone implies
 * retryPolicy Always, lastRetry.exitCode is a string ("-1" without one), and the expression
 * is evaluated after the limit.
 */
export const ROLLOUT_RETRY_EXPRESSION = 'lastRetry.exitCode != "1" && lastRetry.exitCode != "2"';

/** A fresh emptyDir per name (volumes of the rollout pod, each mounted only where it is needed). */
const emptyDirs = (...names: string[]) => names.map((name) => ({ name, emptyDir: {} }));
const mount = (name: string, mountPath: string, readOnly = false) => ({ name, mountPath, ...(readOnly ? { readOnly: true } : {}) });

type RolloutContainer = IContainer & { dependencies?: string[] };

/** What the rollout pod's containers share: the experiment's paths, ids, mounts and resources. */
type RolloutPod = ReturnType<typeof rolloutPod>;

function rolloutPod(experiment: Experiment, namespace: string, gui: GuiNeeds, environment: RolloutEnvironment | undefined) {
  const { rollouts } = experiment.spec;
  const proxy = proxyUrl(experiment, namespace);
  // The task's image (task-images.ts); without a task list at hand, spec.environment.image.
  const image = environment?.image ?? experiment.spec.environment.image;
  const experimentFile = `${EXPERIMENT_DIR}/experiment.yaml`;
  // The pod derives the rollout id and group from the run, the iteration and its plan item
  // (plan.ts rolloutIdentity), which register reads from the plan on the data volume and leaves
  // in /item for verify and main; {{retries}} is the try.
  const ids = ["--run", param("run"), "--iteration", param("iteration"), "--index", param("index"), "--item", ITEM_FILE, "--retry", "{{retries}}"];
  // Only the forge containers see the data volume, each only its iteration's directory.
  const planMount = { name: "data", mountPath: PLAN_MOUNT, subPath: `plans/${param("run")}/iteration-${param("iteration")}`, readOnly: true };
  const resultsMount = { name: "data", mountPath: RESULTS_MOUNT, subPath: `results/${param("run")}/iteration-${param("iteration")}` };
  // A browser rollout's harness container runs Chromium beside the harness (gui.ts).
  const browser = gui.browser.length > 0;
  const site = gui.site.length > 0;
  const harnessResources = environment?.resources ?? rolloutResources(experiment, browser);
  const verifyResources = environment?.resources ?? rolloutResources(experiment, false);
  // The bundle, read-only, at the path its step runner names; the task image's own PATH, HOME on a volume.
  const bundleMount = mount("forge-bundle", BUNDLE_DIR, true);
  const taskEnv = [{ name: "FORGE_TASK_IMAGE", value: image }];
  const P = POD_PATHS;
  return { experiment, rollouts, proxy, image, experimentFile, ids, planMount, resultsMount, browser, site, harnessResources, verifyResources, bundleMount, taskEnv, P };
}

/** `register` (forge image, admin token): registers this try and stages the task. */
function registerContainer(pod: RolloutPod): RolloutContainer {
  const { experiment, proxy, experimentFile, ids, planMount, P } = pod;
  return {
    name: "register",
    image: experiment.spec.proxy.image,
    workingDir: FORGE_APP_DIR,
    ...forgeStep("register", "--experiment", experimentFile, "--proxy", proxy, "--workspace", P.workspace, "--state", P.state, "--control", P.control, "--plan-dir", PLAN_MOUNT, ...ids),
    env: [adminTokenEnv(experiment), ...READ_ONLY_ROOT_ENV],
    resources: smallResources,
    securityContext: restrictedContainer({ readOnlyRoot: true }),
    volumeMounts: [mount("workspace", P.workspace), mount("state", P.state), mount("control", P.control), mount("item", ITEM_DIR), mount("forge-tmp", "/tmp"), experimentMount, planMount],
  };
}

/** `harness` (the task image, no token): runs the harness. */
function harnessContainer(pod: RolloutPod): RolloutContainer {
  const { experiment, rollouts, image, browser, harnessResources, bundleMount, taskEnv, P } = pod;
  return {
    name: "harness",
    image,
    dependencies: ["register"],
    workingDir: P.workspace,
    ...bundleStep("harness", "--state", P.state, "--workspace", P.workspace, "--harness-out", P.harnessOut, "--timeout-seconds", String(rollouts.timeoutSeconds), "--sandbox", rollouts.sandbox),
    env: [...taskEnv, { name: "HOME", value: `${P.state}/home` }],
    resources: harnessResources,
    securityContext: restrictedContainer({ readOnlyRoot: false }),
    // No experiment volume (the tests are in it), no verdict or control volume, no token; and
    // never the site's log (only the site sidecar and verify mount it).
    volumeMounts: [mount("workspace", P.workspace), mount("state", P.state), mount("harness-out", P.harnessOut), bundleMount, ...(browser ? [mount("dshm", "/dev/shm")] : [])],
  };
}

/** `verify` (the task image, no token): runs the verifier on a copy of the workspace. */
function verifyContainer(pod: RolloutPod): RolloutContainer {
  const { image, experimentFile, browser, site, verifyResources, bundleMount, taskEnv, P } = pod;
  return {
    name: "verify",
    image,
    dependencies: ["harness"],
    workingDir: P.scratch,
    env: [...taskEnv, { name: "HOME", value: `${P.scratch}/home` }],
    ...bundleStep("verify", "--experiment", experimentFile, "--workspace", P.workspace, "--harness-out", P.harnessOut, "--verdict", P.verdict, "--scratch", P.scratch, "--item", ITEM_FILE, ...(site ? ["--site-log", POD_SITE_LOG_DIR] : [])),
    resources: verifyResources,
    securityContext: restrictedContainer({ readOnlyRoot: false }),
    // The workspace read-only (the verifier works on a copy); not the harness's state (its key).
    // The item read-only: which task's tests run is register's word, not the harness's.
    volumeMounts: [
      mount("workspace", P.workspace, true),
      mount("harness-out", P.harnessOut, true),
      mount("verdict", P.verdict),
      mount("scratch", P.scratch),
      mount("item", ITEM_DIR, true),
      experimentMount,
      bundleMount,
      // What the agent did on the site, read-only: the reward of a browser task comes from it.
      ...(site ? [mount("site-log", POD_SITE_LOG_DIR, true)] : []),
    ],
  };
}

/** `main` (forge image, admin token): scores and reports. */
function mainContainer(pod: RolloutPod): RolloutContainer {
  const { experiment, proxy, experimentFile, ids, resultsMount, P } = pod;
  return {
    name: "main",
    image: experiment.spec.proxy.image,
    dependencies: ["verify"],
    workingDir: FORGE_APP_DIR,
    ...forgeStep("finish", "--experiment", experimentFile, "--proxy", proxy, "--harness-out", P.harnessOut, "--verdict", P.verdict, "--control", P.control, "--results-dir", RESULTS_MOUNT, ...ids),
    env: [adminTokenEnv(experiment), ...READ_ONLY_ROOT_ENV],
    resources: smallResources,
    securityContext: restrictedContainer({ readOnlyRoot: true }),
    volumeMounts: [mount("harness-out", P.harnessOut, true), mount("verdict", P.verdict, true), mount("control", P.control), mount("item", ITEM_DIR, true), mount("forge-tmp", "/tmp"), experimentMount, resultsMount],
  };
}

/**
 * One pod per rollout, as a containerSet of four containers that share only what each needs
 * (rollout-steps.ts): `register` (forge image, admin token) registers this try and stages the
 * task; `harness` (harness image, no token) runs the harness; `verify` (harness image, no token)
 * runs the verifier on a copy of the workspace, writing to a volume the harness never had;
 * `main` (forge image, admin token) scores and reports. Containers of a pod do not share a PID
 * namespace (shareProcessNamespace stays off), so task code cannot read the token from /proc.
 * Infrastructure failures are retried as new tries (`--retry {{retries}}`). With browser tasks
 * or sites (`gui`), the site server runs beside them as a native sidecar and the harness gets
 * the browser's /dev/shm and resources (gui.ts).
 */
function rolloutTemplate(experiment: Experiment, namespace: string, gui: GuiNeeds = { browser: [], site: [] }, environment?: RolloutEnvironment): Template {
  const { rollouts } = experiment.spec;
  const pod = rolloutPod(experiment, namespace, gui, environment);
  const { planMount, site } = pod;
  const bundle = harnessImage(experiment);
  const containers = [registerContainer(pod), harnessContainer(pod), verifyContainer(pod), mainContainer(pod)];
  // The bundle's init container: copies /opt/forge into the emptyDir (Argo's executor pattern).
  const copyBundle: IContainer = {
    name: "bundle",
    image: bundle,
    command: [`${BUNDLE_DIR}/bin/busybox`, "cp", "-a", `${BUNDLE_DIR}/.`, `${BUNDLE_COPY_MOUNT}/`],
    resources: smallResources,
    securityContext: restrictedContainer({ readOnlyRoot: true }),
    volumeMounts: [mount("forge-bundle", BUNDLE_COPY_MOUNT)],
  };
  return {
    name: environment?.template ?? "rollout",
    inputs: { parameters: ["index", "run", "iteration"].map((name) => ({ name })) },
    metadata: {
      labels: { [LABEL_ROLE]: "rollout", [LABEL_EXPERIMENT]: experiment.metadata.name, [LABEL_ITERATION]: param("iteration") },
      annotations: { "openforge.dev/index": param("index") },
    },
    // Harness time plus room for registering, staging and verifying; the harness step itself
    // enforces timeoutSeconds and reports status timeout, this is the backstop.
    activeDeadlineSeconds: rollouts.timeoutSeconds + 300,
    retryStrategy: {
      limit: rollouts.infraRetries,
      retryPolicy: "Always",
      expression: ROLLOUT_RETRY_EXPRESSION,
      backoff: { duration: "10s", factor: 2, maxDuration: "10m" },
    },
    // No Kubernetes token for the harness; Argo's executor gets its own (executor.serviceAccountName).
    automountServiceAccountToken: false,
    executor: { serviceAccountName: objectNames(experiment).serviceAccount },
    securityContext: restrictedPod(),
    volumes: [...emptyDirs("workspace", "state", "harness-out", "verdict", "scratch", "control", "item", "forge-tmp", "forge-bundle"), ...guiVolumes(gui)],
    // The bundle first; the site server of a browser task's rollout before and beside the four containers (gui.ts).
    initContainers: [copyBundle, ...(site ? [siteSidecar(experiment, { planMount, index: param("index"), stepCommand: forgeStep })] : [])],
    // No in-pod container retries: register, harness and verify never fail (they leave their
    // outcome in a file) and finish retries its proxy calls itself; a failure that remains is
    // the pod's, retried as a new try above.
    // No output parameter: the result goes to the data volume (RESULTS_MOUNT), which the report
    // reads; 10,000 aggregated results would not fit an Argo parameter (docs/argo.md, "Scale").
    containerSet: { containers },
  };
}

/**
 * `forge export` of one iteration: only this experiment's rollouts of that iteration (the data
 * directory is shared by iterations and experiments), plus the GRPO dataset of one row per
 * group naming k samples (`--group-rows k`), which veRL trains on with `rollout.n = k`.
 *
 * @example
 * exportArgs(experiment, 0) // ["--data", "/data", "--format", "verl", "--group-rows", "4", …]
 */
export function exportArgs(experiment: Experiment, iteration: number | string, verl: VerlOptions = {}): string[] {
  const { k } = experiment.spec.rollouts;
  const { promptLength, responseLength } = verlLengths(experiment);
  return [
    "--data",
    DATA_DIR,
    "--format",
    "verl",
    "--group-rows",
    String(k),
    // A group needs k samples for its row; with k = 1 the default minimum of 2 would drop all.
    "--min-group-size",
    String(Math.min(2, k)),
    // Exactly one training batch of rows: veRL's steps_per_epoch is then 1 (see verlCommand).
    "--max-group-rows",
    String(verlTrainBatchSize(experiment, verl)),
    // Samples veRL's rollout lengths cannot hold are left out here (and counted), not in the step.
    "--max-prompt-length",
    promptLength,
    "--max-response-length",
    responseLength,
    "--experiment",
    experiment.metadata.name,
    "--iteration",
    String(iteration),
    "--out",
    verlBatchPath(iteration),
  ];
}

function exportTemplate(experiment: Experiment, verl: VerlOptions): Template {
  return {
    name: "export",
    inputs: { parameters: [{ name: "iteration" }] },
    metadata: { labels: { [LABEL_ROLE]: "export", [LABEL_ITERATION]: param("iteration") } },
    container: {
      name: "main",
      image: experiment.spec.proxy.image,
      workingDir: FORGE_APP_DIR,
      command: ["bun", "bin/forge.ts", "export"],
      args: exportArgs(experiment, param("iteration"), verl),
      resources: { requests: { cpu: "1", memory: "2Gi" }, limits: { memory: "8Gi" } },
      volumeMounts: [dataMount],
    },
  };
}

/**
 * The admit step: after export, how many of the iteration's groups survived with all k samples;
 * training goes on with those (`train-batch-size`, the train step's parameter) when at least
 * `training.minGroupFraction` of the groups did, and the iteration fails otherwise.
 */
function admitTemplate(experiment: Experiment): Template {
  return {
    name: "admit",
    inputs: { parameters: [{ name: "iteration" }] },
    metadata: { labels: { [LABEL_ROLE]: "admit", [LABEL_ITERATION]: param("iteration") } },
    container: {
      name: "main",
      image: experiment.spec.proxy.image,
      workingDir: FORGE_APP_DIR,
      ...forgeStep(
        "admit",
        "--experiment",
        `${EXPERIMENT_DIR}/experiment.yaml`,
        "--batch",
        verlBatchPath(param("iteration")),
        "--iteration",
        param("iteration"),
        "--workflow",
        "{{workflow.name}}",
        "--namespace",
        "{{workflow.namespace}}",
        "--out",
        "/tmp/train-batch-size",
      ),
      resources: smallResources,
      volumeMounts: [dataMount, experimentMount],
    },
    outputs: { parameters: [{ name: "train-batch-size", valueFrom: { path: "/tmp/train-batch-size" } }] },
  };
}

function trainTemplate(experiment: Experiment, iteration: number, verl: VerlOptions): Template {
  const { training } = experiment.spec;
  // The batch is what the admit step let through (groups that kept all k samples), unless the
  // experiment fixes it (then the admit step checks that many survived).
  const batchSize = overrideValue(training.overrides, "data.train_batch_size") ?? param("train-batch-size");
  const [command, ...args] = verlCommand(experiment, iteration, { ...verl, trainBatchSize: batchSize });
  return {
    name: `train-${iteration}`,
    inputs: { parameters: [{ name: "train-batch-size" }] },
    metadata: { labels: { [LABEL_ROLE]: "train", [LABEL_ITERATION]: String(iteration) } },
    // The veRL image does not contain this project: copy the ForgeAgentLoop in from the forge
    // image, with an agent-loop config pointing it at this iteration's exported batch; it also
    // checks the group dataset holds a full batch (veRL's "Train dataloader is empty!" otherwise).
    initContainers: [
      {
        name: "forge-verl",
        image: experiment.spec.proxy.image,
        workingDir: FORGE_APP_DIR,
        ...forgeStep(
          "verl-config",
          "--out",
          VERL_DIR,
          "--batch",
          verlBatchPath(iteration),
          "--experiment-name",
          experiment.metadata.name,
          "--train-batch-size",
          batchSize,
        ),
        mirrorVolumeMounts: true,
      },
      // Forge's figures of the iteration (the analyze step's) into the same TensorBoard run, at
      // the step veRL logs this iteration at; never holds up training (docs/metrics.md).
      ...(training.trackers.includes("tensorboard")
        ? [
            {
              name: "forge-figures",
              image: training.verlImage,
              command: ["sh", "-c", 'python3 -m forge_verl.figures || echo "forge figures: not written (see above)"'],
              env: [
                { name: "PYTHONPATH", value: VERL_DIR },
                { name: "FORGE_FIGURES", value: analyzeFiguresPath(iteration) },
                { name: "FORGE_FIGURES_WAIT_SECONDS", value: "0" },
                { name: "TENSORBOARD_DIR", value: tensorboardDir() },
              ],
              volumeMounts: [dataMount, { name: "forge", mountPath: VERL_DIR }],
            },
          ]
        : []),
    ],
    container: {
      name: "main",
      image: training.verlImage,
      command: [command!],
      args,
      env: [{ name: "PYTHONPATH", value: VERL_DIR }, { name: "HYDRA_FULL_ERROR", value: "1" }, ...trackerEnv(experiment)],
      resources: {
        requests: { cpu: String(8 * training.gpus), memory: `${64 * training.gpus}Gi`, "nvidia.com/gpu": String(training.gpus) },
        limits: { "nvidia.com/gpu": String(training.gpus) },
      },
      volumeMounts: [dataMount, checkpointsMount(experiment), { name: "forge", mountPath: VERL_DIR }, { name: "dshm", mountPath: "/dev/shm" }],
    },
    volumes: [
      { name: "forge", emptyDir: {} },
      // Ray and NCCL need more shared memory than the container default of 64 MiB.
      { name: "dshm", emptyDir: { medium: "Memory", sizeLimit: "16Gi" } },
    ],
    tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }],
    // No archiveLogs here: without an artifact repository Argo fails the pod for it ("You need to
    // configure artifact storage"); the pod is kept instead (podGC's labelSelector).
  };
}

/** veRL's TensorBoard directory: on the data volume, one per Workflow (one run across iterations). */
const tensorboardDir = () => `${DATA_DIR}/tensorboard/{{workflow.name}}`;

/**
 * The train step's tracker environment: TensorBoard's directory, and for W&B one run per
 * Workflow resumed by every iteration's step (WANDB_RUN_ID + WANDB_RESUME=allow, which
 * wandb.init reads: veRL 0.9.1's tracking.py passes no id), then `training.secretEnv` from Secrets.
 */
function trackerEnv(experiment: Experiment) {
  const { trackers, secretEnv } = experiment.spec.training;
  return [
    ...(trackers.includes("tensorboard") ? [{ name: "TENSORBOARD_DIR", value: tensorboardDir() }] : []),
    ...(trackers.includes("wandb")
      ? [
          { name: "WANDB_RUN_ID", value: "{{workflow.name}}" },
          { name: "WANDB_RESUME", value: "allow" },
          { name: "WANDB_DIR", value: `${DATA_DIR}/wandb/{{workflow.name}}` },
        ]
      : []),
    ...secretEnv.map((e) => ({ name: e.name, valueFrom: { secretKeyRef: { name: e.secret, key: e.key } } })),
  ];
}

/** Deletes all but the newest `training.keepCheckpoints` veRL checkpoints (veRL's own pruning only knows its process's saves). */
function pruneTemplate(experiment: Experiment): Template {
  return {
    name: "prune-checkpoints",
    metadata: { labels: { [LABEL_ROLE]: "prune" } },
    container: {
      name: "main",
      image: experiment.spec.proxy.image,
      workingDir: FORGE_APP_DIR,
      ...forgeStep("prune-checkpoints", "--dir", verlCheckpointDir(experiment), "--keep", String(experiment.spec.training.keepCheckpoints)),
      resources: smallResources,
      volumeMounts: [checkpointsMount(experiment)],
    },
  };
}

function syncTemplate(experiment: Experiment, namespace: string): Template {
  const { weightSync, checkpoints } = experiment.spec.training;
  const servers = weightSync.servers ?? experiment.spec.policy.upstreams;
  const names = objectNames(experiment);
  return {
    name: "sync",
    inputs: { parameters: [{ name: "iteration" }, { name: "checkpoint" }, { name: "policy-version" }] },
    metadata: { labels: { [LABEL_ROLE]: "sync", [LABEL_ITERATION]: param("iteration") } },
    activeDeadlineSeconds: weightSync.timeoutSeconds,
    container: {
      name: "main",
      image: experiment.spec.proxy.image,
      workingDir: FORGE_APP_DIR,
      ...forgeStep(
        "sync",
        "--proxy",
        proxyUrl(experiment, namespace),
        "--strategy",
        weightSync.strategy,
        "--checkpoint",
        param("checkpoint"),
        "--policy-version",
        param("policy-version"),
        "--namespace",
        namespace,
        "--engine",
        experiment.spec.policy.engine,
        "--timeout-seconds",
        String(weightSync.timeoutSeconds),
        ...servers.flatMap((url) => ["--server", url]),
        ...(weightSync.deployment
          ? [
              "--deployment",
              weightSync.deployment,
              "--deployment-namespace",
              inferenceNamespace(experiment, namespace),
              ...(weightSync.container ? ["--container", weightSync.container] : []),
              // A restarted server mounts the checkpoint claim at the trainer's path if it does not yet.
              "--checkpoint-claim",
              names.checkpoints,
              "--checkpoint-mount",
              checkpoints.mountPath,
            ]
          : []),
      ),
      env: [adminTokenEnv(experiment)],
      resources: smallResources,
      volumeMounts: [dataMount],
    },
  };
}

function exitTemplate(experiment: Experiment): Template {
  return {
    name: "exit-handler",
    container: {
      name: "main",
      image: experiment.spec.proxy.image,
      workingDir: FORGE_APP_DIR,
      ...forgeStep("exit", "--workflow", "{{workflow.name}}", "--namespace", "{{workflow.namespace}}", "--status", "{{workflow.status}}", "--duration", "{{workflow.duration}}"),
      resources: smallResources,
    },
  };
}

/**
 * The tasks of one iteration, generated at render time (so each iteration's veRL step knows its
 * step number). A DAG rather than a steps list: equivalent here, and its tasks are objects that
 * the Argo CRD schema validates (a steps list is a list of lists the published schema mangles).
 */
function iterationTemplate(experiment: Experiment, iteration: number, environments: RolloutEnvironment[]): Template {
  const value = String(iteration);
  const iterationArg = { name: "iteration", value };
  // Several task images: one fan-out per image (its range of the plan); else the plan's own.
  const fanOut = environments.length > 1 ? environmentFanOut(value, environments) : { tasks: fanOutTasks(value), dependencies: fanOutDependencies };
  const tasks: Task[] = [
    ...fanOut.tasks,
    {
      name: "report",
      template: "report",
      dependencies: fanOut.dependencies,
      arguments: { parameters: [{ name: "run", value: "{{workflow.name}}" }, iterationArg] },
    },
  ];
  // The iteration's analysis for the UI and Prometheus; nothing waits for it, and its failure
  // (no artifact repository, a damaged log) never stops the run.
  tasks.push({
    name: "analyze",
    template: "analyze",
    dependencies: ["report"],
    continueOn: { failed: true, error: true },
    arguments: { parameters: [{ name: "run", value: "{{workflow.name}}" }, iterationArg] },
  });
  if (experiment.spec.policy.mode === "train") {
    tasks.push({ name: "export", template: "export", dependencies: ["report"], arguments: { parameters: [iterationArg] } });
  }
  if (trains(experiment)) {
    tasks.push({ name: "admit", template: "admit", dependencies: ["export"], arguments: { parameters: [iterationArg] } });
    tasks.push({
      name: "train",
      template: `train-${iteration}`,
      // After analyze too (which continues on failure), so its figures are there for the trackers.
      dependencies: ["admit", "analyze"],
      arguments: { parameters: [{ name: "train-batch-size", value: "{{tasks.admit.outputs.parameters.train-batch-size}}" }] },
    });
    if (experiment.spec.training.weightSync.strategy !== "none") {
      tasks.push({
        name: "sync",
        template: "sync",
        dependencies: ["train"],
        arguments: {
          parameters: [iterationArg, { name: "checkpoint", value: checkpointPath(experiment, iteration + 1) }, { name: "policy-version", value: String(iteration + 1) }],
        },
      });
    }
    // The step is saved: keep the newest training.keepCheckpoints (the sync reads the newest).
    tasks.push({ name: "prune", template: "prune-checkpoints", dependencies: ["train"] });
  }
  return {
    name: `iteration-${iteration}`,
    // Bounds the rollout pods running at once (the fan-out is this template's children).
    parallelism: experiment.spec.rollouts.parallelism,
    metadata: { labels: { [LABEL_ITERATION]: value } },
    dag: { tasks },
  };
}

/**
 * Whether the workflow trains: train mode against real inference servers. With the policy
 * simulator (no upstreams) there are no weights to train or load, so an iteration records
 * and exports, and stops there.
 */
export function trains(experiment: Experiment): boolean {
  return experiment.spec.policy.mode === "train" && experiment.spec.policy.upstreams.length > 0;
}

function iterationCount(experiment: Experiment): number {
  return trains(experiment) ? experiment.spec.training.iterations : 1;
}

/** One-line summary shown in the Argo UI's workflow list; the report step appends the pass rate. */
export function describeExperiment(experiment: Experiment): string {
  const { spec } = experiment;
  const tasks = Array.isArray(spec.environment.tasks) ? `${spec.environment.tasks.length} tasks` : spec.environment.tasks;
  const iterations = iterationCount(experiment);
  return `${spec.harness.name} on ${spec.policy.model} (${spec.policy.mode}), ${tasks} × k=${spec.rollouts.k}, ${iterations} iteration${iterations === 1 ? "" : "s"}`;
}

/**
 * The WorkflowTemplate holding every template of the experiment, validated against Argo's CRD schema.
 *
 * @example
 * renderWorkflowTemplate(experiment, { namespace: "forge" }).spec.templates?.map((t) => t.name)
 */
export function renderWorkflowTemplate(experiment: Experiment, options: WorkflowOptions): WorkflowTemplate {
  const names = objectNames(experiment);
  const iterations = iterationCount(experiment);
  const environments = rolloutEnvironments(experiment, options.environments);
  const templates: Template[] = [
    {
      name: "experiment",
      dag: {
        tasks: Array.from({ length: iterations }, (_, i) => ({
          name: `iteration-${i}`,
          template: `iteration-${i}`,
          ...(i > 0 ? { dependencies: [`iteration-${i - 1}`] } : {}),
        })),
      },
    },
    ...Array.from({ length: iterations }, (_, i) => iterationTemplate(experiment, i, environments)),
    planTemplate(experiment),
    ...(environments.length > 0 ? environments.map((environment) => rolloutTemplate(experiment, options.namespace, options.gui, environment)) : [rolloutTemplate(experiment, options.namespace, options.gui)]),
    ...shardTemplates(experiment),
    reportTemplate(experiment),
    analyzeTemplate(experiment),
    exitTemplate(experiment),
  ];
  const verl = options.taskCount === undefined ? {} : { taskCount: options.taskCount };
  if (experiment.spec.policy.mode === "train") templates.push(withShardLogs(exportTemplate(experiment, verl), experiment));
  if (trains(experiment)) {
    templates.push(admitTemplate(experiment), ...Array.from({ length: iterations }, (_, i) => trainTemplate(experiment, i, verl)));
    templates.push(pruneTemplate(experiment));
    if (experiment.spec.training.weightSync.strategy !== "none") templates.push(syncTemplate(experiment, options.namespace));
  }
  const template = new WorkflowTemplate({
    metadata: {
      name: names.workflowTemplate,
      namespace: options.namespace,
      labels: baseLabels(experiment, "workflow"),
      annotations: { [ANNOTATION_DESCRIPTION]: describeExperiment(experiment) },
    },
    spec: {
      entrypoint: "experiment",
      onExit: "exit-handler",
      serviceAccountName: names.serviceAccount,
      arguments: { parameters: [{ name: "commit", value: options.commit ?? "" }] },
      // Keep failed pods for their logs; delete succeeded ones (10,000 rollout pods add up), but
      // not the train pods: their log is where veRL prints loss and KL, and the UI reads it from
      // the pod (they go with the Workflow, ttlStrategy).
      podGC: {
        strategy: "OnPodSuccess",
        deleteDelayDuration: "5m",
        labelSelector: { matchExpressions: [{ key: LABEL_ROLE, operator: "NotIn", values: ["train"] }] },
      },
      ttlStrategy: { secondsAfterSuccess: 7 * 24 * 3600 },
      podMetadata: { labels: { [LABEL_EXPERIMENT]: names.experiment, "app.kubernetes.io/part-of": "openforge" } },
      volumes: [
        { name: "data", persistentVolumeClaim: { claimName: names.data } },
        experimentVolume(experiment, options.configItems ?? []),
        ...(trains(experiment) ? [{ name: "checkpoints", persistentVolumeClaim: { claimName: names.checkpoints } }] : []),
      ],
      // Every pod restricted; only this project's own containers get a read-only root. With
      // training.async each iteration's rollouts overlap the previous step (async.ts).
      templates: (experiment.spec.training.async && trains(experiment) ? splitForAsync(templates, experiment) : templates).map((t) => restrictTemplate(t, new Set([experiment.spec.proxy.image]))),
    },
  });
  template.validate();
  return template;
}

/**
 * The Workflow that runs the experiment's WorkflowTemplate. Its name carries a hash of the
 * experiment, so an unchanged file renders byte-identically and a changed one is a new run.
 *
 * @example
 * renderWorkflow(experiment, { namespace: "forge", commit: "3f2a…" }).metadata.labels
 */
export function renderWorkflow(experiment: Experiment, options: WorkflowOptions): Workflow {
  const names = objectNames(experiment);
  const labels: Record<string, string> = { ...baseLabels(experiment, "workflow") };
  if (options.commit) labels[LABEL_COMMIT] = options.commit;
  const workflow = new Workflow({
    metadata: {
      ...(options.generateName ? { generateName: `${names.experiment}-` } : { name: names.workflow }),
      namespace: options.namespace,
      labels,
      annotations: { [ANNOTATION_DESCRIPTION]: describeExperiment(experiment), "workflows.argoproj.io/title": `experiment ${names.experiment}` },
    },
    spec: {
      workflowTemplateRef: { name: names.workflowTemplate },
      arguments: { parameters: [{ name: "commit", value: options.commit ?? "" }] },
    },
  });
  workflow.validate();
  return workflow;
}
