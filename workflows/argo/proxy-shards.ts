/**
 * The proxy as N shards on Kubernetes (`spec.proxy.shards` > 1; docs/argo.md, "A sharded
 * proxy"): a StatefulSet `NAME-proxy` of N replicas, each with its own volume
 * (`volumeClaimTemplates`: claim `log-NAME-proxy-i`) and log, owning the rollouts hashed to it
 * (proxy/shards.ts). A headless Service `NAME-proxy-shards` gives each replica a stable name
 * (`NAME-proxy-i.NAME-proxy-shards.NS.svc`), which is the base URL it hands out and how the
 * shards reach each other; the ordinary Service `NAME-proxy` spreads registrations over them
 * (a shard passes a registration on to its owner). The export step mounts every shard's claim
 * read-only and reads them as one sharded data root.
 */
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { Service } from "kubernetes-models/v1/Service";
import type { IPodTemplateSpec } from "kubernetes-models/v1/PodTemplateSpec";
import type { IComGithubArgoprojArgoWorkflowsV4PkgApisWorkflowV1alpha1Template as Template } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/Template";
import type { Experiment } from "../../schemas/index.ts";
import { renderProxyDeployment, type ConfigItem } from "./cluster.ts";
import { baseLabels, DATA_DIR, LABEL_EXPERIMENT, LABEL_ROLE, objectNames } from "./names.ts";

/** Where a replica mounts its own volume (its `--data`), and where the export step mounts them all. */
const SHARD_DATA = "/shard";
export const SHARD_LOGS = "/logs";

/** Names of the sharded proxy's objects and of each replica's claim. */
export function shardNames(experiment: Experiment) {
  const names = objectNames(experiment);
  return {
    statefulSet: names.proxy,
    headless: `${names.proxy}-shards`,
    /** The claim the StatefulSet makes for replica `i` (volumeClaimTemplate "log"). */
    claim: (i: number) => `log-${names.proxy}-${i}`,
  };
}

/**
 * The base URL of each shard (its stable DNS name through the headless Service), `{i}` for the ordinal.
 *
 * @example
 * shardUrlTemplate(experiment, "forge") // "http://quick-proxy-{i}.quick-proxy-shards.forge.svc:8080"
 */
export function shardUrlTemplate(experiment: Experiment, namespace: string): string {
  const names = shardNames(experiment);
  return `http://${names.statefulSet}-{i}.${names.headless}.${namespace}.svc:${experiment.spec.proxy.port}`;
}

/**
 * The StatefulSet and its headless Service, validated.
 *
 * @example
 * renderProxyStatefulSet(experiment, "forge", items).map((o) => o.kind) // ["Service", "StatefulSet"]
 */
export function renderProxyStatefulSet(experiment: Experiment, namespace: string, configItems: ConfigItem[] = []): [Service, StatefulSet] {
  const { shards, storage } = experiment.spec.proxy;
  const names = shardNames(experiment);
  // The same pod as the single proxy's Deployment, but its own volume, and shard flags.
  const pod = structuredClone(renderProxyDeployment(experiment, namespace, configItems).spec!.template) as IPodTemplateSpec;
  const proxy = pod.spec!.containers.find((c) => c.name === "proxy")!;
  const args = proxy.args!;
  args[args.indexOf("--data") + 1] = SHARD_DATA;
  // Each replica hands out its own address (its --shard-url), not the Service's.
  const publicUrl = args.indexOf("--public-url");
  args.splice(publicUrl, 2, "--shard", `auto/${shards}`, "--shard-url", shardUrlTemplate(experiment, namespace));
  proxy.volumeMounts = proxy.volumeMounts!.map((m) => (m.name === "data" ? { name: "log", mountPath: SHARD_DATA } : m));
  pod.spec!.volumes = pod.spec!.volumes!.filter((v) => v.name !== "data");
  const headless = new Service({
    metadata: { name: names.headless, namespace, labels: baseLabels(experiment, "proxy") },
    spec: {
      clusterIP: "None",
      // Peers find each other before they are ready (a shard passes registrations on at once).
      publishNotReadyAddresses: true,
      selector: { [LABEL_EXPERIMENT]: objectNames(experiment).experiment, [LABEL_ROLE]: "proxy" },
      ports: [{ name: "http", port: experiment.spec.proxy.port, targetPort: "http" }],
    },
  });
  const statefulSet = new StatefulSet({
    metadata: { name: names.statefulSet, namespace, labels: baseLabels(experiment, "proxy") },
    spec: {
      serviceName: names.headless,
      replicas: shards,
      // All at once: no shard waits for another to be ready.
      podManagementPolicy: "Parallel",
      selector: { matchLabels: { [LABEL_EXPERIMENT]: objectNames(experiment).experiment, [LABEL_ROLE]: "proxy" } },
      template: pod,
      volumeClaimTemplates: [
        {
          metadata: { name: "log", labels: baseLabels(experiment, "data") },
          spec: {
            // ReadWriteMany: the export step reads every shard's log while the shards run.
            accessModes: ["ReadWriteMany"],
            resources: { requests: { storage: storage.size } },
            ...(storage.storageClassName ? { storageClassName: storage.storageClassName } : {}),
          },
        },
      ],
      // Keep the logs when the StatefulSet is deleted or scaled down: they are the training data.
      persistentVolumeClaimRetentionPolicy: { whenDeleted: "Retain", whenScaled: "Retain" },
    },
  });
  headless.validate();
  statefulSet.validate();
  return [headless, statefulSet];
}

/**
 * The export template reading every shard: each replica's claim mounted read-only at
 * `/logs/shard-i`, `--data /logs` (a sharded data root, records/shards.ts). Unchanged for one shard.
 *
 * @example
 * withShardLogs(exportTemplate, experiment).container.args // [..., "--data", "/logs", ...]
 */
export function withShardLogs(template: Template, experiment: Experiment): Template {
  const { shards } = experiment.spec.proxy;
  if (shards <= 1 || !template.container) return template;
  const names = shardNames(experiment);
  const args = [...(template.container.args ?? [])];
  const data = args.indexOf("--data");
  if (data >= 0 && args[data + 1] === DATA_DIR) args[data + 1] = SHARD_LOGS;
  return {
    ...template,
    container: {
      ...template.container,
      args,
      volumeMounts: [...(template.container.volumeMounts ?? []), ...Array.from({ length: shards }, (_, i) => ({ name: `log-${i}`, mountPath: `${SHARD_LOGS}/shard-${i}`, readOnly: true }))],
    },
    volumes: [...(template.volumes ?? []), ...Array.from({ length: shards }, (_, i) => ({ name: `log-${i}`, persistentVolumeClaim: { claimName: names.claim(i), readOnly: true } }))],
  };
}
