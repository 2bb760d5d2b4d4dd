/**
 * Talking to the Kubernetes API with `@kubernetes/client-node`: loading the config, and
 * create-or-replace for exactly the kinds `forge render` produces (typed APIs for core
 * objects, CustomObjectsApi for Argo's).
 */
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  NetworkingV1Api,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from "@kubernetes/client-node";
import type { KubeObject } from "./render.ts";

export const ARGO_GROUP = "argoproj.io";
export const ARGO_VERSION = "v1alpha1";

/**
 * The kubeconfig: `$KUBECONFIG` / `~/.kube/config`, or the in-cluster service account
 * (client-node's loadFromDefault tries them in that order).
 *
 * @example
 * const kc = loadKubeConfig({ context: "kind-forge" });
 */
export function loadKubeConfig(options: { kubeconfig?: string; context?: string } = {}): KubeConfig {
  const kc = new KubeConfig();
  if (options.kubeconfig) kc.loadFromFile(options.kubeconfig);
  else kc.loadFromDefault();
  if (options.context) kc.setCurrentContext(options.context);
  if (!kc.getCurrentCluster()) {
    throw new Error("no Kubernetes cluster configured: set KUBECONFIG, pass --kubeconfig, or run inside a cluster");
  }
  return kc;
}

/** Status code of a client-node API error (0 when the server was not reached). */
export function statusOf(error: unknown): number {
  return error instanceof ApiException ? error.code : 0;
}

/** A readable message for an API error: the Status message the server sent, when there is one. */
export function describeApiError(error: unknown): string {
  if (error instanceof ApiException) {
    let body: { message?: string } | undefined;
    try {
      body = typeof error.body === "string" ? JSON.parse(error.body) : (error.body as { message?: string });
    } catch {
      body = undefined;
    }
    return `HTTP ${error.code}${body?.message ? `: ${body.message}` : ""}`;
  }
  return (error as Error).message;
}

type Ops = {
  read(name: string, ns: string): Promise<KubeObject>;
  create(ns: string, body: KubeObject): Promise<KubeObject>;
  replace(name: string, ns: string, body: KubeObject): Promise<KubeObject>;
  remove?(name: string, ns: string): Promise<unknown>;
};

/** Per-kind API calls; the casts bridge our plain objects to client-node's generated classes. */
function operations(kc: KubeConfig, kind: string): Ops {
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const net = kc.makeApiClient(NetworkingV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const any = (p: Promise<unknown>) => p as Promise<KubeObject>;
  const argo = (plural: string): Ops => ({
    read: (name, namespace) => any(custom.getNamespacedCustomObject({ group: ARGO_GROUP, version: ARGO_VERSION, namespace, plural, name })),
    create: (namespace, body) => any(custom.createNamespacedCustomObject({ group: ARGO_GROUP, version: ARGO_VERSION, namespace, plural, body })),
    replace: (name, namespace, body) =>
      any(custom.replaceNamespacedCustomObject({ group: ARGO_GROUP, version: ARGO_VERSION, namespace, plural, name, body })),
    remove: (name, namespace) => custom.deleteNamespacedCustomObject({ group: ARGO_GROUP, version: ARGO_VERSION, namespace, plural, name }),
  });
  // The generated request types differ per kind; our bodies are already validated models.
  const b = (body: KubeObject) => body as never;
  switch (kind) {
    case "ServiceAccount":
      return {
        read: (name, namespace) => any(core.readNamespacedServiceAccount({ name, namespace })),
        create: (namespace, body) => any(core.createNamespacedServiceAccount({ namespace, body: b(body) })),
        replace: (name, namespace, body) => any(core.replaceNamespacedServiceAccount({ name, namespace, body: b(body) })),
      };
    case "ConfigMap":
      return {
        read: (name, namespace) => any(core.readNamespacedConfigMap({ name, namespace })),
        create: (namespace, body) => any(core.createNamespacedConfigMap({ namespace, body: b(body) })),
        replace: (name, namespace, body) => any(core.replaceNamespacedConfigMap({ name, namespace, body: b(body) })),
      };
    case "Secret":
      return {
        read: (name, namespace) => any(core.readNamespacedSecret({ name, namespace })),
        create: (namespace, body) => any(core.createNamespacedSecret({ namespace, body: b(body) })),
        replace: (name, namespace, body) => any(core.replaceNamespacedSecret({ name, namespace, body: b(body) })),
      };
    case "PersistentVolumeClaim":
      return {
        read: (name, namespace) => any(core.readNamespacedPersistentVolumeClaim({ name, namespace })),
        create: (namespace, body) => any(core.createNamespacedPersistentVolumeClaim({ namespace, body: b(body) })),
        replace: (name, namespace, body) => any(core.replaceNamespacedPersistentVolumeClaim({ name, namespace, body: b(body) })),
      };
    case "Service":
      return {
        read: (name, namespace) => any(core.readNamespacedService({ name, namespace })),
        create: (namespace, body) => any(core.createNamespacedService({ namespace, body: b(body) })),
        replace: (name, namespace, body) => any(core.replaceNamespacedService({ name, namespace, body: b(body) })),
      };
    case "Deployment":
      return {
        read: (name, namespace) => any(apps.readNamespacedDeployment({ name, namespace })),
        create: (namespace, body) => any(apps.createNamespacedDeployment({ namespace, body: b(body) })),
        replace: (name, namespace, body) => any(apps.replaceNamespacedDeployment({ name, namespace, body: b(body) })),
      };
    case "NetworkPolicy":
      return {
        read: (name, namespace) => any(net.readNamespacedNetworkPolicy({ name, namespace })),
        create: (namespace, body) => any(net.createNamespacedNetworkPolicy({ namespace, body: b(body) })),
        replace: (name, namespace, body) => any(net.replaceNamespacedNetworkPolicy({ name, namespace, body: b(body) })),
      };
    case "Role":
      return {
        read: (name, namespace) => any(rbac.readNamespacedRole({ name, namespace })),
        create: (namespace, body) => any(rbac.createNamespacedRole({ namespace, body: b(body) })),
        replace: (name, namespace, body) => any(rbac.replaceNamespacedRole({ name, namespace, body: b(body) })),
      };
    case "RoleBinding":
      return {
        read: (name, namespace) => any(rbac.readNamespacedRoleBinding({ name, namespace })),
        create: (namespace, body) => any(rbac.createNamespacedRoleBinding({ namespace, body: b(body) })),
        replace: (name, namespace, body) => any(rbac.replaceNamespacedRoleBinding({ name, namespace, body: b(body) })),
      };
    case "WorkflowTemplate":
      return argo("workflowtemplates");
    case "Workflow":
      return argo("workflows");
    default:
      throw new Error(`forge submit does not know how to create a ${kind}`);
  }
}

export type ApplyResult = { kind: string; name: string; action: "created" | "replaced" | "kept" | "rerun" };

/**
 * Creates the object, or replaces it when it exists (create-or-replace, like `kubectl apply`
 * for objects we own entirely). A PersistentVolumeClaim is kept as it is (its spec is
 * immutable and it holds the recorded data); a Workflow that exists is deleted and created
 * again, i.e. submitted anew. Returns what was done and the object the server returned.
 *
 * @example
 * await applyObject(kc, deployment) // { result: { kind: "Deployment", name: "quick-proxy", action: "created" }, object }
 */
export async function applyObject(kc: KubeConfig, object: KubeObject): Promise<{ result: ApplyResult; object: KubeObject }> {
  const ops = operations(kc, object.kind);
  const namespace = object.metadata.namespace ?? "default";
  const name = object.metadata.name;
  const where = `${object.kind} ${namespace}/${name ?? object.metadata.generateName + "…"}`;
  try {
    const created = await ops.create(namespace, object);
    return { result: { kind: object.kind, name: created.metadata.name ?? "", action: "created" }, object: created };
  } catch (error) {
    if (statusOf(error) !== 409 || !name) throw new Error(`creating ${where}: ${describeApiError(error)}`);
  }
  try {
    const existing = await ops.read(name, namespace);
    if (object.kind === "PersistentVolumeClaim") return { result: { kind: object.kind, name, action: "kept" }, object: existing };
    if (object.kind === "Workflow" && ops.remove) {
      await ops.remove(name, namespace);
      const created = await ops.create(namespace, object);
      return { result: { kind: object.kind, name, action: "rerun" }, object: created };
    }
    const body = structuredClone(object) as KubeObject & { metadata: { resourceVersion?: string }; spec?: Record<string, unknown> };
    body.metadata.resourceVersion = (existing.metadata as { resourceVersion?: string }).resourceVersion;
    if (object.kind === "Service") {
      // clusterIP is assigned by the server and immutable: carry it over.
      const spec = (existing as { spec?: { clusterIP?: string; clusterIPs?: string[] } }).spec;
      body.spec = { ...body.spec, clusterIP: spec?.clusterIP, clusterIPs: spec?.clusterIPs };
    }
    const replaced = await ops.replace(name, namespace, body);
    return { result: { kind: object.kind, name, action: "replaced" }, object: replaced };
  } catch (error) {
    throw new Error(`replacing ${where}: ${describeApiError(error)}`);
  }
}

/** Creates a Secret only when it does not exist yet (never overwrites a token in use). */
export async function ensureSecret(kc: KubeConfig, secret: KubeObject): Promise<"created" | "kept"> {
  const ops = operations(kc, "Secret");
  try {
    await ops.create(secret.metadata.namespace ?? "default", secret);
    return "created";
  } catch (error) {
    if (statusOf(error) === 409) return "kept";
    throw new Error(`creating Secret ${secret.metadata.namespace}/${secret.metadata.name}: ${describeApiError(error)}`);
  }
}

/**
 * The API server's endpoint IPs as /32 CIDRs (the `kubernetes` Endpoints in `default`), for
 * the NetworkPolicy rule that lets Argo's executor reach it. Empty when they cannot be read.
 */
export async function discoverApiServerCidrs(kc: KubeConfig): Promise<string[]> {
  try {
    const endpoints = await kc.makeApiClient(CoreV1Api).readNamespacedEndpoints({ name: "kubernetes", namespace: "default" });
    const ips = (endpoints.subsets ?? []).flatMap((subset) => (subset.addresses ?? []).map((address) => address.ip));
    return [...new Set(ips)].sort().map((ip) => (ip.includes(":") ? `${ip}/128` : `${ip}/32`));
  } catch {
    return [];
  }
}

/** Merges annotations into a Workflow (the report step's pass rate, the exit handler's summary). */
export async function annotateWorkflow(kc: KubeConfig, namespace: string, name: string, annotations: Record<string, string>): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  await custom.patchNamespacedCustomObject(
    { group: ARGO_GROUP, version: ARGO_VERSION, namespace, plural: "workflows", name, body: { metadata: { annotations } } },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );
}
