/**
 * The weight-sync step (`bun workflows/argo/step.ts sync …`): pause the proxy (its in-flight
 * calls drain), load the new checkpoint into every inference server, and resume the proxy at the
 * new policy version only when every server confirmed it serves the checkpoint. One server that
 * fails fails the step, naming it and the engine's answer, and the proxy resumes at the version
 * it had (never stalled, never labelling old weights' samples with the new version).
 *
 * - `update-from-disk`: each server loads the checkpoint in place through its engine's own API
 *   (proxy/engines/weight-sync.ts: SGLang /update_weights_from_disk; vLLM /pause,
 *   /collective_rpc reload_weights, /reset_prefix_cache, /update_weight_version, /resume).
 * - `restart`: the inference Deployment's container gets `FORGE_CHECKPOINT` (and
 *   `FORGE_POLICY_VERSION`) in its env, which its command must load (`--model
 *   $(FORGE_CHECKPOINT)`), and the checkpoint claim mounted at the trainer's path; the rollout is
 *   awaited (every replica updated and ready, the old ones gone), then each server must report
 *   the checkpoint as its model before its weight version is set.
 */
import type { KubeConfig, V1Container, V1Deployment } from "@kubernetes/client-node";
import { detectEngine, loadCheckpoint, servedWeights, versionCall, WeightSyncError, type ServedWeights } from "../../proxy/index.ts";

export interface SyncStepOptions {
  /** The proxy's base URL (its control API). */
  proxy: string;
  strategy: string;
  /** The checkpoint directory, as the inference servers see it. */
  checkpoint: string;
  policyVersion: number;
  /** Each inference server (not a Service in front of several). */
  servers: string[];
  /** vllm | sglang | auto (each server says who it is). */
  engine?: string;
  deployment?: string;
  /** Namespace of the workflow (and, by default, of the Deployment). */
  namespace: string;
  deploymentNamespace?: string;
  container?: string;
  /** The checkpoint claim and its mount path, mounted into a restarted container that lacks it. */
  checkpointClaim?: string;
  checkpointMount?: string;
  timeoutSeconds?: number;
  /** POST to the proxy's control API (the admin token is the caller's). */
  control(proxy: string, path: string, body: unknown): Promise<unknown>;
  /** The cluster, for strategy restart. */
  kubeConfig?(): Promise<KubeConfig | null>;
  log?(line: string): void;
}

/**
 * Runs one weight sync; throws (after resuming the proxy at its old version) when a server did
 * not take the checkpoint.
 *
 * @example
 * await syncWeights({ proxy, strategy: "update-from-disk", checkpoint, policyVersion: 3, servers, namespace: "forge", control });
 */
export async function syncWeights(o: SyncStepOptions): Promise<void> {
  const log = o.log ?? ((line: string) => console.log(line));
  const timeoutMs = (o.timeoutSeconds ?? 600) * 1000;
  const deadline = Date.now() + timeoutMs;
  const before = await proxyPolicyVersion(o.proxy);
  const version = String(o.policyVersion);
  if (o.strategy !== "update-from-disk" && o.strategy !== "restart") throw new Error(`weight sync: unknown strategy "${o.strategy}" (update-from-disk or restart)`);
  if (o.servers.length === 0) throw new Error("weight sync needs the inference servers: spec.training.weightSync.servers or spec.policy.upstreams");
  await o.control(o.proxy, "/control/pause", { timeout_ms: timeoutMs });
  let confirmed = false;
  try {
    if (o.strategy === "update-from-disk") {
      const results = await Promise.allSettled(o.servers.map(async (server) => loadCheckpoint(server, await engineOf(server, o.engine), o.checkpoint, version, { timeoutMs })));
      failOnAny(o.servers, results, o.checkpoint);
      o.servers.forEach((server, i) => log(`${server}: serves ${o.checkpoint} as weight version ${(results[i] as PromiseFulfilledResult<ServedWeights>).value.version}`));
    } else {
      if (!o.deployment) throw new Error("weight sync restart needs spec.training.weightSync.deployment");
      const kc = (await o.kubeConfig?.()) ?? null;
      if (!kc) throw new Error("weight sync restart must run inside the cluster (no Kubernetes config found)");
      await restartDeployment(kc, { ...o, deployment: o.deployment, namespace: o.deploymentNamespace ?? o.namespace }, deadline, log);
      const results = await Promise.allSettled(o.servers.map((server) => confirmRestarted(server, o, version, deadline)));
      failOnAny(o.servers, results, o.checkpoint);
    }
    confirmed = true;
  } finally {
    // The new version only once every server confirmed; else the one the proxy had.
    await o.control(o.proxy, "/control/resume", { policy_version: confirmed ? o.policyVersion : before });
  }
  log(`proxy resumed at policy version ${o.policyVersion}`);
}

/** The proxy's policy version now (its /healthz), the one to go back to on failure. */
async function proxyPolicyVersion(proxy: string): Promise<number> {
  try {
    const health = (await (await fetch(`${proxy}/healthz`, { signal: AbortSignal.timeout(30_000) })).json()) as { policy_version?: number };
    if (typeof health.policy_version === "number") return health.policy_version;
  } catch {}
  throw new Error(`weight sync: the proxy at ${proxy} did not say its policy version (GET /healthz)`);
}

/** The engine of `server`: the experiment's setting, or what the server says it is. */
async function engineOf(server: string, setting: string | undefined): Promise<"vllm" | "sglang"> {
  if (setting === "vllm" || setting === "sglang") return setting;
  const base = server.replace(/\/+$/, "").replace(/\/v1$/, "");
  const found = await detectEngine(base);
  if (found.reachable && (found.info.kind === "vllm" || found.info.kind === "sglang")) return found.info.kind;
  throw new WeightSyncError(base, found.reachable ? `cannot tell which engine it is (${found.info.how}): set spec.policy.engine to vllm or sglang` : `unreachable: ${found.error}`);
}

function failOnAny(servers: string[], results: PromiseSettledResult<unknown>[], checkpoint: string): void {
  const failed = results.flatMap((r, i) => (r.status === "rejected" ? [`${servers[i]}: ${(r.reason as Error).message.replace(`${servers[i]!.replace(/\/v1\/?$/, "")}: `, "")}`] : []));
  if (failed.length === 0) return;
  const loaded = servers.filter((_, i) => results[i]!.status === "fulfilled");
  throw new Error(
    `weight sync: ${failed.length} of ${servers.length} inference servers did not take ${checkpoint}, so the proxy stays at its policy version:\n  ${failed.join("\n  ")}` +
      (loaded.length > 0 ? `\n  (${loaded.join(", ")} took it: the servers now serve different weights until a sync succeeds)` : ""),
  );
}

/**
 * Points the Deployment's model container at the checkpoint and waits for the rollout: every
 * replica updated and ready, none of the old left.
 */
async function restartDeployment(
  kc: KubeConfig,
  o: SyncStepOptions & { deployment: string; namespace: string },
  deadline: number,
  log: (line: string) => void,
): Promise<void> {
  const { AppsV1Api } = await import("@kubernetes/client-node");
  const apps = kc.makeApiClient(AppsV1Api);
  const where = `deployment ${o.namespace}/${o.deployment}`;
  for (let attempt = 0; ; attempt++) {
    const d = await apps.readNamespacedDeployment({ name: o.deployment, namespace: o.namespace });
    pointAtCheckpoint(d, o, where);
    try {
      await apps.replaceNamespacedDeployment({ name: o.deployment, namespace: o.namespace, body: d });
      break;
    } catch (error) {
      // Someone else changed it since we read it (409): read again.
      if ((error as { code?: number }).code !== 409 || attempt >= 5) throw new Error(`${where}: could not update it: ${(error as Error).message}`);
    }
  }
  log(`${where}: rolling out with FORGE_CHECKPOINT=${o.checkpoint}`);
  for (;;) {
    const d = await apps.readNamespacedDeployment({ name: o.deployment, namespace: o.namespace });
    const want = d.spec?.replicas ?? 1;
    const s = d.status ?? {};
    const done =
      (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0) && (s.updatedReplicas ?? 0) >= want && (s.readyReplicas ?? 0) >= want && (s.replicas ?? 0) <= want;
    if (done) return;
    if (Date.now() > deadline) {
      throw new Error(`${where} did not finish rolling out in time: ${s.updatedReplicas ?? 0} of ${want} replicas updated, ${s.readyReplicas ?? 0} ready, ${s.replicas ?? 0} running`);
    }
    await Bun.sleep(2000);
  }
}

/** Sets the container's env and annotations (and mounts the checkpoint claim) in `d`. */
function pointAtCheckpoint(d: V1Deployment, o: SyncStepOptions, where: string): void {
  const template = d.spec?.template;
  const pod = template?.spec;
  if (!template || !pod) throw new Error(`${where} has no pod template`);
  const container: V1Container | undefined = o.container ? pod.containers.find((c) => c.name === o.container) : pod.containers[0];
  if (!container) throw new Error(`${where} has no container ${JSON.stringify(o.container)} (spec.training.weightSync.container)`);
  const argv = [...(container.command ?? []), ...(container.args ?? [])].join(" ");
  if (!argv.includes("$(FORGE_CHECKPOINT)")) {
    throw new Error(
      `${where}: container ${container.name} does not load $(FORGE_CHECKPOINT), so a restart would load its old model: ` +
        `start it with the model argument "$(FORGE_CHECKPOINT)" (vLLM: vllm serve "$(FORGE_CHECKPOINT)"; SGLang: --model-path "$(FORGE_CHECKPOINT)") and FORGE_CHECKPOINT set to the base model (docs/engines.md)`,
    );
  }
  const env = (container.env ??= []).filter((e) => e.name !== "FORGE_CHECKPOINT" && e.name !== "FORGE_POLICY_VERSION");
  container.env = [...env, { name: "FORGE_CHECKPOINT", value: o.checkpoint }, { name: "FORGE_POLICY_VERSION", value: String(o.policyVersion) }];
  template.metadata ??= {};
  template.metadata.annotations = { ...template.metadata.annotations, "openforge.dev/policy-version": String(o.policyVersion), "openforge.dev/checkpoint": o.checkpoint };
  if (o.checkpointClaim && o.checkpointMount && !(container.volumeMounts ?? []).some((m) => m.mountPath === o.checkpointMount)) {
    const volume = "forge-checkpoints";
    pod.volumes = [...(pod.volumes ?? []).filter((v) => v.name !== volume), { name: volume, persistentVolumeClaim: { claimName: o.checkpointClaim, readOnly: true } }];
    container.volumeMounts = [...(container.volumeMounts ?? []), { name: volume, mountPath: o.checkpointMount, readOnly: true }];
  }
}

/** Waits until a restarted server serves the checkpoint, then names its weights `version`. */
async function confirmRestarted(server: string, o: SyncStepOptions, version: string, deadline: number): Promise<ServedWeights> {
  const base = server.replace(/\/+$/, "").replace(/\/v1$/, "");
  let last = "no answer yet";
  for (;;) {
    try {
      const kind = await engineOf(base, o.engine);
      const served = await servedWeights(base, kind, { timeoutMs: 30_000 });
      if (served.modelPath === o.checkpoint) {
        const call = versionCall(kind, version);
        const response = await fetch(base + call.path, { method: call.method, headers: { "content-type": "application/json" }, body: JSON.stringify(call.body), signal: AbortSignal.timeout(30_000) });
        // vLLM names its weights only with VLLM_SERVER_DEV_MODE=1 (404 otherwise): the model path is the proof then.
        if (!response.ok && !(kind === "vllm" && response.status === 404)) throw new WeightSyncError(base, `POST ${call.path} answered HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`);
        return await servedWeights(base, kind, { timeoutMs: 30_000 });
      }
      last = `it serves ${JSON.stringify(served.modelPath)}`;
    } catch (error) {
      if (error instanceof WeightSyncError && /answered HTTP/.test(error.message)) throw error;
      last = (error as Error).message;
    }
    if (Date.now() > deadline) throw new WeightSyncError(base, `did not come back serving ${o.checkpoint} in time (${last})`);
    await Bun.sleep(2000);
  }
}
