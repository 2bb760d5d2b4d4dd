/**
 * One iteration of the quickstart's rendered Argo pods, run step by step INSIDE the images they
 * name (images/: the forge image, the harness bundle, task-base), as the cluster runs them: uid
 * 1000, a read-only root, only the pod's volumes; the bundle copied by the rollout pod's init
 * container, the harness and verifier run from it inside the task's image. Against the real proxy
 * and the policy simulator on this machine's loopback (the proxy's Deployment is not what is
 * checked here). The rollouts recorded and pass@k must be those of `forge run` on the same
 * experiment (same run name, so the same rollout ids and the simulator's same choices).
 *
 * Needs podman, bwrap and the images (images/build.sh --clis ""; .ci/run builds them); skipped,
 * saying why, where they are absent.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { parseExperimentFile, type Experiment } from "../../schemas/index.ts";
import { collectExperimentFiles, renderExperiment } from "../../workflows/argo/index.ts";
import { imagesMissing, runContainer, substitute, type PodRun } from "./in-image.ts";

const ROOT = join(import.meta.dir, "..", "..");
const QUICKSTART = join(ROOT, "examples", "quickstart", "experiment.yaml");
const REGISTRY = process.env.FORGE_TEST_REGISTRY ?? "localhost/openforge";
const TAG = process.env.FORGE_TEST_TAG ?? "dev";
const IMAGES = { forge: `${REGISTRY}/forge:${TAG}`, bundle: `${REGISTRY}/harness-bundle:${TAG}`, taskBase: `${REGISTRY}/task-base:${TAG}` };
const TOKEN = `admin-${crypto.randomUUID()}`;
const HARBOR = join(ROOT, "examples", "harbor-images", "experiment.yaml");
/** The Harbor-style example's task images, as `forge images build` tags them (.ci/run builds them). */
const harborImages = (): string[] => {
  const listed = Bun.spawnSync([process.execPath, join(ROOT, "bin", "forge.ts"), "images", "build", HARBOR, "--dry-run", "--json"], { cwd: ROOT, stdout: "pipe" });
  return (JSON.parse(listed.stdout.toString()) as { image: string }[]).map((entry) => entry.image);
};
const missing = imagesMissing([...Object.values(IMAGES), ...harborImages()]);
if (missing) console.warn(`tests/argo/images.test.ts skipped: ${missing}`);

type Any = Record<string, any>;
let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let work: string | undefined;
let data: string;

/** The quickstart with this build's images. */
function experiment(trains = false): Experiment {
  const parsed = parseExperimentFile(QUICKSTART);
  parsed.spec.proxy.image = IMAGES.forge;
  parsed.spec.harness.image = IMAGES.bundle;
  parsed.spec.environment.image = IMAGES.taskBase;
  // Upstreams make the render include the admit and veRL steps (the simulator has no weights to train).
  if (trains) parsed.spec.policy.upstreams = ["http://policy.invalid:8000"];
  return parsed;
}

function templatesOf(objects: Any[]): Map<string, Any> {
  const template = objects.find((o) => o.kind === "WorkflowTemplate")!;
  return new Map(template.spec.templates.map((t: Any) => [t.name, t]));
}

const fresh = (name: string) => {
  const dir = join((work ??= mkdtempSync(join(tmpdir(), "forge-in-image-"))), name);
  mkdirSync(dir, { recursive: true });
  return dir;
};

const expectOk = (what: string, run: PodRun) => {
  if (run.code !== 0) console.error(`${what} exited ${run.code}\n${run.stdout}\n${run.stderr}`);
  expect(run.code).toBe(0);
};

beforeAll(async () => {
  if (missing) return;
  work = mkdtempSync(join(tmpdir(), "forge-in-image-"));
  data = fresh("data");
  sim = await startPolicySimulator({ seed: 7, script: join(ROOT, "examples", "policies", "quickstart.yaml"), model: "forge-sim/qwen3-sim" });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: data, mode: "train", adminToken: TOKEN });
});
afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
  // Each pod's emptyDirs hold a copy of the bundle (~630 MB): gigabytes a run, never left behind.
  if (work) rmSync(work, { recursive: true, force: true });
});

/** The experiment's files as the ConfigMap mounts them at /experiment. */
function experimentFolder(exp: Experiment, path: string, name: string): string {
  const dir = fresh(name);
  for (const [file, bytes] of collectExperimentFiles(exp, path)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), bytes);
  }
  return dir;
}

/** Runs a rendered rollout template's pod (init container, then the four containers in order); returns each container's run. */
async function runRolloutPod(rollout: Any, options: { run: string; index: number; experimentDir: string; proxyService: string; root?: string }): Promise<Record<string, PodRun>> {
  const tags = { "workflow.name": options.run, "workflow.namespace": "forge", retries: "0", "inputs.parameters.run": options.run, "inputs.parameters.iteration": "0", "inputs.parameters.index": String(options.index) };
  const pod = JSON.parse(JSON.stringify(substitute(rollout, tags)).replaceAll(options.proxyService, proxy.url)) as Any;
  const volumes: Record<string, string> = { data, experiment: options.experimentDir };
  for (const volume of pod.volumes) if (volume.emptyDir) volumes[volume.name] = fresh(`${options.run}-${options.index}/${volume.name}`);
  const runs: Record<string, PodRun> = {};
  for (const init of pod.initContainers ?? []) runs[init.name] = await runContainer(init, { volumes });
  for (const container of pod.containerSet.containers) {
    const taskContainer = container.name === "harness" || container.name === "verify";
    runs[container.name] = await runContainer(container, { volumes, secrets: { FORGE_ADMIN_TOKEN: TOKEN }, ...(taskContainer && options.root ? { root: options.root } : {}) });
  }
  // The pod is gone: so are its emptyDirs (its bundle copy among them); what it recorded is on `data`.
  for (const volume of pod.volumes) if (volume.emptyDir) rmSync(volumes[volume.name]!, { recursive: true, force: true });
  return runs;
}

describe.skipIf(missing !== null)("the quickstart's Argo pods inside the images", () => {
  test(
    "plan → 20 rollout pods (bundle init container; register, harness and verify in task-base, finish) → report → export → admit → veRL config: the rollouts and pass@k of forge run",
    async () => {
      // The local run first: its run name becomes the workflow's, so the rollout ids match.
      const local = Bun.spawnSync([process.execPath, join(ROOT, "bin", "forge.ts"), "run", QUICKSTART, "--data", fresh("local"), "--json", "--quiet"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
      expect(local.exitCode).toBe(0);
      const localRun = JSON.parse(local.stdout.toString()) as { run: string; outcomes: { rollout_id: string; status: string; reward: number }[]; pass: { pass: Any[] } };
      const run = localRun.run;

      const exp = experiment();
      const objects = renderExperiment(exp, { namespace: "forge", experimentPath: QUICKSTART }) as Any[];
      const trainObjects = renderExperiment(experiment(true), { namespace: "forge", experimentPath: QUICKSTART }) as Any[];
      // The experiment ConfigMap's files, as mounted at /experiment.
      const experimentDir = fresh("experiment");
      for (const [path, bytes] of collectExperimentFiles(exp, QUICKSTART)) {
        mkdirSync(dirname(join(experimentDir, path)), { recursive: true });
        writeFileSync(join(experimentDir, path), bytes);
      }
      const proxyService = "http://quickstart-proxy.forge.svc:8080";
      const tags = (inputs: Record<string, string>) => ({
        "workflow.name": run,
        "workflow.namespace": "forge",
        retries: "0",
        ...Object.fromEntries(Object.entries(inputs).map(([k, v]) => [`inputs.parameters.${k}`, v])),
      });
      const resolve = <T>(value: T, inputs: Record<string, string>): T => JSON.parse(JSON.stringify(substitute(value, tags(inputs))).replaceAll(proxyService, proxy.url));
      const secrets = { FORGE_ADMIN_TOKEN: TOKEN };
      const templates = templatesOf(objects);

      // plan (forge image): the plan on the data volume, its counts as output files in /tmp.
      const planTmp = fresh("plan-tmp");
      const plan = resolve(templates.get("plan")!, { run, iteration: "0" });
      expectOk("plan", await runContainer(plan.container, { volumes: { data, experiment: experimentDir, tmp: planTmp }, secrets }));
      const count = Number(readFileSync(join(planTmp, "plan", "rollout-count"), "utf8"));
      expect(count).toBe(20);

      // The rollout pods: one rollout template (every quickstart task runs in task-base).
      const rollout = templates.get("rollout")!;
      expect(rollout.containerSet.containers.filter((c: Any) => c.image === IMAGES.taskBase).map((c: Any) => c.name)).toEqual(["harness", "verify"]);
      // The init container copies the bundle into the pod's emptyDir, once here (every pod does it in the cluster).
      const bundleDir = fresh("forge-bundle");
      const [copy] = resolve(rollout.initContainers, { run, iteration: "0", index: "0" });
      expectOk("bundle", await runContainer(copy, { volumes: { "forge-bundle": bundleDir } }));
      expect(existsSync(join(bundleDir, "bin", "forge-step"))).toBe(true);

      const runPod = async (index: number) => {
        const pod = resolve(rollout, { run, iteration: "0", index: String(index) });
        const volumes: Record<string, string> = { data, experiment: experimentDir, "forge-bundle": bundleDir };
        for (const volume of pod.volumes) if (volume.emptyDir && volume.name !== "forge-bundle") volumes[volume.name] = fresh(`pod-${index}/${volume.name}`);
        for (const container of pod.containerSet.containers) {
          const ran = await runContainer(container, { volumes, secrets });
          expectOk(`rollout ${index} ${container.name}`, ran);
        }
      };
      // Two pods at a time (rollouts.parallelism bounds them in the cluster).
      for (let index = 0; index < count; index += 2) await Promise.all([runPod(index), ...(index + 1 < count ? [runPod(index + 1)] : [])]);

      // report: reads the results from the data volume.
      const reportTmp = fresh("report-tmp");
      const report = resolve(templates.get("report")!, { run, iteration: "0" });
      const reported = await runContainer(report.container, { volumes: { data, tmp: reportTmp }, secrets });
      expectOk("report", reported);
      const summary = JSON.parse(reported.stdout.trim().split("\n").at(-1)!) as { rollouts: number; passed: number; scored: number; passRate: number; infraErrors: number };

      // The same rollouts, with the same verdicts, as forge run's.
      const resultsDir = join(data, "results", run, "iteration-0");
      const results = readdirSync(resultsDir)
        .filter((f) => f.endsWith(".json"))
        .map((f) => JSON.parse(readFileSync(join(resultsDir, f), "utf8")) as { rollout_id: string; status: string; reward: number });
      const verdicts = (list: { rollout_id: string; status: string; reward: number }[]) => Object.fromEntries(list.map((r) => [r.rollout_id, `${r.status}:${r.reward}`]));
      expect(verdicts(results)).toEqual(verdicts(localRun.outcomes));
      expect(summary).toMatchObject({ rollouts: 20, scored: 20, infraErrors: 0 });
      expect(summary.passRate).toBeCloseTo(localRun.pass.pass[0]!["pass@1"]);
      // Every rollout's model calls were recorded by the proxy.
      for (const result of results) {
        const stored = (await (await fetch(`${proxy.url}/control/rollouts/${result.rollout_id}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { calls: number };
        expect(stored.calls).toBeGreaterThan(0);
      }

      // export (forge image): the iteration's veRL batch and group dataset on the data volume.
      const exported = await runContainer(resolve(templates.get("export")!, { iteration: "0" }).container, { volumes: { data, tmp: fresh("export-tmp") } });
      expectOk("export", exported);
      const batch = join(data, "exports", run, "iteration-0");
      expect(existsSync(join(batch, "batch.manifest.json"))).toBe(true);

      // admit and the veRL step's init container, from the render of the same experiment with inference servers.
      const trainTemplates = templatesOf(trainObjects);
      const admitTmp = fresh("admit-tmp");
      const admit = resolve(trainTemplates.get("admit")!, { iteration: "0" });
      expectOk("admit", await runContainer(admit.container, { volumes: { data, experiment: experimentDir, tmp: admitTmp }, secrets }));
      const trainBatch = readFileSync(join(admitTmp, "train-batch-size"), "utf8");
      expect(Number(trainBatch)).toBeGreaterThan(0);
      const train = resolve(trainTemplates.get("train-0")!, { "train-batch-size": trainBatch });
      // mirrorVolumeMounts: the init container gets the main container's mounts.
      const verlConfig = { ...train.initContainers[0], volumeMounts: train.container.volumeMounts };
      const verlDir = fresh("verl");
      expectOk("verl-config", await runContainer(verlConfig, { volumes: { data, checkpoints: fresh("checkpoints"), forge: verlDir, dshm: fresh("dshm"), tmp: fresh("verl-tmp") } }));
      expect(readFileSync(join(verlDir, "agent_loop.yaml"), "utf8")).toContain("ForgeAgentLoop");
      expect(existsSync(join(verlDir, "dataset.parquet"))).toBe(true);
    },
    900_000,
  );
  test("Harbor-style tasks with their own Dockerfiles: each rollout's harness and verifier run in that task's image (its content-addressed tag)", async () => {
    const exp = parseExperimentFile(HARBOR);
    exp.spec.proxy.image = IMAGES.forge;
    exp.spec.harness.image = IMAGES.bundle;
    exp.spec.environment.image = IMAGES.taskBase;
    const templates = templatesOf(renderExperiment(exp, { namespace: "forge", experimentPath: HARBOR }) as Any[]);
    const experimentDir = experimentFolder(exp, HARBOR, "harbor-experiment");
    const run = `harbor-${Date.now().toString(36)}`;
    const planTmp = fresh(`${run}-plan`);
    const plan = substitute(templates.get("plan")!, { "workflow.name": run, "inputs.parameters.run": run, "inputs.parameters.iteration": "0" });
    expectOk("plan", await runContainer(plan.container, { volumes: { data, experiment: experimentDir, tmp: planTmp } }));
    const proxyService = "http://harbor-images-proxy.forge.svc:8080";
    // rollouts-e0 / rollouts-e1: each image's range of the plan with its own template.
    const fanOut = templates.get("iteration-0")!.dag.tasks.filter((t: Any) => t.name.startsWith("rollouts-e"));
    const results: { task_id: string; reward: number; status: string }[] = [];
    for (const task of fanOut) {
      const rollout = templates.get(task.template)!;
      const image = rollout.containerSet.containers.find((c: Any) => c.name === "harness").image;
      expect(image).toMatch(/^localhost\/openforge-tasks:env-[0-9a-f]{16}$/);
      const start = Number(task.withSequence.start);
      for (let index = start; index < start + Number(task.withSequence.count); index++) {
        const runs = await runRolloutPod(rollout, { run, index, experimentDir, proxyService });
        for (const [name, ran] of Object.entries(runs)) expectOk(`${run} ${index} ${name}`, ran);
        results.push(JSON.parse(runs.main!.stdout.trim().split("\n").at(-1)!));
      }
    }
    // Both verifiers find what only their own image holds.
    expect(results.map((r) => `${r.task_id}:${r.status === "infra_error" ? "infra" : r.reward}`).sort()).toEqual(["dataset:1", "dataset:1", "motd:1", "motd:1"]);
    // The same rollout in task-base (spec.environment.image) instead: the verifier sees it is not in the task's image.
    const motd = structuredClone(templates.get(fanOut[1].template)!);
    for (const c of motd.containerSet.containers) if (c.name === "harness" || c.name === "verify") c.image = IMAGES.taskBase;
    cpSync(join(data, "plans", run), join(data, "plans", `${run}-x`), { recursive: true });
    const elsewhere = await runRolloutPod(motd, { run: `${run}-x`, index: Number(fanOut[1].withSequence.start), experimentDir, proxyService });
    expect(JSON.parse(elsewhere.main!.stdout.trim().split("\n").at(-1)!)).toMatchObject({ task_id: "motd", reward: 0 });
  }, 600_000);

  test("an image the bundle cannot run in (musl, glibc < 2.28, no /bin/sh): the first step says which image and why, an infrastructure error (main exits 75)", async () => {
    const exp = experiment();
    const templates = templatesOf(renderExperiment(exp, { namespace: "forge", experimentPath: QUICKSTART }) as Any[]);
    const experimentDir = experimentFolder(exp, QUICKSTART, "preflight-experiment");
    const run = `preflight-${Date.now().toString(36)}`;
    const planTmp = fresh(`${run}-plan`);
    const plan = substitute(templates.get("plan")!, { "workflow.name": run, "inputs.parameters.run": run, "inputs.parameters.iteration": "0" });
    expectOk("plan", await runContainer(plan.container, { volumes: { data, experiment: experimentDir, tmp: planTmp } }));
    // Stand-ins for the three kinds of image: a loader script answers --version as glibc's ld.so does.
    const fake = (name: string, files: Record<string, string>) => {
      const root = fresh(`fake-${name}`);
      for (const dir of ["proc", "dev", "tmp", "etc"]) mkdirSync(join(root, dir), { recursive: true });
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(dirname(join(root, path)), { recursive: true });
        writeFileSync(join(root, path), content, { mode: 0o755 });
      }
      return root;
    };
    const loader = (version: string) => `#!/opt/forge/bin/busybox sh\necho "ld.so (GNU libc) stable release version ${version}."\n`;
    const cases = [
      { root: fake("musl", { "lib/ld-musl-x86_64.so.1": "", "bin/sh": "" }), why: /musl libc/ },
      { root: fake("old-glibc", { "lib64/ld-linux-x86-64.so.2": loader("2.17"), "bin/sh": "" }), why: /glibc 2\.17 is older than 2\.28/ },
      { root: fake("no-sh", { "lib64/ld-linux-x86-64.so.2": loader("2.36") }), why: /no \/bin\/sh/ },
    ];
    for (const [index, { root, why }] of cases.entries()) {
      const runs = await runRolloutPod(templates.get("rollout")!, { run, index, experimentDir, proxyService: "http://quickstart-proxy.forge.svc:8080", root });
      expect(runs.harness!.code).toBe(0);
      expect(runs.harness!.stderr).toMatch(new RegExp(`image ${IMAGES.taskBase.replaceAll(".", "\\.")} cannot run the harness bundle: .*${why.source}`));
      // finish counts it as an infrastructure error naming the image, never a failed task.
      expect(runs.main!.code).toBe(75);
      const result = JSON.parse(runs.main!.stdout.trim().split("\n").at(-1)!);
      expect(result).toMatchObject({ status: "infra_error", reward: 0 });
      expect(runs.main!.stderr).toContain(`image ${IMAGES.taskBase} cannot run the harness bundle`);
    }
  }, 300_000);
});

/**
 * The full bundle (images/build.sh --tag full: every pinned CLI; not built in CI, ~3 GB): each
 * harness CLI starts from the bundle inside task-base, as uid 1000 without a passwd entry.
 */
const FULL_BUNDLE = process.env.FORGE_TEST_FULL_BUNDLE ?? `${REGISTRY}/harness-bundle:full`;
const fullMissing = imagesMissing([FULL_BUNDLE, IMAGES.taskBase]);
if (fullMissing) console.warn(`tests/argo/images.test.ts: the full-bundle check skipped: ${fullMissing} (images/build.sh --tag full builds it; not in CI)`);
describe.skipIf(fullMissing !== null)("the full harness bundle", () => {
  test("every pinned harness CLI runs from the bundle inside task-base (uid 1000, no passwd entry)", async () => {
    const bundleDir = fresh("full-bundle");
    const copy = { name: "bundle", image: FULL_BUNDLE, command: ["/opt/forge/bin/busybox", "cp", "-a", "/opt/forge/.", "/forge-bundle/"], volumeMounts: [{ name: "forge-bundle", mountPath: "/forge-bundle" }] };
    expectOk("bundle", await runContainer(copy, { volumes: { "forge-bundle": bundleDir } }));
    const pins = readFileSync(join(bundleDir, "CLIS"), "utf8").trim().split(" ");
    const versions: Record<string, string> = {};
    for (const [cli, pin] of [["codex", "@openai/codex"], ["claude", "@anthropic-ai/claude-code"], ["pi", "@mariozechner/pi-coding-agent"], ["qwen", "@qwen-code/qwen-code"], ["opencode", "opencode-ai"], ["openclaw", "openclaw"]] as const) {
      const version = pins.find((p) => p.startsWith(`${pin}@`))!.slice(pin.length + 1);
      // Through the bundle's step runner's environment: its PATH and Node preload (forge-step).
      const script = `export PATH=/opt/forge/cli/bin:/opt/forge/node/bin:$PATH NODE_OPTIONS="--require /opt/forge/lib/userinfo.cjs"; ${cli} --version`;
      const ran = await runContainer(
        { name: cli, image: IMAGES.taskBase, command: ["/opt/forge/bin/busybox", "sh", "-c", script], env: [{ name: "HOME", value: "/home-rw" }], volumeMounts: [{ name: "forge-bundle", mountPath: "/opt/forge", readOnly: true }, { name: "home", mountPath: "/home-rw" }], securityContext: { readOnlyRootFilesystem: false } },
        { volumes: { "forge-bundle": bundleDir, home: fresh(`home-${cli}`) } },
      );
      versions[cli] = ran.code === 0 && (ran.stdout + ran.stderr).includes(version) ? version : `exit ${ran.code}: ${(ran.stdout + ran.stderr).trim().slice(-300)}`;
      expect({ cli, version: versions[cli] }).toEqual({ cli, version });
    }
  }, 600_000);
});

