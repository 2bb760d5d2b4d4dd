/**
 * `forge submit`: create-or-replace every rendered object in order, the proxy's admin-token
 * Secret first (generated once, kept afterwards), and return the Workflow's name and UI link.
 */
import { randomBytes } from "node:crypto";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Experiment } from "../../schemas/index.ts";
import { applyObject, ensureSecret, serverVersion, type ApplyResult } from "./kube.ts";
import { baseLabels, objectNames } from "./names.ts";
import type { KubeObject } from "./render.ts";

export type SubmitResult = { workflow: string; namespace: string; uiUrl?: string; applied: ApplyResult[]; secret: "created" | "kept" };

/** The admin-token Secret (not part of `forge render`: a token does not belong in git). */
export function adminSecret(experiment: Experiment, namespace: string, token = randomBytes(24).toString("hex")): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: objectNames(experiment).adminSecret, namespace, labels: baseLabels(experiment, "secret") },
    type: "Opaque",
    stringData: { token },
  };
}

/** The Argo UI page of a workflow. */
/**
 * Native sidecars (init containers with `restartPolicy: Always`, KEP-753) are on by default from
 * Kubernetes 1.29 (the `SidecarContainers` feature gate: alpha in 1.28, beta in 1.29, GA in
 * 1.33). An older API server drops the field, and a browser task's site sidecar would then be a
 * plain init container that never exits: the pod would wait in Init until its deadline.
 */
export const NATIVE_SIDECAR_MIN_VERSION = { major: 1, minor: 29 } as const;

/** The init containers of the rendered templates that are native sidecars (`template/container`). */
export function nativeSidecars(objects: KubeObject[]): string[] {
  const templates = objects.filter((o) => o.kind === "WorkflowTemplate").flatMap((o) => ((o.spec as { templates?: { name: string; initContainers?: { name: string; restartPolicy?: string }[] }[] }).templates ?? []));
  return templates.flatMap((t) => (t.initContainers ?? []).filter((c) => c.restartPolicy === "Always").map((c) => `${t.name}/${c.name}`));
}

export function argoUiLink(base: string, namespace: string, workflow: string): string {
  return `${base.replace(/\/+$/, "")}/workflows/${namespace}/${workflow}`;
}

/**
 * Submits rendered objects to the cluster `kc` points at.
 *
 * @example
 * const { workflow, uiUrl } = await submitExperiment(kc, experiment, objects, { namespace: "forge", argoUi: "https://argo.example" });
 */
export async function submitExperiment(
  kc: KubeConfig,
  experiment: Experiment,
  objects: KubeObject[],
  options: { namespace: string; argoUi?: string; onApplied?: (result: ApplyResult) => void },
): Promise<SubmitResult> {
  const sidecars = nativeSidecars(objects);
  if (sidecars.length > 0) {
    const version = await serverVersion(kc);
    const { major, minor } = NATIVE_SIDECAR_MIN_VERSION;
    if (!(version.major > major || (version.major === major && version.minor >= minor))) {
      throw new Error(
        `the cluster runs Kubernetes ${version.gitVersion}; the rollout pods of browser tasks run the site server as a native sidecar (${sidecars.join(", ")}: an init container with restartPolicy Always), ` +
          `which needs Kubernetes ≥ ${major}.${minor} (docs/argo.md, "GUI rollouts"); nothing was submitted`,
      );
    }
  }
  const secret = await ensureSecret(kc, adminSecret(experiment, options.namespace));
  const applied: ApplyResult[] = [];
  let workflow = "";
  for (const object of objects) {
    const { result } = await applyObject(kc, object);
    applied.push(result);
    options.onApplied?.(result);
    if (object.kind === "Workflow") workflow = result.name;
  }
  if (!workflow) throw new Error("the rendered objects contain no Workflow");
  return {
    workflow,
    namespace: options.namespace,
    uiUrl: options.argoUi ? argoUiLink(options.argoUi, options.namespace, workflow) : undefined,
    applied,
    secret,
  };
}
