/**
 * The Argo CD Application that keeps the cluster in sync with `deploy/manifests`.
 */
import { Application } from "@kubernetes-models/argo-cd/argoproj.io/v1alpha1/Application";
import { MANIFESTS_DIR } from "./layout.ts";

export type ApplicationSpec = {
  name: string;
  repoURL: string;
  branch: string;
  /** Where Argo CD is installed. */
  argocdNamespace: string;
  /** Where the manifests are applied. */
  namespace: string;
};

/**
 * An Application with automated sync (prune + self-heal) over the rendered manifests.
 * Validated against Argo CD's schema.
 *
 * @example
 * buildApplication({ name: "experiments", repoURL, branch: "main", argocdNamespace: "argocd", namespace: "openforge" })
 */
export function buildApplication(spec: ApplicationSpec): Application {
  const app = new Application({
    metadata: {
      name: spec.name,
      namespace: spec.argocdNamespace,
      labels: { "app.kubernetes.io/part-of": "openforge" },
      finalizers: ["resources-finalizer.argocd.argoproj.io"],
    },
    spec: {
      project: "default",
      source: { repoURL: spec.repoURL, targetRevision: spec.branch, path: MANIFESTS_DIR, directory: { recurse: true } },
      destination: { server: "https://kubernetes.default.svc", namespace: spec.namespace },
      syncPolicy: {
        automated: { prune: true, selfHeal: true },
        syncOptions: ["CreateNamespace=true", "ApplyOutOfSyncOnly=true"],
      },
    },
  });
  app.validate();
  return app;
}
