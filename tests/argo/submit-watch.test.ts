/**
 * `forge submit` and `forge watch` against a fake Kubernetes API server (tests/argo/fake-k8s)
 * through the real @kubernetes/client-node: create-or-replace, a watch that drops and resumes
 * from its resourceVersion, and a 410 Gone that makes it list again.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { parseExperimentFile } from "../../schemas/index.ts";
import { renderExperiment } from "../../workflows/argo/render.ts";
import { submitExperiment } from "../../workflows/argo/submit.ts";
import { formatProgress, watchWorkflow, type WorkflowProgress } from "../../workflows/argo/watch.ts";
import { startFakeKubernetes, type FakeKubernetes } from "./fake-k8s/server.ts";

// Some tests spawn `bun bin/forge.ts`; on a loaded 2-core CI box that takes seconds.
setDefaultTimeout(30_000);
const FIXTURE = join(import.meta.dir, "..", "..", "workflows", "argo", "fixtures", "experiment.yaml");
const NS = "forge";
const WORKFLOWS = `/apis/argoproj.io/v1alpha1/namespaces/${NS}/workflows`;
const ROOT = join(import.meta.dir, "..", "..");

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

  test("a sharded proxy: the StatefulSet and its headless Service are created, and replaced on a second submit", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-shards-submit-"));
    const path = join(dir, "experiment.yaml");
    writeFileSync(path, readFileSync(FIXTURE, "utf8").replace("name: argo-fixture", "name: argo-sharded").replace("  rollouts:", "  proxy: {shards: 2}\n  rollouts:").replace("./tasks", join(ROOT, "workflows", "argo", "fixtures", "tasks")));
    const experiment = parseExperimentFile(path);
    const objects = renderExperiment(experiment, { namespace: NS, experimentPath: path });
    const first = await submitExperiment(kc, experiment, objects, { namespace: NS });
    expect(first.applied.filter((a) => a.kind === "StatefulSet" || a.kind === "Service").map((a) => `${a.kind} ${a.name} ${a.action}`)).toEqual([
      "Service argo-sharded-proxy-shards created",
      "StatefulSet argo-sharded-proxy created",
      "Service argo-sharded-proxy created",
    ]);
    expect((k8s.get(`/api/v1/namespaces/${NS}/services/argo-sharded-proxy-shards`)!.spec as { clusterIP: string }).clusterIP).toBe("None");
    expect((k8s.get(`/apis/apps/v1/namespaces/${NS}/statefulsets/argo-sharded-proxy`)!.spec as { replicas: number }).replicas).toBe(2);
    const second = await submitExperiment(kc, experiment, objects, { namespace: NS });
    expect(second.applied.find((a) => a.kind === "StatefulSet")!.action).toBe("replaced");
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
    // Two watches: the workflow, and its child workflows (by label).
    await until(() => k8s.openWatches() === 2, "the watches to open");
    setStatus(name, "Running", { a: podNode("plan", "Succeeded"), b: podNode("rollout", "Running"), c: podNode("rollout", "Pending") });
    await until(() => seen.at(-1)?.running === 1, "the first MODIFIED event");
    const rvBeforeDrop = seen.at(-1)!.resourceVersion;

    // Drop the connection; the change made while it is down must still arrive (replayed from rv).
    k8s.dropWatches();
    setStatus(name, "Running", { a: podNode("plan", "Succeeded"), b: podNode("rollout", "Succeeded"), c: podNode("rollout", "Failed") });
    await until(() => seen.at(-1)?.failed === 1, "the event missed while disconnected");
    expect(reconnects).toContain(`resume@${rvBeforeDrop}`);

    // Drop again and compact the history: resuming from the old rv gets 410, so it lists again.
    await until(() => k8s.openWatches() === 2, "the resumed watches");
    k8s.dropWatches();
    setStatus(name, "Running", { a: podNode("plan", "Succeeded"), b: podNode("rollout", "Succeeded"), c: podNode("rollout", "Failed"), d: podNode("report", "Running") }, { "openforge.dev/pass-rate": "0.500" });
    k8s.compact();
    // Both watches (the workflow's and its children's) list again; the children's may come first,
    // so wait for the workflow's state from its list before looking at it.
    await until(() => reconnects.filter((r) => r.startsWith("relist")).length === 2, "the re-lists after 410");
    await until(() => seen.at(-1)?.passRate === "0.500", "the state listed after 410");
    expect(seen.at(-1)).toMatchObject({ running: 1, passRate: "0.500" });

    await until(() => k8s.openWatches() === 2, "the watches after the re-list");
    setStatus(name, "Succeeded", { a: podNode("plan", "Succeeded"), b: podNode("rollout", "Succeeded"), c: podNode("rollout", "Failed"), d: podNode("report", "Succeeded") });
    const final = await done;
    expect(final).toMatchObject({ phase: "Succeeded", succeeded: 3, failed: 1, running: 0, rolloutsDone: 2, rolloutsTotal: 2, passRate: "0.500" });
    // The watch requests carried the resourceVersions it resumed from.
    const watches = k8s.requests.filter((r) => r.includes("watch=true") && r.includes("fieldSelector"));
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

describe("forge watch at scale: compressed, offloaded and archived node status, child workflows", () => {
  /** Creates a bare Workflow in the fake (as submit or a resource step would), with labels. */
  async function createWorkflow(name: string, labels: Record<string, string> = {}) {
    const response = await fetch(`${k8s.url}${WORKFLOWS}`, {
      method: "POST",
      body: JSON.stringify({ apiVersion: "argoproj.io/v1alpha1", kind: "Workflow", metadata: { name, labels }, spec: { workflowTemplateRef: { name: "argo-fixture" } } }),
    });
    expect(response.status).toBe(201);
  }
  /** `n` rollout pod nodes, the first `failed` of them Failed, the rest Succeeded. */
  const rolloutNodes = (prefix: string, n: number, failed = 0) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}-${i}`, { id: `${prefix}-${i}`, name: `${prefix}.rollouts(${i}:${i})(0)`, type: "Pod", templateName: "rollout", phase: i < failed ? "Failed" : "Succeeded" }]));

  test("compressed node status (status.compressedNodes, gzip + base64) is read: 10,000 pods counted", async () => {
    await createWorkflow("big-compressed");
    setStatus("big-compressed", "Succeeded", { ...rolloutNodes("c", 10_000, 3), p: podNode("plan", "Succeeded") });
    const stored = k8s.compressNodes(`${WORKFLOWS}/big-compressed`);
    expect((stored.status as { nodes?: unknown }).nodes).toBeUndefined();
    const final = await watchWorkflow(kc, { namespace: NS, name: "big-compressed" });
    expect(final).toMatchObject({ phase: "Succeeded", succeeded: 9_998, failed: 3, rolloutsDone: 10_000, rolloutsTotal: 10_000 });
    expect(final.unreadable).toBeUndefined();
  });

  test("offloaded node status: unreadable without the Argo Server (and said so), read from it with a token", async () => {
    await createWorkflow("big-offloaded");
    setStatus("big-offloaded", "Running", { ...rolloutNodes("o", 500, 1), r: podNode("rollout", "Running") });
    const version = k8s.offloadNodes(`${WORKFLOWS}/big-offloaded`);
    expect(version).toMatch(/^fnv:\d+$/);
    const seen: WorkflowProgress[] = [];
    const controller = new AbortController();
    const without = watchWorkflow(kc, { namespace: NS, name: "big-offloaded", retryDelayMs: 20, signal: controller.signal, onProgress: (p) => seen.push(p) });
    await until(() => seen.length > 0, "the first progress");
    expect(seen.at(-1)!.unreadable?.[0]).toContain(`node status offloaded to Argo's database (${version}); pass --argo-server`);
    expect(seen.at(-1)!.rolloutsTotal).toBe(0);
    controller.abort();
    await without;

    // A wrong token: the Argo Server's 401 is reported, the watch goes on.
    const denied: WorkflowProgress[] = [];
    const stopDenied = new AbortController();
    const wrong = watchWorkflow(kc, { namespace: NS, name: "big-offloaded", retryDelayMs: 20, signal: stopDenied.signal, argoServer: { url: k8s.argoServer.url, token: "nope" }, onProgress: (p) => denied.push(p) });
    await until(() => denied.length > 0, "progress with a wrong token");
    expect(denied.at(-1)!.unreadable?.[0]).toMatch(/HTTP 401: token not valid.*--argo-token/);
    stopDenied.abort();
    await wrong;

    const progress: WorkflowProgress[] = [];
    const done = watchWorkflow(kc, { namespace: NS, name: "big-offloaded", retryDelayMs: 20, offloadRefreshMs: 0, argoServer: k8s.argoServer, onProgress: (p) => progress.push(p) });
    await until(() => progress.at(-1)?.running === 1, "offloaded nodes read from the Argo Server");
    expect(progress.at(-1)).toMatchObject({ succeeded: 499, failed: 1, rolloutsTotal: 501 });
    // The controller offloads a new version as pods finish; the final one is read.
    k8s.offloadNodes(`${WORKFLOWS}/big-offloaded`, (wf) => {
      wf.status = { phase: "Succeeded", nodes: { ...rolloutNodes("o", 500, 1), r: podNode("rollout", "Succeeded") } };
    });
    const final = await done;
    expect(final).toMatchObject({ phase: "Succeeded", succeeded: 500, failed: 1, running: 0, rolloutsDone: 501 });
    // The 401, then each offloaded version once.
    expect(k8s.argoServer.requests.filter((r) => r === `GET /api/v1/workflows/${NS}/big-offloaded`)).toHaveLength(3);
  });

  test("child workflows of a split iteration are followed by their parent label and counted in", async () => {
    await createWorkflow("split");
    setStatus("split", "Running", { p: podNode("plan", "Succeeded"), s0: podNode("rollout-shard-workflow", "Running"), s1: podNode("rollout-shard-workflow", "Running") });
    const progress: WorkflowProgress[] = [];
    const done = watchWorkflow(kc, { namespace: NS, name: "split", retryDelayMs: 20, argoServer: k8s.argoServer, onProgress: (p) => progress.push(p) });
    await until(() => k8s.openWatches() >= 2, "the top and children watches");
    // Another experiment's child is not counted.
    await createWorkflow("other-i0-s0", { "openforge.dev/parent-workflow": "other" });
    await createWorkflow("split-i0-s0", { "openforge.dev/parent-workflow": "split" });
    await createWorkflow("split-i0-s1", { "openforge.dev/parent-workflow": "split" });
    k8s.compressNodes(`${WORKFLOWS}/split-i0-s0`, (wf) => {
      wf.status = { phase: "Running", nodes: rolloutNodes("a", 1000, 2) };
    });
    k8s.offloadNodes(`${WORKFLOWS}/split-i0-s1`, (wf) => {
      wf.status = { phase: "Running", nodes: { ...rolloutNodes("b", 400), r: podNode("rollout", "Running") } };
    });
    setStatus("other-i0-s0", "Running", rolloutNodes("x", 50));
    await until(() => progress.at(-1)?.rolloutsTotal === 1401, "both children counted");
    expect(progress.at(-1)).toMatchObject({ children: 2, succeeded: 1000 - 2 + 400 + 1, failed: 2, running: 3 });
    expect(formatProgress(progress.at(-1)!)).toContain("2 child workflows");
    setStatus("split", "Succeeded", { p: podNode("plan", "Succeeded"), s0: podNode("rollout-shard-workflow", "Succeeded"), s1: podNode("rollout-shard-workflow", "Succeeded") });
    const final = await done;
    expect(final).toMatchObject({ phase: "Succeeded", children: 2, rolloutsTotal: 1401 });
    // The children watch was closed with the top one.
    await until(() => k8s.openWatches() === 0, "every watch closed");
  });

  test("an archived workflow (gone from the cluster) is read from the Argo Server; without it the error says how", async () => {
    await createWorkflow("archived");
    setStatus("archived", "Failed", { ...rolloutNodes("z", 20, 5) });
    k8s.offloadNodes(`${WORKFLOWS}/archived`);
    k8s.archive(`${WORKFLOWS}/archived`);
    await expect(watchWorkflow(kc, { namespace: NS, name: "archived" })).rejects.toThrow(/not found.*--argo-server.*archive/);
    const final = await watchWorkflow(kc, { namespace: NS, name: "archived", argoServer: k8s.argoServer });
    expect(final).toMatchObject({ phase: "Failed", failed: 5, succeeded: 15 });
  });

  test("the CLI passes --argo-server and --argo-token", async () => {
    await createWorkflow("cli-offloaded");
    setStatus("cli-offloaded", "Succeeded", rolloutNodes("q", 7));
    k8s.offloadNodes(`${WORKFLOWS}/cli-offloaded`);
    const run = Bun.spawn(["bun", "bin/forge.ts", "watch", "cli-offloaded", "--kubeconfig", kubeconfigFile, "--argo-server", k8s.argoServer.url, "--json"], {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, ARGO_TOKEN: `Bearer ${k8s.argoServer.token}` },
    });
    const [out, code] = await Promise.all([new Response(run.stdout).text(), run.exited]);
    expect(code).toBe(0);
    expect(JSON.parse(out.trim().split("\n").at(-1)!)).toMatchObject({ event: "final", succeeded: 7, rolloutsTotal: 7 });
  });
});
