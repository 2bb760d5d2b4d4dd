/**
 * The steps that run inside the workflow's pods (`bun workflows/argo/step.ts STEP …`): they
 * talk to the proxy's control API over HTTP (docs/contracts.md) and to the Kubernetes API
 * with the pod's service account. Exit code 75 (EX_TEMPFAIL) marks an infrastructure error,
 * the only kind the rollout template retries.
 */
import { spawn } from "node:child_process";
import { cpSync, createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import type { Experiment } from "../../schemas/index.ts";
import { harnessInvocation, type HarnessInvocation, type Registration } from "./harness.ts";
import { ANNOTATION_DESCRIPTION, ANNOTATION_PASS_RATE } from "./names.ts";
import { readReward } from "../local/reward.ts";
import { loadTask } from "./task.ts";
import { INFRA_EXIT_CODE } from "./workflow.ts";

/** An error the step cannot fix by itself and a retry of the pod may: exits 75. */
export class InfraError extends Error {
  override name = "InfraError";
}

type RolloutIds = { rolloutId: string; taskId: string; iteration: number; attempt: number; group: string };

function adminToken(): string {
  const token = process.env.FORGE_ADMIN_TOKEN;
  if (!token) throw new Error("FORGE_ADMIN_TOKEN is not set (the experiment's admin Secret; forge submit creates it)");
  return token;
}

/** POST to the proxy's control API; network errors and 5xx are infrastructure errors. */
export async function control(proxy: string, path: string, body: unknown): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(`${proxy}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${adminToken()}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
  } catch (error) {
    throw new InfraError(`proxy ${proxy}${path} unreachable: ${(error as Error).message}`);
  }
  const text = await response.text();
  if (response.status >= 500) throw new InfraError(`proxy ${path}: HTTP ${response.status}: ${text}`);
  if (!response.ok) throw new Error(`proxy ${path}: HTTP ${response.status}: ${text}`);
  return text ? JSON.parse(text) : {};
}

function writeTree(root: string, files: Map<string, Uint8Array> | Record<string, string>) {
  const entries = files instanceof Map ? [...files] : Object.entries(files);
  for (const [path, content] of entries) {
    const target = join(root, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
  }
}

/**
 * Registers the rollout with the proxy, stages the task's files into the workspace, and
 * writes what the harness and verify containers need into the state directory.
 */
export async function registerStep(options: { experiment: Experiment; experimentDir: string; proxy: string; workspace: string; state: string } & RolloutIds) {
  const { experiment } = options;
  const { task, files } = loadTask(experiment, options.experimentDir, options.taskId);
  const registration = (await control(options.proxy, "/control/rollouts", {
    rollout_id: options.rolloutId,
    experiment: experiment.metadata.name,
    iteration: options.iteration,
    task_id: options.taskId,
    group: options.group,
    attempt: options.attempt,
    harness: experiment.spec.harness.name,
  })) as Registration;
  writeTree(options.workspace, files);
  const home = join(options.state, "home");
  mkdirSync(home, { recursive: true });
  const invocation = harnessInvocation({ experiment, registration, instruction: task.instruction, workspace: options.workspace, home });
  writeFileSync(join(options.state, "instruction.md"), task.instruction);
  writeFileSync(join(options.state, "harness.json"), JSON.stringify(invocation));
  const { experiment: _, ...ids } = options;
  writeFileSync(join(options.state, "rollout.json"), JSON.stringify({ ...ids, registration, timeoutSeconds: task.agentTimeoutSeconds }));
  console.log(`registered ${registration.rollout_id} (task ${options.taskId}, policy version ${registration.policy_version ?? "?"})`);
}

export type HarnessOutcome = { exit_code: number | null; signal: string | null; timed_out: boolean; duration_ms: number; error?: string };

/** Runs `command` as its own process group; on timeout the whole group is killed. */
export function runGroup(command: string[], options: { cwd: string; env: Record<string, string>; timeoutMs: number; log: string }): Promise<HarnessOutcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const log = createWriteStream(options.log);
    const child = spawn(command[0]!, command.slice(1), { cwd: options.cwd, env: options.env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (chunk) => (process.stdout.write(chunk), log.write(chunk)));
    child.stderr.on("data", (chunk) => (process.stderr.write(chunk), log.write(chunk)));
    let timedOut = false;
    const kill = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal);
      } catch {}
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill("SIGTERM");
      setTimeout(() => kill("SIGKILL"), 10_000).unref();
    }, options.timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      log.end();
      resolve({ exit_code: null, signal: null, timed_out: false, duration_ms: Date.now() - started, error: error.message });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      log.end();
      resolve({ exit_code: code, signal, timed_out: timedOut, duration_ms: Date.now() - started });
    });
  });
}

/** The harness container: runs the prepared invocation with the timeout; always exits 0 so verify runs. */
export async function harnessStep(options: { state: string; workspace: string; timeoutSeconds: number }) {
  const invocation = JSON.parse(readFileSync(join(options.state, "harness.json"), "utf8")) as HarnessInvocation;
  // A task's own timeout (task.toml [agent] timeout_sec) may shorten the experiment's, not
  // lengthen it: the pod's activeDeadlineSeconds is derived from rollouts.timeoutSeconds.
  const rollout = JSON.parse(readFileSync(join(options.state, "rollout.json"), "utf8")) as { timeoutSeconds?: number };
  const timeoutSeconds = Math.min(rollout.timeoutSeconds ?? Infinity, options.timeoutSeconds);
  // Config files are written here, not in the register container: only the volumes are shared.
  writeTree("/", invocation.files);
  const { FORGE_ADMIN_TOKEN: _never, ...inherited } = process.env as Record<string, string>;
  const outcome =
    invocation.command.length === 0
      ? { exit_code: null, signal: null, timed_out: false, duration_ms: 0, error: "empty harness command" }
      : await runGroup(invocation.command, {
          cwd: options.workspace,
          env: { ...inherited, ...invocation.env },
          timeoutMs: timeoutSeconds * 1000,
          log: join(options.state, "harness.log"),
        });
  writeFileSync(join(options.state, "harness-result.json"), JSON.stringify(outcome));
  console.log(`harness ${outcome.timed_out ? "timed out" : `exited ${outcome.exit_code ?? outcome.error}`} after ${outcome.duration_ms} ms`);
}

/**
 * The verify container: runs the task's verifier in the workspace (its tests in $FORGE_TESTS,
 * its logs and reward file in $FORGE_LOGS, as the local executor gives them) and reports
 * reward and status to the proxy. Same rules as workflows/local: no verifier → the harness's
 * exit code decides; a verifier timeout is status timeout; the verifier runs after a harness
 * crash or timeout too, and the status still says what went wrong.
 */
export async function verifyStep(options: { experiment: Experiment; experimentDir: string; proxy: string; workspace: string; state: string } & RolloutIds) {
  const { experiment } = options;
  const { task, testFiles, testScript, verifier } = loadTask(experiment, options.experimentDir, options.taskId);
  const harness = JSON.parse(readFileSync(join(options.state, "harness-result.json"), "utf8")) as HarnessOutcome;
  const testsDir = join(options.state, "tests");
  const logsDir = join(options.state, "logs", "verifier");
  mkdirSync(logsDir, { recursive: true });
  writeTree(testsDir, testFiles);
  const harnessLog = join(options.state, "harness.log");
  let status: "ok" | "failed" | "timeout" | "infra_error" = harness.error ? "infra_error" : harness.timed_out ? "timeout" : harness.exit_code === 0 ? "ok" : "failed";
  let reward: number;
  let verifierOutput: string;
  if (verifier.kind === "expected") {
    const found = existsSync(harnessLog) && readFileSync(harnessLog, "utf8").includes(verifier.text);
    reward = found ? 1 : 0;
    verifierOutput = `expected ${JSON.stringify(verifier.text)} ${found ? "found" : "not found"} in the harness output`;
  } else if (!testScript) {
    reward = status === "ok" ? 1 : 0;
    verifierOutput = `no verifier: reward from the harness exit code (${harness.exit_code ?? harness.signal})`;
  } else {
    // The verifier is task code too: it does not get the admin token either.
    const { FORGE_ADMIN_TOKEN: _token, ...inherited } = process.env as Record<string, string>;
    const env = { ...inherited, FORGE_TESTS: testsDir, FORGE_LOGS: logsDir, FORGE_WORKSPACE: options.workspace, FORGE_HARNESS_STDOUT: harnessLog };
    const seconds = task.verifierTimeoutSeconds ?? 600;
    const log = join(options.state, "verifier.log");
    const outcome = await runGroup(["bash", join(testsDir, testScript)], { cwd: options.workspace, env, timeoutMs: seconds * 1000, log });
    verifierOutput = readFileSync(log, "utf8").slice(-4000);
    if (outcome.error) throw new InfraError(`verifier did not start: ${outcome.error}`);
    if (outcome.timed_out) {
      reward = 0;
      verifierOutput += `\n[verifier killed after ${seconds} s]`;
      if (status === "ok") status = "timeout";
    } else {
      const read = readReward({ logsDir, workspace: options.workspace, exitCode: outcome.exit_code });
      reward = read.reward;
      verifierOutput += `${read.error ? `\n${read.error}` : ""}\n[reward ${read.reward} from ${read.source}]`;
    }
  }
  await control(options.proxy, `/control/rollouts/${encodeURIComponent(options.rolloutId)}/finish`, {
    reward,
    status,
    verifier_output: verifierOutput,
    ...(harness.error ? { error: harness.error } : {}),
    metrics: { harness_exit_code: harness.exit_code ?? -1, harness_duration_ms: harness.duration_ms },
  });
  const passed = status !== "infra_error" && reward >= experiment.spec.metrics.passThreshold;
  const result = { rollout_id: options.rolloutId, task_id: options.taskId, reward, status, passed };
  writeFileSync(join(options.state, "result.json"), JSON.stringify(result));
  console.log(JSON.stringify(result));
  // A harness that could not start is the image's fault, not the policy's: let Argo retry.
  if (harness.error) throw new InfraError(`harness did not start: ${harness.error}`);
}

export type IterationReport = { iteration: number; rollouts: number; scored: number; passed: number; infraErrors: number; passRate: number; meanReward: number };

/**
 * Aggregates the rollouts' results. Argo hands the fanned-out output parameters over as a JSON
 * list whose items may be JSON strings or objects. Infra errors are left out of the pass rate.
 *
 * @example
 * summarizeResults('[{"reward":1,"status":"ok","passed":true}]', 0).passRate // 1
 */
export function summarizeResults(raw: string, iteration: number): IterationReport {
  const list = JSON.parse(raw || "[]") as unknown[];
  const results = list.map((item) => (typeof item === "string" ? JSON.parse(item) : item) as { reward?: number; status?: string; passed?: boolean });
  const scored = results.filter((r) => r.status !== "infra_error");
  const passed = scored.filter((r) => r.passed).length;
  const meanReward = scored.length ? scored.reduce((sum, r) => sum + (r.reward ?? 0), 0) / scored.length : 0;
  return {
    iteration,
    rollouts: results.length,
    scored: scored.length,
    passed,
    infraErrors: results.length - scored.length,
    passRate: scored.length ? passed / scored.length : 0,
    meanReward,
  };
}

/**
 * In-cluster config for the steps that annotate the workflow; null outside a cluster.
 * client-node is loaded only here: most steps never need it, and it is slow to import.
 */
async function inClusterConfig(): Promise<KubeConfig | null> {
  const { KubeConfig } = await import("@kubernetes/client-node");
  try {
    const kc = new KubeConfig();
    kc.loadFromDefault();
    return kc.getCurrentCluster() ? kc : null;
  } catch {
    return null;
  }
}

/** The report step: pass rate of the iteration, onto the workflow's annotations (for the Argo UI). */
export async function reportStep(options: { results: string; iteration: number; workflow: string; namespace: string; out: string }) {
  const report = summarizeResults(readFileSync(options.results, "utf8"), options.iteration);
  const rate = report.passRate.toFixed(3);
  writeFileSync(options.out, rate);
  console.log(JSON.stringify(report));
  const kc = await inClusterConfig();
  if (!kc) return;
  try {
    const { annotateWorkflow } = await import("./kube.ts");
    await annotateWorkflow(kc, options.namespace, options.workflow, {
      [ANNOTATION_PASS_RATE]: rate,
      [`${ANNOTATION_PASS_RATE}.iteration-${options.iteration}`]: rate,
      [ANNOTATION_DESCRIPTION]: `iteration ${options.iteration}: pass rate ${rate} (${report.passed}/${report.scored} passed, ${report.infraErrors} infra errors), mean reward ${report.meanReward.toFixed(3)}`,
    });
  } catch (error) {
    // The numbers are in the step's output parameter either way; the annotation is for the UI.
    console.error(`could not annotate workflow ${options.workflow}: ${(error as Error).message}`);
  }
}

/**
 * Weight sync: pause the proxy (drain in-flight calls), load the new checkpoint into every
 * inference server, resume with the new policy version. If loading fails the proxy is resumed
 * on the old version before the step fails, so a failed sync never leaves rollouts stalled.
 */
export async function syncStep(options: {
  proxy: string;
  strategy: string;
  checkpoint: string;
  policyVersion: number;
  servers: string[];
  deployment?: string;
  namespace: string;
  timeoutSeconds?: number;
}) {
  await control(options.proxy, "/control/pause", { timeout_ms: (options.timeoutSeconds ?? 600) * 1000 });
  let loaded = false;
  try {
    if (options.strategy === "update-from-disk") {
      if (options.servers.length === 0) throw new Error("weight sync update-from-disk needs spec.training.weightSync.servers or spec.policy.upstreams");
      for (const server of options.servers) {
        // SGLang's endpoint (vLLM serves the same path with its dev weight-update extension).
        const response = await fetch(`${server.replace(/\/v1\/?$/, "")}/update_weights_from_disk`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model_path: options.checkpoint }),
        });
        if (!response.ok) throw new Error(`${server}: update_weights_from_disk HTTP ${response.status}: ${await response.text()}`);
        console.log(`loaded ${options.checkpoint} into ${server}`);
      }
    } else if (options.strategy === "restart") {
      if (!options.deployment) throw new Error("weight sync restart needs spec.training.weightSync.deployment");
      const kc = await inClusterConfig();
      if (!kc) throw new Error("weight sync restart must run inside the cluster");
      const { AppsV1Api, PatchStrategy, setHeaderOptions } = await import("@kubernetes/client-node");
      const apps = kc.makeApiClient(AppsV1Api);
      await apps.patchNamespacedDeployment(
        {
          name: options.deployment,
          namespace: options.namespace,
          body: { spec: { template: { metadata: { annotations: { "openforge.dev/policy-version": String(options.policyVersion), "openforge.dev/checkpoint": options.checkpoint } } } } },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
      const deadline = Date.now() + (options.timeoutSeconds ?? 600) * 1000;
      for (;;) {
        const d = await apps.readNamespacedDeployment({ name: options.deployment, namespace: options.namespace });
        const want = d.spec?.replicas ?? 1;
        if ((d.status?.updatedReplicas ?? 0) >= want && (d.status?.readyReplicas ?? 0) >= want && (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0)) break;
        if (Date.now() > deadline) throw new Error(`deployment ${options.deployment} did not become ready in time`);
        await Bun.sleep(5000);
      }
    }
    loaded = true;
  } finally {
    await control(options.proxy, "/control/resume", { policy_version: loaded ? options.policyVersion : options.policyVersion - 1 });
  }
  console.log(`proxy resumed at policy version ${options.policyVersion}`);
}

/**
 * The veRL step's init container: copies the ForgeAgentLoop package (integrations/verl) to
 * `out` (on the trainer's PYTHONPATH) and writes the agent-loop config that replays this
 * iteration's exported batch (`actor_rollout_ref.rollout.agent.agent_loop_config_path`).
 * With `trainBatchSize`, first checks the export's manifest: the group dataset veRL trains on
 * must hold at least that many rows, or veRL (drop_last) stops with "Train dataloader is empty!"
 * after minutes of start-up; this says which groups went missing instead.
 */
export function verlConfigStep(options: { source: string; out: string; batch: string; experimentName: string; trainBatchSize?: number }) {
  if (options.trainBatchSize !== undefined) checkGroupDataset(options.batch, options.trainBatchSize);
  mkdirSync(options.out, { recursive: true });
  cpSync(options.source, options.out, { recursive: true });
  const config = [{ name: "forge_agent", _target_: "forge_verl.agent_loop.ForgeAgentLoop", mode: "replay", batch_path: options.batch, experiment: options.experimentName }];
  writeFileSync(join(options.out, "agent_loop.yaml"), stringify(config));
  console.log(`veRL agent loop: replay ${options.batch}`);
}

/** The manifest `forge export` writes beside a batch (trajectories/ manifestPath). */
const exportManifestPath = (batch: string) => `${batch.replace(/\.(parquet|jsonl)$/, "")}.manifest.json`;

/** Throws unless the batch's group dataset (`--group-rows`) has at least `rows` rows. */
function checkGroupDataset(batch: string, rows: number) {
  const path = exportManifestPath(batch);
  if (!existsSync(path)) throw new Error(`${path}: no export manifest (did the export step of this iteration run?)`);
  const manifest = JSON.parse(readFileSync(path, "utf8")) as {
    group_dataset?: { path: string; rows: number; samples_per_row: number; short_groups: number } | null;
    groups?: { seen: number; kept: number };
  };
  const groups = manifest.group_dataset;
  if (!groups) throw new Error(`${path}: the export wrote no group dataset (run forge export with --group-rows k; veRL trains on it)`);
  if (groups.rows < rows) {
    throw new Error(
      `${groups.path}: ${groups.rows} group rows, fewer than data.train_batch_size=${rows} (veRL would stop with "Train dataloader is empty!"): ` +
        `${groups.short_groups} groups had fewer than ${groups.samples_per_row} samples and ${(manifest.groups?.seen ?? 0) - (manifest.groups?.kept ?? 0)} were dropped below --min-group-size ` +
        `(infrastructure errors are left out, not scored 0; see the manifest). Lower it with training.overrides: data.train_batch_size=${Math.max(groups.rows, 1)}.`,
    );
  }
}

/** The exit handler: the final state onto the workflow's description. */
export async function exitStep(options: { workflow: string; namespace: string; status: string; duration: string }) {
  const kc = await inClusterConfig();
  const line = `${options.status} after ${Math.round(Number(options.duration) || 0)} s`;
  console.log(`workflow ${options.workflow}: ${line}`);
  if (!kc) return;
  try {
    const { annotateWorkflow } = await import("./kube.ts");
    await annotateWorkflow(kc, options.namespace, options.workflow, { "openforge.dev/final-status": line });
  } catch (error) {
    console.error(`could not annotate workflow ${options.workflow}: ${(error as Error).message}`);
  }
}

export { INFRA_EXIT_CODE };
