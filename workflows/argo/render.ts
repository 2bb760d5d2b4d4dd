/**
 * `forge render`: an experiment → every Kubernetes object it needs, in apply order, as typed
 * and validated models; and those objects as multi-document YAML for `kubectl apply -f -`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { stringify } from "yaml";
import type { Experiment } from "../../schemas/index.ts";
import {
  mountedSimulatorScript,
  renderCheckpointVolumes,
  renderDataVolume,
  renderExperimentConfig,
  renderProxyDeployment,
  renderProxyService,
  renderRolloutNetworkPolicy,
  renderSyncRbac,
  renderWorkflowRbac,
} from "./cluster.ts";
import { loadExperimentTasks } from "../tasks/index.ts";
import { checkGuiExperiment, guiNeeds } from "./gui.ts";
import { renderProxyStatefulSet } from "./proxy-shards.ts";
import { renderWorkflow, renderWorkflowTemplate } from "./workflow.ts";
import { taskEnvironments } from "./task-images.ts";

/** Any rendered object: what the Kubernetes API accepts (apiVersion, kind, metadata, …). */
export type KubeObject = { apiVersion: string; kind: string; metadata: { name?: string; generateName?: string; namespace?: string; labels?: Record<string, string> }; [key: string]: unknown };

export type RenderOptions = {
  namespace: string;
  /** The experiment file; task paths are resolved against its directory. */
  experimentPath: string;
  commit?: string;
  generateName?: boolean;
  /**
   * Endpoint IPs (CIDRs) of the Kubernetes API server, which Argo's executor in each rollout
   * pod must reach; without them the NetworkPolicy blocks it (forge submit discovers them).
   */
  apiServerCidrs?: string[];
};

/**
 * The experiment's files as they are mounted at /experiment in the cluster: the experiment
 * (defaults filled in, task paths rewritten to `tasks/` or `tasks.jsonl`) and its task files.
 *
 * @example
 * collectExperimentFiles(experiment, "examples/quickstart/experiment.yaml").keys() // "experiment.yaml", "tasks/count/instruction.md", …
 */
export function collectExperimentFiles(experiment: Experiment, experimentPath: string): Map<string, Uint8Array> {
  const baseDir = dirname(resolve(experimentPath));
  const files = new Map<string, Uint8Array>();
  const mounted = structuredClone(experiment);
  const tasks = experiment.spec.environment.tasks;
  if (typeof tasks === "string") {
    const source = resolve(baseDir, tasks);
    let stat;
    try {
      stat = statSync(source);
    } catch {
      throw new Error(`${experimentPath}: spec.environment.tasks: ${source} does not exist (paths are relative to the experiment file)`);
    }
    if (stat.isDirectory()) {
      for (const file of walk(source)) files.set(`tasks/${relative(source, file).split("\\").join("/")}`, readFileSync(file));
      mounted.spec.environment.tasks = "tasks";
    } else {
      files.set("tasks.jsonl", readFileSync(source));
      mounted.spec.environment.tasks = "tasks.jsonl";
    }
  }
  const script = experiment.spec.policy.simulator.script;
  if (script) {
    const name = mountedSimulatorScript(script);
    files.set(name, readFileSync(resolve(baseDir, script)));
    mounted.spec.policy.simulator.script = name;
  }
  files.set("experiment.yaml", new TextEncoder().encode(stringify(mounted)));
  return files;
}

function* walk(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else if (entry.isFile()) yield path;
  }
}

/**
 * Every object of the experiment, validated, in the order `kubectl apply` should create them.
 *
 * @example
 * const objects = renderExperiment(experiment, { namespace: "forge", experimentPath });
 * objects.map((o) => o.kind) // ServiceAccount, Role, RoleBinding, PersistentVolumeClaim, ConfigMap, …, Workflow
 */
export function renderExperiment(experiment: Experiment, options: RenderOptions): KubeObject[] {
  const { namespace } = options;
  const { config, items } = renderExperimentConfig(experiment, namespace, collectExperimentFiles(experiment, options.experimentPath));
  // Browser tasks and sites change the rollout pod (gui.ts); the harness image must carry Chromium.
  const tasks = loadExperimentTasks(experiment, dirname(options.experimentPath));
  const gui = guiNeeds(tasks);
  checkGuiExperiment(experiment, gui);
  const objects = [
    ...renderWorkflowRbac(experiment, namespace),
    ...renderSyncRbac(experiment, namespace),
    renderDataVolume(experiment, namespace),
    ...renderCheckpointVolumes(experiment, namespace),
    config,
    // One proxy (a Deployment), or N shards with a volume each (a StatefulSet): proxy-shards.ts.
    ...(experiment.spec.proxy.shards > 1 ? renderProxyStatefulSet(experiment, namespace, items) : [renderProxyDeployment(experiment, namespace, items)]),
    renderProxyService(experiment, namespace),
    renderRolloutNetworkPolicy(experiment, namespace, options.apiServerCidrs),
    // Each task's image and resources (task-images.ts), in the plan's order.
    renderWorkflowTemplate(experiment, { namespace, commit: options.commit, configItems: items, taskCount: tasks.length, gui, environments: taskEnvironments(experiment, tasks, gui.browser.length > 0) }),
    renderWorkflow(experiment, { namespace, commit: options.commit, generateName: options.generateName }),
  ];
  // toJSON drops undefined fields, so the YAML and the API bodies carry only what was set.
  return objects.map((object) => object.toJSON() as KubeObject);
}

/**
 * Multi-document YAML, deterministic (same experiment → same bytes).
 *
 * @example
 * process.stdout.write(manifestsToYaml(renderExperiment(experiment, options)));
 */
export function manifestsToYaml(objects: KubeObject[]): string {
  return objects.map((object) => stringify(object, { lineWidth: 0, aliasDuplicateObjects: false })).join("---\n");
}
