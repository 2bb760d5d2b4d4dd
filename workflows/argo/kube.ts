/**
 * Talking to the Kubernetes API with `@kubernetes/client-node`: loading the config, and
 * create-or-replace for exactly the kinds `forge render` produces (KubernetesObjectApi, which
 * finds each kind's resource by API discovery, core and Argo alike).
 */
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig, KubernetesObjectApi, PatchStrategy, setHeaderOptions, VersionApi } from "@kubernetes/client-node";
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

/**
 * The kinds `forge render` produces, the only ones `forge submit` creates. client-node's
 * KubernetesObjectApi would take any kind (it finds the resource by API discovery); an object of
 * another kind is refused with its name rather than sent.
 */
const SUBMITTED_KINDS = new Set([
  "ServiceAccount",
  "ConfigMap",
  "Secret",
  "PersistentVolumeClaim",
  // The checkpoint volume shared with inference servers in another namespace (cluster.ts).
  "PersistentVolume",
  "Service",
  "Deployment",
  // The proxy's shards (proxy-shards.ts), with a volume each.
  "StatefulSet",
  "NetworkPolicy",
  "Role",
  "RoleBinding",
  "WorkflowTemplate",
  "Workflow",
]);

// One client per config: it caches the discovered resources, so a submit asks once per group.
const objectApis = new WeakMap<KubeConfig, KubernetesObjectApi>();

/** client-node's generic object client for `object`'s kind; the casts bridge our validated models to its types. */
function objectClient(kc: KubeConfig, kind: string) {
  if (!SUBMITTED_KINDS.has(kind)) throw new Error(`forge submit does not know how to create a ${kind}`);
  const client = objectApis.get(kc) ?? objectApis.set(kc, KubernetesObjectApi.makeApiClient(kc)).get(kc)!;
  const header = (name: string, namespace: string, like: KubeObject) => ({ apiVersion: like.apiVersion, kind: like.kind, metadata: { name, namespace } });
  return {
    read: (name: string, namespace: string, like: KubeObject) => client.read(header(name, namespace, like)) as Promise<KubeObject>,
    create: (namespace: string, body: KubeObject) => client.create({ ...body, metadata: { ...body.metadata, namespace } } as never) as Promise<KubeObject>,
    replace: (namespace: string, body: KubeObject) => client.replace({ ...body, metadata: { ...body.metadata, namespace } } as never) as Promise<KubeObject>,
    remove: (name: string, namespace: string, like: KubeObject) => client.delete(header(name, namespace, like)),
  };
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
  const ops = objectClient(kc, object.kind);
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
    const existing = await ops.read(name, namespace, object);
    if (object.kind === "PersistentVolumeClaim" || object.kind === "PersistentVolume") return { result: { kind: object.kind, name, action: "kept" }, object: existing };
    if (object.kind === "Workflow") {
      await ops.remove(name, namespace, object);
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
    const replaced = await ops.replace(namespace, body);
    return { result: { kind: object.kind, name, action: "replaced" }, object: replaced };
  } catch (error) {
    throw new Error(`replacing ${where}: ${describeApiError(error)}`);
  }
}

/** Creates a Secret only when it does not exist yet (never overwrites a token in use). */
export async function ensureSecret(kc: KubeConfig, secret: KubeObject): Promise<"created" | "kept"> {
  const ops = objectClient(kc, "Secret");
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

/**
 * The API server's version (`GET /version`: major, minor as strings; a provider may append to
 * the minor, "29+" on GKE) as numbers.
 *
 * @example
 * await serverVersion(kc) // { major: 1, minor: 31, gitVersion: "v1.31.2" }
 */
export async function serverVersion(kc: KubeConfig): Promise<{ major: number; minor: number; gitVersion: string }> {
  let info;
  try {
    info = await kc.makeApiClient(VersionApi).getCode();
  } catch (error) {
    throw new Error(`reading the API server's version (GET /version): ${describeApiError(error)}`);
  }
  return { major: Number.parseInt(info.major, 10), minor: Number.parseInt(info.minor, 10), gitVersion: info.gitVersion };
}

/** Merges annotations into a Workflow (the report step's pass rate, the exit handler's summary). */
export async function annotateWorkflow(kc: KubeConfig, namespace: string, name: string, annotations: Record<string, string>): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  await custom.patchNamespacedCustomObject(
    { group: ARGO_GROUP, version: ARGO_VERSION, namespace, plural: "workflows", name, body: { metadata: { annotations } } },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );
}
