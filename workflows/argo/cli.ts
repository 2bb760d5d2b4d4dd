/**
 * `forge render`, `forge submit`, `forge watch`: an experiment to Kubernetes manifests, onto a
 * cluster, and followed to the end (docs/argo.md).
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseCommand, UsageError } from "../../lib/index.ts";
import { ExperimentError, parseExperimentFile, type Experiment } from "../../schemas/index.ts";
import { discoverApiServerCidrs, loadKubeConfig } from "./kube.ts";
import type { KubeConfig } from "@kubernetes/client-node";
import { listTaskIds, planRollouts } from "./plan.ts";
import { manifestsToYaml, renderExperiment, type KubeObject } from "./render.ts";
import { argoUiLink, submitExperiment } from "./submit.ts";
import { formatProgress, watchWorkflow } from "./watch.ts";

const RENDER_USAGE = `
usage: forge render EXPERIMENT [--namespace NS] [--out DIR] [--commit SHA] [--api-server-cidr CIDR]... [--json]
       forge render EXPERIMENT --plan

Prints the experiment's Kubernetes manifests as multi-document YAML (kubectl apply -f -able):
RBAC, data volume, experiment ConfigMap, proxy Deployment + Service, NetworkPolicy,
Argo WorkflowTemplate and Workflow. The admin-token Secret is not rendered (forge submit creates it).

  --namespace NS   namespace of every object (default: default)
  --out DIR        write one file per object into DIR instead of printing
  --commit SHA     record the commit the experiment came from (parameter and label)
  --api-server-cidr CIDR
                   the API server's endpoint IP(s), e.g. 172.18.0.2/32 (kubectl get endpoints
                   kubernetes -n default): the NetworkPolicy lets Argo's executor in the rollout
                   pods reach it. forge submit finds it by itself.
  --json           print a JSON List instead of YAML
  --plan           print the rollout plan (JSON: tasks × k) instead, the list the plan step writes to the data volume
`;

/**
 * The cluster config from `--kubeconfig` / `--context` (else KUBECONFIG, ~/.kube/config, or
 * in-cluster). A kubeconfig flag that names no readable config is a usage error naming it.
 */
function clusterConfig(command: string, values: { kubeconfig?: string; context?: string }): KubeConfig {
  const file = values.kubeconfig;
  if (file !== undefined && !existsSync(file)) throw new UsageError(`forge ${command}: --kubeconfig ${file}: no such file`);
  try {
    return loadKubeConfig({ kubeconfig: file, context: values.context });
  } catch (error) {
    if (file !== undefined) throw new UsageError(`forge ${command}: --kubeconfig ${file}: ${(error as Error).message}`);
    throw error;
  }
}

const CLUSTER_FLAGS = {
  namespace: { type: "string" },
  kubeconfig: { type: "string" },
  context: { type: "string" },
  "argo-ui": { type: "string" },
  json: { type: "boolean" },
} as const;

const SUBMIT_USAGE = `
usage: forge submit EXPERIMENT [--namespace NS] [--kubeconfig FILE] [--context NAME] [--argo-ui URL] [--commit SHA] [--json]

Creates or replaces the experiment's objects on the cluster (kubeconfig, or in-cluster) and
starts its Workflow (an existing one of the same name is run again). Prints the workflow name
and, with --argo-ui, its Argo UI link. Follow it with: forge watch WORKFLOW.
`;

const WATCH_USAGE = `
usage: forge watch WORKFLOW [--namespace NS] [--kubeconfig FILE] [--context NAME] [--argo-ui URL]
                            [--argo-server URL [--argo-token TOKEN]] [--json]

Follows a workflow, and the child workflows of its split iterations, until it finishes: pods
succeeded / running / failed, rollouts done, pass rate. Resumes when a watch drops. Reads
compressed node status itself; offloaded node status (persistence.nodeStatusOffLoad) and
archived workflows only through the Argo Server: --argo-server (e.g. https://localhost:2746
after kubectl -n argo port-forward svc/argo-server 2746) with --argo-token or $ARGO_TOKEN.
Exit code 0 when it Succeeded, 1 when it Failed or Errored.
`;

function loadExperiment(path: string | undefined, usage: string, name: string): { experiment: Experiment; path: string } {
  if (!path) throw new UsageError(`forge ${name}: EXPERIMENT is required\n\n${usage.trim()}`);
  try {
    return { experiment: parseExperimentFile(path), path };
  } catch (error) {
    if (error instanceof ExperimentError) throw new UsageError(error.message);
    throw error;
  }
}

function fileName(index: number, object: KubeObject): string {
  return `${String(index).padStart(2, "0")}-${object.kind.toLowerCase()}-${object.metadata.name ?? object.metadata.generateName ?? "object"}.yaml`;
}

/**
 * `forge render EXPERIMENT`.
 *
 * @example
 * await renderCommand(["examples/quickstart/experiment.yaml", "--namespace", "forge"]); // YAML on stdout
 */
export async function renderCommand(argv: string[]): Promise<number> {
  const args = parseCommand(
    {
      name: "render",
      usage: RENDER_USAGE,
      allowPositionals: true,
      options: {
        namespace: { type: "string" },
        out: { type: "string" },
        commit: { type: "string" },
        "api-server-cidr": { type: "string", multiple: true },
        json: { type: "boolean" },
        plan: { type: "boolean" },
      },
    },
    argv,
  );
  if (!args) return 0;
  const { experiment, path } = loadExperiment(args.positionals[0], RENDER_USAGE, "render");
  const namespace = args.values.namespace ?? "default";
  if (args.values.plan) {
    const plan = planRollouts({ taskIds: listTaskIds(experiment, dirname(path)), k: experiment.spec.rollouts.k });
    console.log(JSON.stringify(plan, null, args.values.json ? undefined : 2));
    return 0;
  }
  const apiServerCidrs = args.values["api-server-cidr"] ?? [];
  if (apiServerCidrs.length === 0) {
    console.error("forge render: no --api-server-cidr: the rollout NetworkPolicy will block Argo's executor from the API server (rollout outputs are lost); pass it, or use forge submit");
  }
  const objects = renderExperiment(experiment, { namespace, experimentPath: path, commit: args.values.commit, apiServerCidrs });
  if (args.values.out) {
    mkdirSync(args.values.out, { recursive: true });
    objects.forEach((object, index) => writeFileSync(join(args.values.out!, fileName(index, object)), manifestsToYaml([object])));
    console.error(`wrote ${objects.length} manifests to ${args.values.out}`);
    return 0;
  }
  if (args.values.json) console.log(JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }, null, 2));
  else process.stdout.write(manifestsToYaml(objects));
  return 0;
}

/**
 * `forge submit EXPERIMENT`.
 *
 * @example
 * await submitCommand(["examples/quickstart/experiment.yaml", "--namespace", "forge", "--argo-ui", "https://argo.example"]);
 */
export async function submitCommand(argv: string[]): Promise<number> {
  const args = parseCommand({ name: "submit", usage: SUBMIT_USAGE, allowPositionals: true, options: { ...CLUSTER_FLAGS, commit: { type: "string" } } }, argv);
  if (!args) return 0;
  const { experiment, path } = loadExperiment(args.positionals[0], SUBMIT_USAGE, "submit");
  const kc = clusterConfig("submit", args.values);
  const namespace = args.values.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? "default";
  const apiServerCidrs = await discoverApiServerCidrs(kc);
  if (apiServerCidrs.length === 0) console.error("forge submit: could not read the API server's endpoints (default/kubernetes): rollout pods' NetworkPolicy will not let Argo's executor report outputs");
  const objects = renderExperiment(experiment, { namespace, experimentPath: path, commit: args.values.commit, apiServerCidrs });
  const json = args.values.json ?? false;
  const result = await submitExperiment(kc, experiment, objects, {
    namespace,
    argoUi: args.values["argo-ui"],
    onApplied: json ? undefined : (r) => console.error(`${r.action.padEnd(8)} ${r.kind}/${r.name}`),
  });
  if (json) console.log(JSON.stringify(result));
  else {
    console.log(result.workflow);
    if (result.uiUrl) console.log(result.uiUrl);
    console.error(`follow it with: forge watch ${result.workflow} --namespace ${namespace}`);
  }
  return 0;
}

/**
 * `forge watch WORKFLOW`.
 *
 * @example
 * process.exitCode = await watchCommand(["quick-1a2b3c4d", "--namespace", "forge"]);
 */
export async function watchCommand(argv: string[]): Promise<number> {
  const args = parseCommand({ name: "watch", usage: WATCH_USAGE, allowPositionals: true, options: { ...CLUSTER_FLAGS, "argo-server": { type: "string" }, "argo-token": { type: "string" } } }, argv);
  if (!args) return 0;
  const name = args.positionals[0];
  if (!name) throw new UsageError(`forge watch: WORKFLOW is required\n\n${WATCH_USAGE.trim()}`);
  const kc = clusterConfig("watch", args.values);
  const namespace = args.values.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? "default";
  const json = args.values.json ?? false;
  if (args.values["argo-ui"] && !json) console.error(argoUiLink(args.values["argo-ui"], namespace, name));
  const tty = process.stderr.isTTY && !json;
  let previous = "";
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once("SIGINT", stop);
  try {
    const server = args.values["argo-server"];
    const token = args.values["argo-token"] ?? process.env.ARGO_TOKEN;
    const final = await watchWorkflow(kc, {
      namespace,
      name,
      ...(server ? { argoServer: { url: server, ...(token ? { token: token.replace(/^Bearer\s+/i, "") } : {}) } } : {}),
      signal: controller.signal,
      onProgress: (progress) => {
        const line = formatProgress(progress);
        if (line === previous) return;
        previous = line;
        if (json) console.log(JSON.stringify({ event: "progress", ...progress }));
        else if (tty) process.stderr.write(`\r\x1b[2K${line}`);
        else console.error(line);
      },
      onReconnect: (how, rv) => {
        if (json) console.log(JSON.stringify({ event: "reconnect", how, resourceVersion: rv }));
        else console.error(`${tty ? "\n" : ""}watch ${how === "relist" ? "expired (410 Gone): listed again" : "dropped: resuming"} from resourceVersion ${rv}`);
      },
    });
    if (tty) process.stderr.write("\n");
    if (controller.signal.aborted) {
      console.error(`stopped watching ${name} (the workflow keeps running)`);
      return 130;
    }
    if (json) console.log(JSON.stringify({ event: "final", ...final }));
    else console.log(`${final.name}: ${final.phase}${final.passRate !== undefined ? `, pass rate ${final.passRate}` : ""}${final.message ? ` (${final.message})` : ""}`);
    return final.phase === "Succeeded" ? 0 : 1;
  } finally {
    process.off("SIGINT", stop);
  }
}
