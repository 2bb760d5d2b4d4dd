/**
 * `forge submit`: create-or-replace every rendered object in order, the proxy's admin-token
 * Secret first (generated once, kept afterwards), and return the Workflow's name and UI link.
 */
import { randomBytes } from "node:crypto";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Experiment } from "../../schemas/index.ts";
import { applyObject, ensureSecret, type ApplyResult } from "./kube.ts";
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
