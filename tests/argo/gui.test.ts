/**
 * Browser tasks on Argo (workflows/argo/gui.ts, docs/gui.md "On Argo"): the rendered rollout pod
 * (the site server as a native sidecar, the browser in the harness container, /dev/shm, GUI
 * resources, the proxy's body limit) validated against the Kubernetes and Argo schemas, with the
 * isolation the reward depends on (only the sidecar writes the site's log, only verify reads it,
 * no token anywhere task code runs); and the pod's containers run as processes, as the pods run
 * them (tests/argo/pod.test.ts), against the real proxy: the sidecar serves the task's site and
 * records it, the verifier scores from that log. With claude, chromium and node present, the
 * GUI quickstart's newsletter-signup runs through the pod's steps with the real Claude Code,
 * Playwright MCP server and Chromium.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { WorkflowTemplate } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1";
import { Pod } from "kubernetes-models/v1/Pod";
import { parse, stringify } from "yaml";
import { startProxy, tokenInOptions } from "../../proxy/index.ts";
import { readRecords } from "../../records/index.ts";
import { parseExperimentFile, TokenMode, TokenStatus, type Experiment } from "../../schemas/index.ts";
import { trajectoryOf } from "../../trajectories/index.ts";
import { QWEN3_THINK } from "../../trajectories/testing.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { renderExperiment } from "../../workflows/argo/render.ts";
import { submitExperiment } from "../../workflows/argo/submit.ts";
import { startFakeKubernetes } from "./fake-k8s/server.ts";

// Each test spawns the steps as processes; on a loaded 2-core box that takes seconds.
setDefaultTimeout(60_000);
const ROOT = join(import.meta.dir, "..", "..");
const GUI_FIXTURE = join(ROOT, "workflows", "argo", "fixtures", "gui-experiment.yaml");
const PLAIN_FIXTURE = join(ROOT, "workflows", "argo", "fixtures", "experiment.yaml");
const TOKEN = `admin-${crypto.randomUUID()}`;
type Any = Record<string, any>;

const scratch = mkdtempSync(join(tmpdir(), "forge-argo-gui-"));
let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;

beforeAll(async () => {
  const script = parse(readFileSync(join(ROOT, "examples", "policies", "gui-quickstart.yaml"), "utf8"));
  // Every variant of the script succeeds: the test checks the pod, not the policy's luck.
  script.failure_rate = 0;
  for (const task of script.tasks) task.failure_rate = 0;
  writeFileSync(join(scratch, "policy.yaml"), stringify(script));
  sim = await startPolicySimulator({ seed: 7, script: join(scratch, "policy.yaml"), model: "forge-sim/qwen3-sim" });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: join(scratch, "data"), mode: "train", adminToken: TOKEN, healthIntervalMs: 0 });
});
afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

const render = (experiment: Experiment, path: string) => renderExperiment(experiment, { namespace: "forge", experimentPath: path }) as Any[];
const rolloutOf = (objects: Any[]) => objects.find((o) => o.kind === "WorkflowTemplate")!.spec.templates.find((t: Any) => t.name === "rollout");
const mountsOf = (container: Any) => Object.fromEntries((container.volumeMounts ?? []).map((m: Any) => [m.name, m]));

/**
 * The pod Argo makes of the rollout template (workflow/controller/workflowpod.go at v4.1.2): the
 * template's init containers after Argo's own `init`, the containerSet's containers beside
 * `wait`, its volumes and pod settings; validated by the Kubernetes Pod schema.
 */
function podOf(template: Any): Pod {
  const argo = (name: string) => ({ name, image: "quay.io/argoproj/argoexec:v4.1.2", command: ["argoexec", name] });
  return new Pod({
    metadata: { name: "gui-argo-rollout-1" },
    spec: {
      restartPolicy: "Never",
      automountServiceAccountToken: template.automountServiceAccountToken,
      securityContext: template.securityContext,
      initContainers: [argo("init"), ...(template.initContainers ?? [])],
      containers: [argo("wait"), ...template.containerSet.containers.map(({ dependencies: _d, ...container }: Any) => container)],
      volumes: template.volumes,
    },
  });
}

describe("GUI rollout pods, rendered", () => {
  test("browser tasks: the site as a native sidecar, the browser's resources and /dev/shm, the proxy's body limit; valid for Argo's and Kubernetes' schemas", () => {
    const objects = render(parseExperimentFile(GUI_FIXTURE), GUI_FIXTURE);
    const template = objects.find((o) => o.kind === "WorkflowTemplate")!;
    expect(() => new WorkflowTemplate(template as never).validate()).not.toThrow();
    const rollout = rolloutOf(objects);
    const pod = podOf(rollout);
    expect(() => pod.validate()).not.toThrow();

    // The harness bundle's copy first (images/harness-bundle), then the site.
    const [bundle, site] = rollout.initContainers;
    expect(rollout.initContainers).toHaveLength(2);
    expect(bundle.name).toBe("bundle");
    expect(site).toMatchObject({ name: "site", image: "ghcr.io/openforge/forge:0.1.0", restartPolicy: "Always" });
    expect(site.args).toEqual(["site", "--experiment", "/experiment/experiment.yaml", "--plan-dir", "/plan", "--index", "{{inputs.parameters.index}}", "--port", "8000", "--site-log", "/site-log", "--ready-file", "/tmp/site-ready"]);
    // Ready when it listens; an exec probe, since an HTTP probe would reach the pod IP (not
    // loopback, where the site listens) and would be recorded in the log the verifier reads.
    expect(site.startupProbe.exec.command[0]).toBe("bun");
    expect(site.startupProbe.httpGet).toBeUndefined();
    expect(site.securityContext).toMatchObject({ runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
    expect(Object.keys(mountsOf(site)).sort()).toEqual(["data", "experiment", "site-log", "site-tmp"]);
    expect(mountsOf(site).data).toEqual({ name: "data", mountPath: "/plan", subPath: "plans/{{inputs.parameters.run}}/iteration-{{inputs.parameters.iteration}}", readOnly: true });
    expect(mountsOf(site)["site-log"].readOnly).toBeUndefined();

    const byName = Object.fromEntries(rollout.containerSet.containers.map((c: Any) => [c.name, c]));
    expect(Object.keys(mountsOf(byName.harness)).sort()).toEqual(["dshm", "forge-bundle", "harness-out", "state", "workspace"]);
    expect(mountsOf(byName.harness).dshm.mountPath).toBe("/dev/shm");
    // The tasks' task.toml cpus = 1 (request and limit), memory raised to what Chromium needs.
    expect(byName.harness.resources).toEqual({ requests: { cpu: "1", memory: "3Gi" }, limits: { cpu: "1", memory: "3Gi" } });
    // The verifier runs with the task's resources too (as in Harbor, where it shares the agent's container).
    expect(byName.verify.resources).toEqual(byName.harness.resources);
    expect(mountsOf(byName.verify)["site-log"]).toEqual({ name: "site-log", mountPath: "/logs/site", readOnly: true });
    expect(byName.verify.args.slice(-2)).toEqual(["--site-log", "/logs/site"]);
    expect(rollout.volumes).toContainEqual({ name: "dshm", emptyDir: { medium: "Memory", sizeLimit: "1Gi" } });
    expect(rollout.volumes).toContainEqual({ name: "site-log", emptyDir: {} });

    const proxyArgs = objects.find((o) => o.kind === "Deployment")!.spec.template.spec.containers[0].args;
    expect(proxyArgs.slice(proxyArgs.indexOf("--max-body-bytes"), proxyArgs.indexOf("--max-body-bytes") + 2)).toEqual(["--max-body-bytes", "67108864"]);
    // The site's files travel in the experiment's ConfigMap, where the sidecar reads them.
    const config = objects.find((o) => o.kind === "ConfigMap")!;
    expect(Object.keys(config.data)).toContain("tasks__newsletter-signup__site__subscribe.html");
  });

  test("token-in (spec.policy.tokenMode: token-in) with the simulator playing SGLang: the proxy renders with the simulator's model, which takes images as Qwen2.5-VL; the pods are the same and still valid", () => {
    const experiment = parseExperimentFile(GUI_FIXTURE);
    experiment.spec.policy.tokenMode = "token-in";
    experiment.spec.policy.engine = "sglang";
    const objects = render(experiment, GUI_FIXTURE);
    expect(() => new WorkflowTemplate(objects.find((o) => o.kind === "WorkflowTemplate") as never).validate()).not.toThrow();
    expect(() => podOf(rolloutOf(objects)).validate()).not.toThrow();
    const [proxyContainer, simContainer] = objects.find((o) => o.kind === "Deployment")!.spec.template.spec.containers;
    const args: string[] = proxyContainer.args;
    expect(args.slice(args.indexOf("--token-in"), args.indexOf("--token-in") + 3)).toEqual(["--token-in", "--model-dir", "qwen3"]);
    expect(args.slice(args.indexOf("--engine"), args.indexOf("--engine") + 2)).toEqual(["--engine", "sglang"]);
    expect(simContainer.name).toBe("policy-sim");
    expect(simContainer.args.slice(simContainer.args.indexOf("--engine"), simContainer.args.indexOf("--engine") + 2)).toEqual(["--engine", "sglang"]);
    // The rollout pod does not change with the token mode: the harness talks to the proxy either way.
    const engineMode = render(parseExperimentFile(GUI_FIXTURE), GUI_FIXTURE);
    expect(rolloutOf(objects)).toEqual(rolloutOf(engineMode));
  });

  test("the reward's source is out of the agent's reach: only the sidecar writes the site's log, only verify reads it, no token where task code runs", () => {
    const objects = render(parseExperimentFile(GUI_FIXTURE), GUI_FIXTURE);
    const rollout = rolloutOf(objects);
    const all = [...rollout.initContainers, ...rollout.containerSet.containers];
    const withLog = all.filter((c) => mountsOf(c)["site-log"]).map((c) => `${c.name}${mountsOf(c)["site-log"].readOnly ? " (ro)" : ""}`);
    expect(withLog).toEqual(["site", "verify (ro)"]);
    // No token: none automounted, no admin token but in register and main, no shared PID namespace.
    expect(rollout.automountServiceAccountToken).toBe(false);
    expect(rollout.podSpecPatch).toBeUndefined();
    expect(podOf(rollout).spec!.shareProcessNamespace).toBeUndefined();
    const withToken = all.filter((c) => (c.env ?? []).some((e: Any) => e.name === "FORGE_ADMIN_TOKEN" || e.valueFrom?.secretKeyRef)).map((c) => c.name);
    expect(withToken).toEqual(["register", "main"]);
    for (const c of all) expect(c.envFrom).toBeUndefined();
    // The harness sees neither the tests, the verdict nor the control volume.
    const harness = rollout.containerSet.containers.find((c: Any) => c.name === "harness");
    for (const name of ["experiment", "verdict", "control", "item", "site-log", "site-tmp"]) expect(mountsOf(harness)[name]).toBeUndefined();
    // Nothing outside the pod reaches the site: the rollout pods take no ingress.
    const policy = objects.find((o) => o.kind === "NetworkPolicy")!;
    expect(policy.spec.ingress).toEqual([]);
  });

  test("task.toml resources win over spec.rollouts.resources, never below the browser's memory; a plain experiment's pod is unchanged", () => {
    const experiment = parseExperimentFile(GUI_FIXTURE);
    experiment.spec.rollouts.resources = { cpu: "4" };
    // The fixture's tasks say cpus = 1, memory_mb = 2048 (task.toml [environment]): that is what
    // their pods request and are limited to, memory raised to the 3Gi measured with Chromium.
    const harness = rolloutOf(render(experiment, GUI_FIXTURE)).containerSet.containers.find((c: Any) => c.name === "harness");
    expect(harness.resources).toEqual({ requests: { cpu: "1", memory: "3Gi" }, limits: { cpu: "1", memory: "3Gi" } });
    const verify = rolloutOf(render(experiment, GUI_FIXTURE)).containerSet.containers.find((c: Any) => c.name === "verify");
    expect(verify.resources).toEqual(harness.resources);
    const plain = rolloutOf(render(parseExperimentFile(PLAIN_FIXTURE), PLAIN_FIXTURE));
    expect(plain.initContainers.map((c: Any) => c.name)).toEqual(["bundle"]);
    expect(plain.volumes.map((v: Any) => v.name)).not.toContain("dshm");
    expect(plain.containerSet.containers.find((c: Any) => c.name === "harness").resources).toEqual({ requests: { cpu: "1", memory: "1Gi" }, limits: { memory: "1Gi" } });
  });

  test("a browser experiment without Chromium's path in the task's image is refused, naming the field (node and the MCP server come with the bundle)", () => {
    const experiment = parseExperimentFile(GUI_FIXTURE);
    delete experiment.spec.harness.image;
    delete experiment.spec.environment.browser.executablePath;
    expect(() => render(experiment, GUI_FIXTURE)).toThrow(/browser tasks \(add-to-cart, newsletter-signup, opening-hours and 1 more\).*set spec\.environment\.browser\.executablePath \(Chromium's path in the task's image/);
    experiment.spec.environment.browser.executablePath = "/usr/bin/chromium";
    expect(() => render(experiment, GUI_FIXTURE)).not.toThrow();
  });
});

describe("forge submit of a browser experiment (fake API server)", () => {
  test("checks the server's version for the native sidecar: 1.29 and later (a provider's 29+ too) get the pods, 1.28 is refused before anything is created", async () => {
    const k8s = await startFakeKubernetes();
    try {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: "fake", server: k8s.url, skipTLSVerify: true }],
        users: [{ name: "tester", token: "test-token" }],
        contexts: [{ name: "fake", cluster: "fake", user: "tester", namespace: "forge" }],
        currentContext: "fake",
      });
      const experiment = parseExperimentFile(GUI_FIXTURE);
      const objects = render(experiment, GUI_FIXTURE) as never;
      k8s.setVersion("1", "28");
      await expect(submitExperiment(kc, experiment, objects, { namespace: "forge" })).rejects.toThrow(/Kubernetes v1\.28\.0; .*rollout\/site.*needs Kubernetes ≥ 1\.29.*nothing was submitted/);
      expect(k8s.requests.filter((r) => !r.startsWith("GET /version"))).toEqual([]);
      k8s.setVersion("1", "29+");
      const submitted = await submitExperiment(kc, experiment, objects, { namespace: "forge" });
      expect(submitted.workflow).toMatch(/^gui-argo-[0-9a-f]{8}$/);
      const stored = k8s.get("/apis/argoproj.io/v1alpha1/namespaces/forge/workflowtemplates/gui-argo")!;
      const rollout = (stored.spec as Any).templates.find((t: Any) => t.name === "rollout");
      expect(rollout.initContainers[1]).toMatchObject({ name: "site", restartPolicy: "Always" });
      const proxyArgs = (k8s.get("/apis/apps/v1/namespaces/forge/deployments/gui-argo-proxy")!.spec as Any).template.spec.containers[0].args;
      expect(proxyArgs).toContain("--max-body-bytes");
      // A plain experiment has no sidecar and never asks.
      const plain = parseExperimentFile(PLAIN_FIXTURE);
      const before = k8s.requests.filter((r) => r.startsWith("GET /version")).length;
      await submitExperiment(kc, plain, render(plain, PLAIN_FIXTURE) as never, { namespace: "forge" });
      expect(k8s.requests.filter((r) => r.startsWith("GET /version")).length).toBe(before);
    } finally {
      await k8s.stop();
    }
  });
});

async function step(args: string[]) {
  const run = Bun.spawn(["bun", "workflows/argo/step.ts", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe", env: { ...process.env, FORGE_ADMIN_TOKEN: TOKEN } });
  const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  return { stdout, stderr, code };
}

/** An experiment over copies of the GUI quickstart's tasks; `siteOnly` drops `browser = true` (a `command` harness gets no MCP server). */
function experimentWith(name: string, harness: Record<string, unknown>, tasks: string[], options: { siteOnly?: boolean; executablePath?: string } = {}): string {
  const dir = join(scratch, name);
  for (const task of tasks) {
    cpSync(join(ROOT, "examples", "gui-quickstart", "tasks", task), join(dir, "tasks", task), { recursive: true });
    if (options.siteOnly) writeFileSync(join(dir, "tasks", task, "task.toml"), readFileSync(join(dir, "tasks", task, "task.toml"), "utf8").replace("browser = true", ""));
  }
  const experiment = {
    apiVersion: "openforge.dev/v1",
    kind: "Experiment",
    metadata: { name },
    spec: {
      policy: { model: "forge-sim/qwen3-sim", mode: "train" },
      harness: { image: "harness:1", ...harness },
      environment: { tasks: "tasks", browser: { executablePath: options.executablePath ?? Bun.which("chromium") ?? "/usr/bin/chromium" } },
      rollouts: { k: 1, timeoutSeconds: 300 },
    },
  };
  writeFileSync(join(dir, "experiment.yaml"), stringify(experiment));
  return join(dir, "experiment.yaml");
}

/**
 * One rollout pod as processes: the plan, the site sidecar (started first, awaited on its ready
 * file as the startup probe does), then register → harness → verify → finish, each with its
 * volumes as directories; the sidecar is stopped with SIGTERM as the kubelet does.
 */
async function guiPod(experiment: string, options: { index?: number; sidecar?: boolean; playwrightMcpCli?: string; proxyUrl?: string } = {}) {
  const pod = mkdtempSync(join(scratch, "pod-"));
  const volume = (name: string) => {
    mkdirSync(join(pod, name), { recursive: true });
    return join(pod, name);
  };
  const [workspace, state, harnessOut, verdict, scratchDir, control, siteLog, siteTmp, results] = ["workspace", "forge", "harness-out", "verdict", "verify", "control", "site-log", "site-tmp", "results"].map(volume) as string[];
  const plan = join(pod, "plan");
  expect((await step(["plan", "--experiment", experiment, "--iteration", "0", "--plan-dir", plan, "--results-dir", results!, "--outputs", join(pod, "outputs")])).code).toBe(0);
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const index = String(options.index ?? 0);
  const readyFile = join(siteTmp!, "site-ready");
  let sidecar: ReturnType<typeof Bun.spawn> | undefined;
  if (options.sidecar !== false) {
    sidecar = Bun.spawn(["bun", "workflows/argo/step.ts", "site", "--experiment", experiment, "--plan-dir", plan, "--index", index, "--port", String(port), "--site-log", siteLog!, "--ready-file", readyFile], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    for (let i = 0; i < 600 && !existsSync(readyFile); i++) await Bun.sleep(50);
    expect(existsSync(readyFile)).toBe(true);
  }
  const item = join(volume("item"), "item.json");
  // A run per pod: rollout ids are unique per run, and every test records into one proxy.
  const ids = ["--run", `wf-${pod.slice(-6).toLowerCase()}`, "--iteration", "0", "--index", index, "--item", item, "--retry", "0"];
  const proxyUrl = options.proxyUrl ?? proxy.url;
  const register = await step(["register", "--experiment", experiment, "--proxy", proxyUrl, "--workspace", workspace!, "--state", state!, "--control", control!, "--plan-dir", plan, "--site-url", `http://127.0.0.1:${port}`, ...(options.playwrightMcpCli ? ["--playwright-mcp-cli", options.playwrightMcpCli] : []), ...ids]);
  const harness = await step(["harness", "--state", state!, "--workspace", workspace!, "--harness-out", harnessOut!, "--timeout-seconds", "300"]);
  const verify = await step(["verify", "--experiment", experiment, "--workspace", workspace!, "--harness-out", harnessOut!, "--verdict", verdict!, "--scratch", scratchDir!, "--item", item, "--site-log", siteLog!]);
  const finish = await step(["finish", "--experiment", experiment, "--proxy", proxyUrl, "--harness-out", harnessOut!, "--verdict", verdict!, "--control", control!, "--results-dir", results!, ...ids]);
  let sidecarExit: number | null = null;
  let sidecarOut = "";
  if (sidecar) {
    sidecar.kill("SIGTERM");
    sidecarExit = await sidecar.exited;
    sidecarOut = await new Response(sidecar.stdout as ReadableStream).text();
  }
  const resultFile = join(control!, "result.json");
  const log = join(siteLog!, "requests.jsonl");
  return {
    register,
    harness,
    verify,
    finish,
    sidecarExit,
    sidecarOut,
    state: state!,
    harnessOut: harnessOut!,
    verdict: verdict!,
    site: existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter(Boolean).map((line) => JSON.parse(line)) : [],
    result: existsSync(resultFile) ? JSON.parse(readFileSync(resultFile, "utf8")) : undefined,
  };
}

// A harness that submits the newsletter form to the site over HTTP (as the browser would), with
// the URL the pod gives it; and plants a fake log wherever it can write, which counts for nothing.
const SUBMIT = [
  "set -e",
  'echo "$FORGE_SITE_URL" > site-url.txt',
  `python3 -c 'import os, urllib.request, urllib.parse; urllib.request.urlopen(urllib.request.Request(os.environ["FORGE_SITE_URL"] + "/subscribe.html", data=urllib.parse.urlencode({"name": "Ada Lovelace", "email": "ada@example.com"}).encode()))'`,
].join("\n");
const PLANT = `for d in . "$HOME" /logs/site; do mkdir -p "$d" 2>/dev/null; echo '{"seq":1,"method":"POST","path":"/subscribe.html","form":{"name":"Ada Lovelace","email":"ada@example.com"}}' > "$d/requests.jsonl" 2>/dev/null || true; done; curl -s "$FORGE_SITE_URL/" >/dev/null 2>&1 || python3 -c 'import os, urllib.request; urllib.request.urlopen(os.environ["FORGE_SITE_URL"] + "/")'`;

describe("GUI rollout pod steps, as processes", () => {
  test("the sidecar serves the task's site on the pod's loopback and records it; the verifier scores from that log; SIGTERM ends it with 0", async () => {
    const experiment = experimentWith("site-submit", { name: "command", command: ["bash", "-c", SUBMIT] }, ["newsletter-signup"], { siteOnly: true });
    const done = await guiPod(experiment);
    expect(done.finish.code, done.finish.stderr).toBe(0);
    expect(done.result).toMatchObject({ task_id: "newsletter-signup", reward: 1, status: "ok", passed: true });
    const post = done.site.find((entry) => entry.method === "POST");
    expect(post).toMatchObject({ path: "/subscribe.html", form: { name: "Ada Lovelace", email: "ada@example.com" } });
    expect(done.sidecarOut).toContain("serving task newsletter-signup's site at http://127.0.0.1:");
    expect(done.sidecarExit).toBe(0);
    // The verifier's log names its reward source, which is /verdict (never the workspace).
    expect(readFileSync(join(done.verdict, "verifier.json"), "utf8")).toContain("ada@example.com");
  });

  test("a harness that plants the site's log where it can write gets reward 0: the verifier reads only the sidecar's log", async () => {
    const experiment = experimentWith("site-plant", { name: "command", command: ["bash", "-c", PLANT] }, ["newsletter-signup"], { siteOnly: true });
    const done = await guiPod(experiment);
    expect(done.result).toMatchObject({ reward: 0, status: "ok", passed: false });
    expect(done.site.map((entry) => `${entry.method} ${entry.path}`)).toEqual(["GET /"]);
  });

  test("without the sidecar's log (a pod rendered without the site) the rollout is an infrastructure error naming the sidecar, never a reward", async () => {
    const experiment = experimentWith("site-missing", { name: "command", command: ["bash", "-c", "true"] }, ["newsletter-signup"], { siteOnly: true });
    const done = await guiPod(experiment, { sidecar: false });
    expect(done.result).toMatchObject({ reward: 0, status: "infra_error" });
    expect(JSON.parse(readFileSync(join(done.verdict, "verifier.json"), "utf8")).error).toContain("the site sidecar left no request log");
  });

  test("a browser task's harness gets Playwright's MCP server with the image's Chromium and the site's URL; a Chromium missing from the image is an infrastructure error naming the field (main exits 75)", async () => {
    const experiment = experimentWith("no-chromium", { name: "claude-code", options: { bin: "/bin/true" } }, ["add-to-cart"], { executablePath: "/opt/no-such/chromium" });
    const done = await guiPod(experiment);
    const invocation = JSON.parse(readFileSync(join(done.state, "harness.json"), "utf8"));
    const config = JSON.parse(Object.entries(invocation.files as Record<string, string>).find(([path]) => path.endsWith(".claude-mcp.json"))![1]);
    expect(config.mcpServers.browser.command).toBe("node");
    expect(config.mcpServers.browser.args).toEqual([
      "/opt/forge/app/node_modules/@playwright/mcp/cli.js",
      "--headless",
      "--isolated",
      "--executable-path",
      "/opt/no-such/chromium",
      "--caps",
      "vision",
      "--viewport-size",
      "1280x720",
      "--output-dir",
      `${done.state}/home/.playwright-mcp`,
      "--image-responses",
      "allow",
      "--no-sandbox",
    ]);
    expect(invocation.env.FORGE_SITE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(invocation.command[2]).toContain(invocation.env.FORGE_SITE_URL);
    const outcome = JSON.parse(readFileSync(join(done.harnessOut, "harness-result.json"), "utf8"));
    expect(outcome.error).toContain("Chromium (spec.environment.browser.executablePath) is not in the task's image (looked for /opt/no-such/chromium)");
    expect(done.finish.code).toBe(75);
    expect(done.result).toMatchObject({ status: "infra_error" });
  });

  const missing = [Bun.which("claude") ? undefined : "claude", Bun.which("chromium") ? undefined : "chromium", Bun.which("node") ? undefined : "node"].filter(Boolean);
  if (missing.length > 0) console.warn(`argo-gui: skipping the Claude Code rollout through the pod's steps: missing ${missing.join(", ")}`);
  test.skipIf(missing.length > 0)(
    "newsletter-signup through the pod's steps with the real Claude Code, Playwright MCP and Chromium: the browser's POST in the sidecar's log, reward 1, screenshots recorded",
    async () => {
      const experiment = experimentWith("claude", { name: "claude-code", options: { maxTurns: 20 } }, ["newsletter-signup"]);
      const cli = join(ROOT, "node_modules", "@playwright", "mcp", "cli.js");
      const done = await guiPod(experiment, { playwrightMcpCli: cli });
      expect(done.finish.code, `${done.harness.stdout}\n${done.harness.stderr}\n${done.finish.stderr}`).toBe(0);
      expect(done.result).toMatchObject({ task_id: "newsletter-signup", reward: 1, status: "ok" });
      const post = done.site.find((entry) => entry.method === "POST" && entry.path === "/subscribe.html");
      expect(post.form).toEqual({ name: "Ada Lovelace", email: "ada@example.com" });
      expect(post.user_agent).toContain("HeadlessChrome");
      const recorded = (await (await fetch(`${proxy.url}/control/rollouts/${done.result.rollout_id}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as Any;
      expect(recorded.result).toMatchObject({ reward: 1 });
      // The screenshots went through the proxy as images: named in the calls' blob refs.
      const shots = new Set<string>();
      for await (const { record } of readRecords(join(scratch, "data", "log"))) {
        if (record.kind.case === "modelCall" && record.kind.value.rolloutId === done.result.rollout_id) for (const sha of record.kind.value.blobRefs) shots.add(sha);
      }
      expect(shots.size).toBeGreaterThanOrEqual(1);
    },
    600_000,
  );

  test.skipIf(missing.length > 0)(
    "token-in: newsletter-signup through the pod's steps with the real Claude Code against a token-in proxy over a simulator playing SGLang: reward 1, one sample with both screenshots' image tokens, 0 drift",
    async () => {
      const sglang = await startPolicySimulator({ seed: 7, script: join(scratch, "policy.yaml"), model: "forge-sim/qwen3-sim", engine: "sglang" });
      const dataDir = join(scratch, "data-token-in");
      const tokenIn = await startProxy({ listen: "127.0.0.1:0", upstreams: [sglang.url], dataDir, mode: "train", engine: "sglang", adminToken: TOKEN, healthIntervalMs: 0, tokenIn: tokenInOptions({ modelDir: "qwen3" }) });
      try {
        const experiment = experimentWith("claude-token-in", { name: "claude-code", options: { maxTurns: 20 } }, ["newsletter-signup"]);
        const done = await guiPod(experiment, { playwrightMcpCli: join(ROOT, "node_modules", "@playwright", "mcp", "cli.js"), proxyUrl: tokenIn.url });
        expect(done.finish.code, `${done.harness.stdout}\n${done.harness.stderr}\n${done.finish.stderr}`).toBe(0);
        expect(done.result).toMatchObject({ task_id: "newsletter-signup", reward: 1, status: "ok" });
        const calls: Any[] = [];
        for await (const { record } of readRecords(dataDir)) if (record.kind.case === "modelCall" && record.kind.value.rolloutId === done.result.rollout_id) calls.push(record.kind.value);
        expect(calls.length).toBeGreaterThan(2);
        for (const call of calls) expect([call.tokenMode, call.tokenStatus]).toEqual([TokenMode.TOKEN_IN, TokenStatus.COMPLETE]);
        // The engine's native /generate served every call, with the screenshots as image_data.
        expect(sglang.samples.length).toBe(calls.length);
        const t = (await trajectoryOf(readRecords(dataDir), done.result.rollout_id, QWEN3_THINK))!;
        expect({ samples: t.samples.length, drift: t.stats.drift_tokens, fork: t.stats.fork }).toEqual({ samples: 1, drift: 0, fork: 0 });
        const final = t.samples[0]!;
        expect([...final.prompt_ids, ...final.response_ids].filter((id) => id === 151655).length).toBe(2 * 1196);
      } finally {
        await tokenIn.stop();
        await sglang.stop();
      }
    },
    600_000,
  );
});
