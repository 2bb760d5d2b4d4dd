/**
 * Object names and labels shared by every rendered manifest, so the proxy Service, the
 * NetworkPolicy selectors and the Argo UI filters agree on one spelling.
 */
import { createHash } from "node:crypto";
import type { Experiment } from "../../schemas/index.ts";

export const LABEL_EXPERIMENT = "openforge.dev/experiment";
export const LABEL_ITERATION = "openforge.dev/iteration";
export const LABEL_ROLE = "openforge.dev/role";
export const LABEL_COMMIT = "openforge.dev/commit";
export const ANNOTATION_PASS_RATE = "openforge.dev/pass-rate";
export const ANNOTATION_DESCRIPTION = "workflows.argoproj.io/description";

/** Where this project lives inside the forge image (see docs/argo.md, "Images"). */
export const FORGE_APP_DIR = "/app";
export const DATA_DIR = "/data";
export const EXPERIMENT_DIR = "/experiment";

/** Where each volume is mounted in the rollout pod (workflow.ts mounts them, the steps default to them). */
export const POD_PATHS = {
  /** The workspace: register and harness write it, verify reads it. */
  workspace: "/workspace",
  /** The harness's state (its invocation with the rollout's key, its HOME): register and harness only. */
  state: "/forge",
  /** What the harness step observed (exit code, log): harness writes, verify and finish read. */
  harnessOut: "/harness-out",
  /** The verifier's output ($FORGE_LOGS, its exit status): verify writes, finish reads. */
  verdict: "/verdict",
  /** The verifier's scratch (its tests, the workspace copy, HOME): verify only. */
  scratch: "/verify",
  /** Registration outcome and result: register and finish only (the admin-token containers). */
  control: "/control",
} as const;

/**
 * Names of the objects rendered for one experiment.
 *
 * @example
 * objectNames(experiment).proxyService // "quick-proxy"
 */
export function objectNames(experiment: Experiment) {
  const name = experiment.metadata.name;
  return {
    experiment: name,
    workflowTemplate: name,
    workflow: `${name}-${specHash(experiment)}`,
    proxy: `${name}-proxy`,
    proxyService: `${name}-proxy`,
    networkPolicy: `${name}-rollouts`,
    data: `${name}-data`,
    checkpoints: `${name}-checkpoints`,
    config: `${name}-experiment`,
    adminSecret: `${name}-admin`,
    serviceAccount: `${name}-workflow`,
  };
}

/** Short stable hash of the experiment: same file → same Workflow name (byte-stable renders). */
export function specHash(experiment: Experiment): string {
  return createHash("sha256").update(JSON.stringify(experiment)).digest("hex").slice(0, 8);
}

/** Labels every object of the experiment carries. */
export function baseLabels(experiment: Experiment, role: string): Record<string, string> {
  return { ...(experiment.metadata.labels ?? {}), "app.kubernetes.io/part-of": "openforge", [LABEL_EXPERIMENT]: experiment.metadata.name, [LABEL_ROLE]: role };
}

/** In-cluster URL of the experiment's proxy. */
export function proxyUrl(experiment: Experiment, namespace: string): string {
  return `http://${objectNames(experiment).proxyService}.${namespace}.svc:${experiment.spec.proxy.port}`;
}
