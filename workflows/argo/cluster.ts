/**
 * The Kubernetes objects an experiment needs besides the Workflow: the recording proxy
 * (Deployment + Service, with the policy simulator as a sidecar when no upstream is given),
 * the volume it records to, the experiment's files as a ConfigMap, the NetworkPolicy that
 * lets rollout pods reach only the proxy and DNS, and the workflow's ServiceAccount + RBAC.
 * Built as typed, validated `kubernetes-models` objects; never YAML templates.
 */
import { simulatorToolParser, tokenInFlags } from "../token-mode.ts";
import { extname } from "node:path";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { PersistentVolume } from "kubernetes-models/v1/PersistentVolume";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { Experiment } from "../../schemas/index.ts";
import { baseLabels, DATA_DIR, EXPERIMENT_DIR, FORGE_APP_DIR, LABEL_ROLE, LABEL_EXPERIMENT, objectNames, proxyUrl } from "./names.ts";
import { READ_ONLY_ROOT_ENV, restrictedContainer, restrictedPod } from "./security.ts";

/** Port of the simulator sidecar inside the proxy pod (loopback only). */
const SIMULATOR_PORT = 8000;

/** Name of the simulator script under /experiment (wherever it sat beside the experiment file). */
export function mountedSimulatorScript(script: string): string {
  return `simulator${extname(script)}`;
}

/** Env var carrying the admin token, from the Secret `forge submit` creates (docs/argo.md). */
export function adminTokenEnv(experiment: Experiment) {
  return {
    name: "FORGE_ADMIN_TOKEN",
    valueFrom: { secretKeyRef: { name: objectNames(experiment).adminSecret, key: "token" } },
  };
}

/**
 * The scrape annotations of the proxy's pods: Prometheus's conventional `prometheus.io/*`.
 *
 * @example
 * prometheusScrape(8080) // { "prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/metrics" }
 */
export function prometheusScrape(port: number): Record<string, string> {
  return { "prometheus.io/scrape": "true", "prometheus.io/port": String(port), "prometheus.io/path": "/metrics" };
}

/**
 * The proxy Deployment: one replica (one writer per segment log), Recreate so an old pod
 * releases the log's LOCK before the new one opens it.
 *
 * @example
 * renderProxyDeployment(experiment, "forge").spec?.template.spec?.containers[0]?.args
 */
export function renderProxyDeployment(experiment: Experiment, namespace: string, configItems: ConfigItem[] = []): Deployment {
  const names = objectNames(experiment);
  const { proxy, policy } = experiment.spec;
  const selector = { [LABEL_EXPERIMENT]: names.experiment, [LABEL_ROLE]: "proxy" };
  const upstreams = policy.upstreams.length > 0 ? policy.upstreams : [`http://127.0.0.1:${SIMULATOR_PORT}`];
  const containers: IContainer[] = [
    {
      name: "proxy",
      image: proxy.image,
      workingDir: FORGE_APP_DIR,
      command: ["bun", "bin/forge.ts", "proxy"],
      args: [
        "--listen",
        `0.0.0.0:${proxy.port}`,
        "--data",
        DATA_DIR,
        "--mode",
        policy.mode,
        // How train mode asks the upstreams for token ids (docs/engines.md).
        "--engine",
        policy.engine,
        // Token-in mode renders prompts in the proxy (docs/token-in.md): the model directory must be in its image or mounted.
        ...tokenInFlags(policy),
        ...upstreams.flatMap((url) => ["--upstream", url]),
        // Kubernetes expands $(VAR) from the container's env, so the token never sits in the spec.
        "--admin-token",
        "$(FORGE_ADMIN_TOKEN)",
        // The base URLs handed to harnesses must be the Service's, not the pod's listen address.
        "--public-url",
        proxyUrl(experiment, namespace),
        // Harnesses resend every screenshot on every call (docs/gui.md, "Size limits").
        ...(proxy.maxBodyBytes ? ["--max-body-bytes", String(proxy.maxBodyBytes)] : []),
      ],
      // Bun's fetch runs 256 requests at once unless this is set at start: the proxy needs more.
      env: [adminTokenEnv(experiment), { name: "BUN_CONFIG_MAX_HTTP_REQUESTS", value: "4096" }, ...READ_ONLY_ROOT_ENV],
      ports: [{ name: "http", containerPort: proxy.port }],
      readinessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 5 },
      livenessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 20, failureThreshold: 6 },
      resources: { requests: { cpu: "1", memory: "1Gi" }, limits: { memory: "4Gi" } },
      securityContext: restrictedContainer({ readOnlyRoot: true }),
      volumeMounts: [
        { name: "data", mountPath: DATA_DIR },
        { name: "tmp", mountPath: "/tmp" },
      ],
    },
  ];
  // No upstream: the policy simulator stands in for the model, next to the proxy.
  if (policy.upstreams.length === 0) containers.push(simulatorContainer(experiment));
  const deployment = new Deployment({
    metadata: { name: names.proxy, namespace, labels: baseLabels(experiment, "proxy") },
    spec: {
      replicas: 1,
      strategy: { type: "Recreate" },
      selector: { matchLabels: selector },
      template: {
        // Prometheus's kubernetes_sd pod role keeps pods with these annotations in the common
        // scrape config (docs/metrics.md, "Prometheus"); /metrics needs no token.
        metadata: { labels: { ...baseLabels(experiment, "proxy"), ...selector }, annotations: prometheusScrape(proxy.port) },
        spec: {
          // The restricted settings of the workflow's pods (security.ts): non-root, no
          // capabilities, RuntimeDefault seccomp, read-only root with /tmp on an emptyDir.
          securityContext: restrictedPod(),
          automountServiceAccountToken: false,
          containers,
          volumes: [
            { name: "data", persistentVolumeClaim: { claimName: names.data } },
            experimentVolume(experiment, configItems),
            { name: "tmp", emptyDir: {} },
          ],
        },
      },
    },
  });
  deployment.validate();
  return deployment;
}

/** The policy simulator's container, beside the proxy when the experiment names no upstream. */
function simulatorContainer(experiment: Experiment): IContainer {
  const { proxy, policy } = experiment.spec;
  return {
    name: "policy-sim",
    image: proxy.image,
    workingDir: FORGE_APP_DIR,
    command: ["bun", "bin/forge.ts", "policy-sim"],
    args: [
      "--listen",
      `127.0.0.1:${SIMULATOR_PORT}`,
      "--seed",
      String(policy.simulator.seed),
      "--model",
      policy.model,
      ...(policy.simulator.script ? ["--script", `${EXPERIMENT_DIR}/${mountedSimulatorScript(policy.simulator.script)}`] : []),
      ...(simulatorToolParser(policy) === "hermes" ? [] : ["--tool-call-parser", simulatorToolParser(policy)]),
      // spec.policy.engine: sglang makes the simulator play SGLang (as forge run does); else vLLM.
      ...(policy.engine === "sglang" ? ["--engine", "sglang"] : []),
    ],
    resources: { requests: { cpu: "500m", memory: "1Gi" } },
    env: READ_ONLY_ROOT_ENV,
    securityContext: restrictedContainer({ readOnlyRoot: true }),
    volumeMounts: [
      { name: "experiment", mountPath: EXPERIMENT_DIR, readOnly: true },
      { name: "tmp", mountPath: "/tmp" },
    ],
  };
}

/** ClusterIP Service in front of the proxy; rollout pods reach it by DNS name. */
export function renderProxyService(experiment: Experiment, namespace: string): Service {
  const names = objectNames(experiment);
  const service = new Service({
    metadata: { name: names.proxyService, namespace, labels: baseLabels(experiment, "proxy") },
    spec: {
      selector: { [LABEL_EXPERIMENT]: names.experiment, [LABEL_ROLE]: "proxy" },
      ports: [{ name: "http", port: experiment.spec.proxy.port, targetPort: "http" }],
    },
  });
  service.validate();
  return service;
}

/**
 * Rollout pods (label role=rollout) may send traffic only to the proxy pods and to DNS;
 * nothing may connect to them. The harness thus cannot reach the internet or the model
 * servers directly, only through the recording proxy. The one exception is the Kubernetes
 * API server (`apiServerCidrs`, its endpoint IPs): Argo's `wait` container in the same pod
 * reports the rollout's outputs through it. The harness has no token for it (the rollout
 * template does not mount one into the main containers).
 */
export function renderRolloutNetworkPolicy(experiment: Experiment, namespace: string, apiServerCidrs: string[] = []): NetworkPolicy {
  const names = objectNames(experiment);
  const policy = new NetworkPolicy({
    metadata: { name: names.networkPolicy, namespace, labels: baseLabels(experiment, "network") },
    spec: {
      podSelector: { matchLabels: { [LABEL_EXPERIMENT]: names.experiment, [LABEL_ROLE]: "rollout" } },
      policyTypes: ["Ingress", "Egress"],
      ingress: [],
      egress: [
        {
          to: [{ podSelector: { matchLabels: { [LABEL_EXPERIMENT]: names.experiment, [LABEL_ROLE]: "proxy" } } }],
          ports: [{ protocol: "TCP", port: experiment.spec.proxy.port }],
        },
        {
          to: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
              podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
            },
          ],
          ports: [
            { protocol: "UDP", port: 53 },
            { protocol: "TCP", port: 53 },
          ],
        },
        ...(apiServerCidrs.length
          ? [
              {
                to: apiServerCidrs.map((cidr) => ({ ipBlock: { cidr } })),
                ports: [
                  { protocol: "TCP" as const, port: 443 },
                  { protocol: "TCP" as const, port: 6443 },
                ],
              },
            ]
          : []),
      ],
    },
  });
  policy.validate();
  return policy;
}

/** The volume the proxy records to and the export / training steps read (ReadWriteMany). */
export function renderDataVolume(experiment: Experiment, namespace: string): PersistentVolumeClaim {
  const { storage } = experiment.spec.proxy;
  const claim = new PersistentVolumeClaim({
    metadata: { name: objectNames(experiment).data, namespace, labels: baseLabels(experiment, "data") },
    spec: {
      accessModes: ["ReadWriteMany"],
      resources: { requests: { storage: storage.size } },
      ...(storage.storageClassName ? { storageClassName: storage.storageClassName } : {}),
    },
  });
  claim.validate();
  return claim;
}

/**
 * The namespace of the inference servers: `training.weightSync.namespace`, else the
 * experiment's.
 */
export function inferenceNamespace(experiment: Experiment, namespace: string): string {
  return experiment.spec.training.weightSync.namespace ?? namespace;
}

/**
 * The checkpoint volume: veRL writes each step's HF weights to it and the inference servers load
 * them from it, both at `training.checkpoints.mountPath` (docs/argo.md, "Checkpoints"). A claim
 * can only be mounted in its own namespace, so:
 *
 * - inference servers in the experiment's namespace: one ReadWriteMany claim
 *   (`NAME-checkpoints`) that the train step and the servers both mount;
 * - in another namespace: the same NFS export (`checkpoints.nfs`) bound by a PersistentVolume
 *   and a claim of that name in each namespace (a PersistentVolume binds one claim only).
 *
 * Nothing when the workflow does not train (no upstreams, or eval).
 *
 * @example
 * renderCheckpointVolumes(experiment, "forge").map((o) => o.kind) // ["PersistentVolumeClaim"]
 */
export function renderCheckpointVolumes(experiment: Experiment, namespace: string): (PersistentVolumeClaim | PersistentVolume)[] {
  const { policy, training } = experiment.spec;
  if (policy.mode !== "train" || policy.upstreams.length === 0) return [];
  const names = objectNames(experiment);
  const { checkpoints } = training;
  const labels = baseLabels(experiment, "checkpoints");
  const inference = inferenceNamespace(experiment, namespace);
  if (!checkpoints.nfs) {
    if (inference !== namespace) {
      throw new Error(
        `spec.training.weightSync.namespace: the inference servers run in namespace ${inference}, the checkpoints are written in ${namespace}, ` +
          `and a PersistentVolumeClaim can only be mounted in its own namespace: give spec.training.checkpoints.nfs {server, path} (an export both namespaces bind a claim to), ` +
          `or run the inference servers in namespace ${namespace}`,
      );
    }
    const claim = new PersistentVolumeClaim({
      metadata: { name: names.checkpoints, namespace, labels },
      spec: {
        accessModes: ["ReadWriteMany"],
        resources: { requests: { storage: checkpoints.size } },
        ...(checkpoints.storageClassName ? { storageClassName: checkpoints.storageClassName } : {}),
      },
    });
    claim.validate();
    return [claim];
  }
  const objects: (PersistentVolumeClaim | PersistentVolume)[] = [];
  for (const ns of [...new Set([namespace, inference])]) {
    // Cluster-scoped: named after the claim's namespace so both can exist.
    const volumeName = `${names.checkpoints}-${ns}`;
    const volume = new PersistentVolume({
      metadata: { name: volumeName, labels },
      spec: {
        capacity: { storage: checkpoints.size },
        accessModes: ["ReadWriteMany"],
        // The checkpoints outlive the experiment's objects: deleting a claim must not wipe the export.
        persistentVolumeReclaimPolicy: "Retain",
        storageClassName: "",
        nfs: { server: checkpoints.nfs.server, path: checkpoints.nfs.path },
        claimRef: { namespace: ns, name: names.checkpoints },
      },
    });
    const claim = new PersistentVolumeClaim({
      metadata: { name: names.checkpoints, namespace: ns, labels },
      // storageClassName "" and volumeName: bound to that volume, never dynamically provisioned.
      spec: { accessModes: ["ReadWriteMany"], resources: { requests: { storage: checkpoints.size } }, storageClassName: "", volumeName },
    });
    volume.validate();
    claim.validate();
    objects.push(volume, claim);
  }
  return objects;
}

/** ConfigMap keys are flat; nested paths map to keys by replacing separators. */
export function configKey(path: string): string {
  return path.replace(/^\.\//, "").replace(/[^A-Za-z0-9._-]/g, "__");
}

/** A ConfigMap key and the path it is mounted at under /experiment (restores the directory tree). */
export type ConfigItem = { key: string; path: string };

/** The /experiment volume: the ConfigMap with each key projected back to its relative path. */
export function experimentVolume(experiment: Experiment, items: ConfigItem[]) {
  return { name: "experiment", configMap: { name: objectNames(experiment).config, ...(items.length ? { items } : {}) } };
}

/**
 * The experiment file and its task files as a ConfigMap mounted at /experiment, so the plan
 * and rollout steps read exactly what was rendered. `files` maps a path relative to the
 * experiment's directory to its content; binary content goes to `binaryData`.
 */
export function renderExperimentConfig(
  experiment: Experiment,
  namespace: string,
  files: Map<string, Uint8Array>,
): { config: ConfigMap; items: ConfigItem[] } {
  const data: Record<string, string> = {};
  const binaryData: Record<string, string> = {};
  let bytes = 0;
  const items: ConfigItem[] = [];
  const decoder = new TextDecoder("utf-8", { fatal: true });
  for (const [path, content] of [...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const key = configKey(path);
    if (key in data || key in binaryData) throw new Error(`spec.environment.tasks: files "${path}" and another map to the same ConfigMap key "${key}"; rename one`);
    bytes += content.byteLength;
    items.push({ key, path });
    try {
      data[key] = decoder.decode(content);
    } catch {
      binaryData[key] = Buffer.from(content).toString("base64");
    }
  }
  // The API server rejects objects over ~1 MiB; say so before kubectl does, with the fix.
  if (bytes > 900 * 1024) {
    throw new Error(
      `spec.environment.tasks: the task files are ${Math.round(bytes / 1024)} KiB, too large for a ConfigMap (limit ~1 MiB); bake the tasks into spec.environment.image instead and list them as a JSONL of ids`,
    );
  }
  const config = new ConfigMap({
    metadata: { name: objectNames(experiment).config, namespace, labels: baseLabels(experiment, "config") },
    data,
    ...(Object.keys(binaryData).length ? { binaryData } : {}),
  });
  config.validate();
  return { config, items };
}

/** The ServiceAccount the workflow's pods run as, with what the Argo executor and the steps need. */
export function renderWorkflowRbac(experiment: Experiment, namespace: string): [ServiceAccount, Role, RoleBinding] {
  const names = objectNames(experiment);
  const labels = baseLabels(experiment, "rbac");
  const account = new ServiceAccount({ metadata: { name: names.serviceAccount, namespace, labels } });
  const role = new Role({
    metadata: { name: names.serviceAccount, namespace, labels },
    rules: [
      // The emissary executor reports outputs through WorkflowTaskResults.
      { apiGroups: ["argoproj.io"], resources: ["workflowtaskresults"], verbs: ["create", "patch"] },
      // The report step writes the pass rate onto the workflow's annotations; a split iteration's
      // resource steps apply its child Workflows (kubectl apply: get, create, patch) and poll them.
      { apiGroups: ["argoproj.io"], resources: ["workflows"], verbs: ["get", "create", "patch"] },
      // Weight sync with strategy restart rolls the inference Deployment (read, then replaced).
      { apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "update", "patch"] },
    ],
  });
  const binding = new RoleBinding({
    metadata: { name: names.serviceAccount, namespace, labels },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: names.serviceAccount },
    subjects: [{ kind: "ServiceAccount", name: names.serviceAccount, namespace }],
  });
  for (const object of [account, role, binding]) object.validate();
  return [account, role, binding];
}

/**
 * For weight sync with strategy restart against a Deployment in another namespace: the right to
 * read and replace Deployments there, granted to the workflow's ServiceAccount. Nothing
 * otherwise.
 *
 * @example
 * renderSyncRbac(experiment, "forge").map((o) => o.kind) // ["Role", "RoleBinding"] when weightSync.namespace is "inference"
 */
export function renderSyncRbac(experiment: Experiment, namespace: string): (Role | RoleBinding)[] {
  const { weightSync } = experiment.spec.training;
  const inference = inferenceNamespace(experiment, namespace);
  const { policy } = experiment.spec;
  if (weightSync.strategy !== "restart" || inference === namespace || policy.mode !== "train" || policy.upstreams.length === 0) return [];
  const names = objectNames(experiment);
  const labels = baseLabels(experiment, "rbac");
  const name = `${names.serviceAccount}-sync`;
  const role = new Role({
    metadata: { name, namespace: inference, labels },
    rules: [{ apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "update", "patch"] }],
  });
  const binding = new RoleBinding({
    metadata: { name, namespace: inference, labels },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
    subjects: [{ kind: "ServiceAccount", name: names.serviceAccount, namespace }],
  });
  role.validate();
  binding.validate();
  return [role, binding];
}
