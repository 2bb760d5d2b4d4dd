/**
 * `forge submit` and `forge watch` against a fake Kubernetes API server (tests/fake-k8s)
 * through the real @kubernetes/client-node: create-or-replace, a watch that drops and resumes
 * from its resourceVersion, and a 410 Gone that makes it list again.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { parseExperimentFile } from "../schemas/index.ts";
import { renderExperiment } from "../workflows/argo/render.ts";
import { submitExperiment } from "../workflows/argo/submit.ts";
import { watchWorkflow, type WorkflowProgress } from "../workflows/argo/watch.ts";
import { startFakeKubernetes, type FakeKubernetes } from "./fake-k8s/server.ts";

// Some tests spawn `bun bin/forge.ts`; on a loaded 2-core CI box that takes seconds.
setDefaultTimeout(30_000);
const FIXTURE = join(import.meta.dir, "..", "workflows", "argo", "fixtures", "experiment.yaml");
const NS = "forge";
const WORKFLOWS = `/apis/argoproj.io/v1alpha1/namespaces/${NS}/workflows`;
const ROOT = join(import.meta.dir, "..");

let k8s: FakeKubernetes;
let kc: KubeConfig;
let kubeconfigFile: string;

beforeAll(async () => {
  k8s = await startFakeKubernetes();
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "fake", cluster: { server: k8s.url, "insecure-skip-tls-verify": true } }],
    users: [{ name: "tester", user: { token: "test-token" } }],
    contexts: [{ name: "fake", context: { cluster: "fake", user: "tester", namespace: NS } }],
    "current-context": "fake",
  };
  kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "fake", server: k8s.url, skipTLSVerify: true }],
    users: [{ name: "tester", token: "test-token" }],
    contexts: [{ name: "fake", cluster: "fake", user: "tester", namespace: NS }],
    currentContext: "fake",
  });
  kubeconfigFile = join(mkdtempSync(join(tmpdir(), "forge-kube-")), "config");
  // The API server's own endpoints, which forge submit reads for the rollout NetworkPolicy.
  await fetch(`${k8s.url}/api/v1/namespaces/default/endpoints`, {
    method: "POST",
    body: JSON.stringify({ apiVersion: "v1", kind: "Endpoints", metadata: { name: "kubernetes" }, subsets: [{ addresses: [{ ip: "172.18.0.2" }], ports: [{ name: "https", port: 6443 }] }] }),
  });
  writeFileSync(kubeconfigFile, stringify(config));
});
afterAll(async () => {
  await k8s.stop();
});

const podNode = (templateName: string, phase: string) => ({ type: "Pod", templateName, phase });

function setStatus(name: string, phase: string, nodes: Record<string, object>, annotations: Record<string, string> = {}) {
  k8s.update(`${WORKFLOWS}/${name}`, (wf) => {
    wf.status = { phase, nodes };
    wf.metadata.annotations = { ...(wf.metadata.annotations as object), ...annotations };
  });
}

async function until(check: () => boolean, what: string) {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await Bun.sleep(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("forge submit", () => {
  test("creates every object and the admin Secret, then replaces them on a second submit", async () => {
    const experiment = parseExperimentFile(FIXTURE);
    const objects = renderExperiment(experiment, { namespace: NS, experimentPath: FIXTURE });
    const first = await submitExperiment(kc, experiment, objects, { namespace: NS, argoUi: "https://argo.example/" });
    expect(first.secret).toBe("created");
    expect(first.applied.every((a) => a.action === "created")).toBe(true);
    expect(first.workflow).toMatch(/^argo-fixture-[0-9a-f]{8}$/);
    expect(first.uiUrl).toBe(`https://argo.example/workflows/${NS}/${first.workflow}`);
    expect(k8s.get(`/api/v1/namespaces/${NS}/secrets/argo-fixture-admin`)?.data).toHaveProperty("token");
    expect(k8s.get(`/apis/argoproj.io/v1alpha1/namespaces/${NS}/workflowtemplates/argo-fixture`)?.spec).toMatchObject({ entrypoint: "experiment" });
    expect(k8s.get(`/apis/apps/v1/namespaces/${NS}/deployments/argo-fixture-proxy`)).toBeDefined();
    expect(k8s.get(`/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies/argo-fixture-rollouts`)).toBeDefined();
    expect(k8s.get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings/argo-fixture-workflow`)).toBeDefined();
    const token = k8s.get(`/api/v1/namespaces/${NS}/secrets/argo-fixture-admin`)!.data;
    const clusterIP = (k8s.get(`/api/v1/namespaces/${NS}/services/argo-fixture-proxy`)!.spec as { clusterIP: string }).clusterIP;

    const second = await submitExperiment(kc, experiment, objects, { namespace: NS });
    expect(second.secret).toBe("kept");
    expect(k8s.get(`/api/v1/namespaces/${NS}/secrets/argo-fixture-admin`)!.data).toEqual(token);
    const actions = Object.fromEntries(second.applied.map((a) => [a.kind, a.action]));
    expect(actions).toEqual({
      ServiceAccount: "replaced",
      Role: "replaced",
      RoleBinding: "replaced",
      PersistentVolumeClaim: "kept",
      ConfigMap: "replaced",
      Deployment: "replaced",
      Service: "replaced",
      NetworkPolicy: "replaced",
      WorkflowTemplate: "replaced",
      Workflow: "rerun",
    });
    // The server-assigned clusterIP survives the replace (the fake rejects a change, like the real one).
    expect((k8s.get(`/api/v1/namespaces/${NS}/services/argo-fixture-proxy`)!.spec as { clusterIP: string }).clusterIP).toBe(clusterIP);
    expect(k8s.requests.some((r) => r.startsWith(`DELETE ${WORKFLOWS}/${second.workflow}`))).toBe(true);
    // Resources are discovered once per group version for the config, not once per object.
    const discoveries = k8s.requests.filter((r) => /^GET \/(api\/v1|apis\/[^/]+\/[^/]+)$/.test(r));
    expect(discoveries.length).toBe(new Set(discoveries).size);
  });

  test("the CLI prints the workflow name and UI link (--json) from a kubeconfig file", async () => {
    const run = Bun.spawn(["bun", "bin/forge.ts", "submit", FIXTURE, "--kubeconfig", kubeconfigFile, "--argo-ui", "https://argo.example", "--json"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
    expect(err).toBe("");
    expect(code).toBe(0);
    const result = JSON.parse(out);
    expect(result.namespace).toBe(NS);
    expect(result.uiUrl).toBe(`https://argo.example/workflows/${NS}/${result.workflow}`);
    // The executor's route to the API server, discovered from default/kubernetes.
    const policy = k8s.get(`/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies/argo-fixture-rollouts`)!.spec as { egress: { to: unknown[] }[] };
    expect(policy.egress.at(-1)!.to).toEqual([{ ipBlock: { cidr: "172.18.0.2/32" } }]);
  });

  test("an unreachable cluster is a clear error", async () => {
    const dead = new KubeConfig();
    dead.loadFromOptions({ clusters: [{ name: "x", server: "http://127.0.0.1:1", skipTLSVerify: true }], users: [{ name: "u" }], contexts: [{ name: "x", cluster: "x", user: "u" }], currentContext: "x" });
    const experiment = parseExperimentFile(FIXTURE);
    await expect(submitExperiment(dead, experiment, renderExperiment(experiment, { namespace: NS, experimentPath: FIXTURE }), { namespace: NS })).rejects.toThrow(/creating Secret forge\/argo-fixture-admin: .*(ECONNREFUSED|connect|fetch)/i);
  });
});

describe("forge watch", () => {
  test("follows nodes to Succeeded, resuming after a dropped watch and re-listing after 410 Gone", async () => {
    const name = (k8s.list(WORKFLOWS)[0]!.metadata.name as string)!;
    const seen: WorkflowProgress[] = [];
    const reconnects: string[] = [];
    const done = watchWorkflow(kc, {
      namespace: NS,
      name,
      retryDelayMs: 20,
      onProgress: (p) => seen.push(p),
      onReconnect: (how, rv) => reconnects.push(`${how}@${rv}`),
    });
    await until(() => k8s.openWatches() === 1, "the watch to open");
    setStatus(name, "Running", { a: podNode("plan", "Succeeded"), b: podNode("rollout", "Running"), c: podNode("rollout", "Pending") });
    await until(() => seen.at(-1)?.running === 1, "the first MODIFIED event");
    const rvBeforeDrop = seen.at(-1)!.resourceVersion;

    // Drop the connection; the change made while it is down must still arrive (replayed from rv).
    k8s.dropWatches();
    setStatus(name, "Running", { a: podNode("plan", "Succeeded"), b: podNode("rollout", "Succeeded"), c: podNode("rollout", "Failed") });
    await until(() => seen.at(-1)?.failed === 1, "the event missed while disconnected");
    expect(reconnects[0]).toBe(`resume@${rvBeforeDrop}`);

    // Drop again and compact the history: resuming from the old rv gets 410, so it lists again.
    await until(() => k8s.openWatches() === 1, "the resumed watch");
    k8s.dropWatches();
    setStatus(name, "Running", { a: podNode("plan", "Succeeded"), b: podNode("rollout", "Succeeded"), c: podNode("rollout", "Failed"), d: podNode("report", "Running") }, { "openforge.dev/pass-rate": "0.500" });
    k8s.compact();
    await until(() => reconnects.some((r) => r.startsWith("relist")), "the re-list after 410");
    expect(seen.at(-1)).toMatchObject({ running: 1, passRate: "0.500" });

    await until(() => k8s.openWatches() === 1, "the watch after the re-list");
    setStatus(name, "Succeeded", { a: podNode("plan", "Succeeded"), b: podNode("rollout", "Succeeded"), c: podNode("rollout", "Failed"), d: podNode("report", "Succeeded") });
    const final = await done;
    expect(final).toMatchObject({ phase: "Succeeded", succeeded: 3, failed: 1, running: 0, rolloutsDone: 2, rolloutsTotal: 2, passRate: "0.500" });
    // The watch requests carried the resourceVersions it resumed from.
    const watches = k8s.requests.filter((r) => r.includes("watch=true"));
    expect(watches.length).toBeGreaterThanOrEqual(4);
    expect(watches[1]).toContain(`resourceVersion=${rvBeforeDrop}`);
  });

  test("the CLI exits 1 when the workflow Failed and prints the phase", async () => {
    const name = (k8s.list(WORKFLOWS)[0]!.metadata.name as string)!;
    setStatus(name, "Failed", { a: podNode("rollout", "Error") });
    const run = Bun.spawn(["bun", "bin/forge.ts", "watch", name, "--kubeconfig", kubeconfigFile], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    const [out, code] = await Promise.all([new Response(run.stdout).text(), run.exited]);
    expect(code).toBe(1);
    expect(out).toContain(`${name}: Failed`);
  });

  test("the CLI exits 0 on Succeeded, with --json events", async () => {
    const name = (k8s.list(WORKFLOWS)[0]!.metadata.name as string)!;
    setStatus(name, "Succeeded", { a: podNode("rollout", "Succeeded") }, { "openforge.dev/pass-rate": "1.000" });
    const run = Bun.spawn(["bun", "bin/forge.ts", "watch", name, "--kubeconfig", kubeconfigFile, "--json"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    const [out, code] = await Promise.all([new Response(run.stdout).text(), run.exited]);
    expect(code).toBe(0);
    const events = out.trim().split("\n").map((line) => JSON.parse(line));
    expect(events.at(-1)).toMatchObject({ event: "final", phase: "Succeeded", passRate: "1.000" });
  });

  test("an unknown workflow is named in the error", async () => {
    await expect(watchWorkflow(kc, { namespace: NS, name: "nope" })).rejects.toThrow(/workflow forge\/nope not found/);
  });
});
