/**
 * The four containers of a rollout pod (`bun workflows/argo/step.ts register | harness | verify |
 * finish`), each with only the volumes and secrets its job needs (docs/argo.md, "rollout"):
 *
 *   register  forge image, admin token   registers this try with the proxy, stages the workspace
 *   harness   harness image, no token     runs the harness; its outcome → /harness-out
 *   verify    harness image, no token     runs the verifier on a copy of the workspace; its
 *                                         output → /verdict, a volume the harness never mounted
 *   finish    forge image, admin token    (the `main` container, whose exit code Argo's retry
 *                                         reads) scores, reports to the proxy, writes the result
 *
 * Only `finish` exits non-zero on its own: 75 (INFRA_EXIT_CODE) for an infrastructure error
 * (proxy unreachable, registration failed, the harness's launcher failed or was OOM-killed),
 * which the template retries as a new try; 1 for an error a retry cannot fix. The other three
 * always exit 0 and leave their outcome in a file, because a failed dependency makes Argo's
 * emissary exit 64 in `main` instead of passing the code on.
 */
import { spawn } from "node:child_process";
import { accessSync, constants, cpSync, createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Experiment } from "../../schemas/index.ts";
import { readReward } from "../local/reward.ts";
import { passed } from "../local/passk.ts";
import { modelContextWindow } from "../harnesses/index.ts";
import { harnessInvocation, type HarnessInvocation, type Registration } from "./harness.ts";
import { POD_PATHS } from "./names.ts";
import { control, ControlRefusal, InfraError } from "./pod.ts";
import { loadTask } from "./task.ts";
import { podBrowserServer, POD_SITE_LOG_DIR, POD_SITE_URL } from "./gui.ts";

export { POD_PATHS };

export type RolloutIds = { rolloutId: string; firstId: string; retry: number; taskId: string; iteration: number; attempt: number; group: string };

/** /control/register.json: what the register container achieved. */
type RegisterOutcome =
  | { registered: true; rollout_id: string }
  | { done: true; rollout_id: string; result: { reward?: number; status?: string } }
  | { error: string; infra: boolean };

/** /harness-out/harness-result.json */
export type HarnessOutcome = {
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  duration_ms: number;
  /** The harness could not be started at all. */
  error?: string;
  /** The harness did not run because the rollout was not registered (or already done). */
  skipped?: string;
  /** The container's memory cgroup counted an OOM kill while the harness ran. */
  oom_killed?: boolean;
};

/** /verdict/verifier.json */
type VerifierOutcome = { exit_code: number | null; signal: string | null; timed_out: boolean; duration_ms: number; error?: string; skipped?: string; output: string };

/** This repository's root, wherever this step runs from: /app in the forge image, /opt/forge/app in the harness bundle. */
const APP_DIR = join(import.meta.dir, "..", "..");

/**
 * The invocation as the harness container runs it: register resolved it in the forge image (Bun
 * at its process.execPath, this repository at its APP_DIR); the harness runs from the bundle
 * inside the task's image (images/harness-bundle), where both are elsewhere. Paths of the one are
 * mapped to the other in the command and the environment (forge-react runs `bun main.ts`).
 */
export function relocateInvocation(invocation: HarnessInvocation & { runtime?: { bun: string; app: string } }, here = { bun: process.execPath, app: APP_DIR }): HarnessInvocation {
  const from = invocation.runtime;
  if (!from || (from.bun === here.bun && from.app === here.app)) return invocation;
  const map = (value: string) => (value === from.bun ? here.bun : value.startsWith(`${from.app}/`) ? `${here.app}${value.slice(from.app.length)}` : value);
  return { ...invocation, command: invocation.command.map(map), env: Object.fromEntries(Object.entries(invocation.env).map(([k, v]) => [k, map(v)])) };
}

/** Exit codes of a launcher that could not run the harness (as in workflows/local/rollout.ts). */
const LAUNCHER_EXIT_CODES: Record<number, string> = { 126: "found but not executable", 127: "not found" };

const readJson = <T>(path: string): T | undefined => (existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as T) : undefined);

function writeTree(root: string, files: Map<string, Uint8Array> | Record<string, string>) {
  const entries = files instanceof Map ? [...files] : Object.entries(files);
  for (const [path, content] of entries) {
    const target = join(root, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
  }
}

/** Retries a control call on infrastructure errors (a few seconds: the pod-level retry is the backstop). */
async function withRetries<T>(call: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof InfraError) || attempt >= attempts) throw error;
      await Bun.sleep(1000 * 2 ** (attempt - 1));
    }
  }
}

/**
 * The register container: registers this try (a retry names the first try, so the proxy
 * supersedes the earlier unfinished ones), stages the task's files into the workspace and the
 * harness invocation into the state volume. Never exits non-zero for a failure: it leaves the
 * outcome in /control/register.json for `finish`.
 */
export async function registerStep(options: { experiment: Experiment; experimentDir: string; proxy: string; workspace: string; state: string; controlDir: string; siteUrl?: string; playwrightMcpCli?: string } & RolloutIds) {
  const { experiment } = options;
  const outcomeFile = join(options.controlDir, "register.json");
  const write = (outcome: RegisterOutcome) => writeFileSync(outcomeFile, JSON.stringify(outcome));
  try {
    const { task, files } = loadTask(experiment, options.experimentDir, options.taskId);
    let registration: Registration;
    try {
      registration = (await withRetries(() =>
        control(options.proxy, "/control/rollouts", {
          rollout_id: options.rolloutId,
          experiment: experiment.metadata.name,
          iteration: options.iteration,
          task_id: options.taskId,
          group: options.group,
          attempt: options.attempt,
          harness: experiment.spec.harness.name,
          ...(options.retry > 0 ? { retry_of: options.firstId, retry: options.retry } : {}),
        }),
      )) as Registration;
    } catch (error) {
      // An earlier try finished with a verdict (its pod failed afterwards): this try is not run.
      if (error instanceof ControlRefusal && error.code === "rollout_finished" && error.param) {
        const done = (await control(options.proxy, `/control/rollouts/${encodeURIComponent(error.param)}`, undefined, "GET")) as { result?: { reward?: number; status?: string } };
        write({ done: true, rollout_id: error.param, result: done.result ?? {} });
        console.log(`rollout ${options.firstId} already finished in try ${error.param}; nothing to run`);
        return;
      }
      // 409 rollout_exists: this very try registered but its answer (with the key) was lost; a
      // new try gets a new id, so it is an infrastructure error like an unreachable proxy.
      throw error instanceof ControlRefusal && error.code === "rollout_exists" ? new InfraError(error.message) : error;
    }
    writeTree(options.workspace, files);
    const home = join(options.state, "home");
    mkdirSync(home, { recursive: true });
    const contextWindow = await modelContextWindow(registration.openai_base_url, registration.api_key, experiment.spec.policy.model);
    // A browser task: Playwright's MCP server with the harness image's Chromium; a site: the
    // sidecar's URL on the pod's loopback (gui.ts), as the local executor gives them.
    const invocation = harnessInvocation({
      experiment,
      registration,
      instruction: task.instruction,
      workspace: options.workspace,
      home,
      contextWindow,
      ...(task.browser ? { browser: podBrowserServer(experiment, home, options.playwrightMcpCli) } : {}),
      ...(task.siteDir ? { siteUrl: options.siteUrl ?? POD_SITE_URL } : {}),
    });
    writeFileSync(join(options.state, "harness.json"), JSON.stringify({ ...invocation, runtime: { bun: process.execPath, app: APP_DIR } }));
    writeFileSync(join(options.state, "rollout.json"), JSON.stringify({ rollout_id: registration.rollout_id, timeoutSeconds: task.agentTimeoutSeconds }));
    write({ registered: true, rollout_id: registration.rollout_id });
    console.log(`registered ${registration.rollout_id} (task ${options.taskId}, try ${options.retry}, policy version ${registration.policy_version ?? "?"})`);
  } catch (error) {
    const message = (error as Error).message;
    write({ error: message, infra: error instanceof InfraError });
    console.error(`register: ${message}`);
  }
}

/** Runs `command` as its own process group; on timeout the whole group is killed. */
export function runGroup(command: string[], options: { cwd: string; env: Record<string, string>; timeoutMs: number; log: string }): Promise<Omit<HarnessOutcome, "skipped" | "oom_killed">> {
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
    // The log file is opened asynchronously: resolve once it is written and closed, so the
    // caller can read it (a fast command could otherwise end before the file exists).
    const done = (outcome: Omit<HarnessOutcome, "skipped" | "oom_killed">) => log.end(() => resolve(outcome));
    child.on("error", (error) => {
      clearTimeout(timer);
      done({ exit_code: null, signal: null, timed_out: false, duration_ms: Date.now() - started, error: error.message });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      // Whatever the leader left running in its group goes too.
      kill("SIGKILL");
      done({ exit_code: code, signal, timed_out: timedOut, duration_ms: Date.now() - started });
    });
  });
}

/**
 * OOM kills counted by this container's memory cgroup (v2 `memory.events`, v1
 * `memory.oom_control`); undefined where neither is readable.
 */
export function oomKills(): number | undefined {
  for (const [file, pattern] of [
    ["/sys/fs/cgroup/memory.events", /^oom_kill (\d+)$/m],
    ["/sys/fs/cgroup/memory/memory.oom_control", /^oom_kill (\d+)$/m],
  ] as const) {
    try {
      const match = pattern.exec(readFileSync(file, "utf8"));
      if (match) return Number(match[1]);
    } catch {}
  }
  return undefined;
}

/** An absolute path that exists and is executable (or a readable file, for a script), or a command on PATH. */
function present(path: string): boolean {
  if (!path.startsWith("/")) return Bun.which(path, { PATH: process.env.PATH ?? "" }) !== null;
  try {
    accessSync(path, path.endsWith(".js") ? constants.R_OK : constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The harness container: runs the prepared invocation with the timeout; always exits 0. */
export async function harnessStep(options: { state: string; workspace: string; harnessOut: string; timeoutSeconds: number }) {
  const resultFile = join(options.harnessOut, "harness-result.json");
  const invocationFile = join(options.state, "harness.json");
  if (!existsSync(invocationFile)) {
    const outcome: HarnessOutcome = { exit_code: null, signal: null, timed_out: false, duration_ms: 0, skipped: "the rollout was not registered by this try" };
    writeFileSync(resultFile, JSON.stringify(outcome));
    console.log(`harness: not run (${outcome.skipped})`);
    return;
  }
  const invocation = relocateInvocation(JSON.parse(readFileSync(invocationFile, "utf8")) as HarnessInvocation);
  // A task's own timeout (task.toml [agent] timeout_sec) may shorten the experiment's, not
  // lengthen it: the pod's activeDeadlineSeconds is derived from rollouts.timeoutSeconds.
  const rollout = JSON.parse(readFileSync(join(options.state, "rollout.json"), "utf8")) as { timeoutSeconds?: number };
  const timeoutSeconds = Math.min(rollout.timeoutSeconds ?? Infinity, options.timeoutSeconds);
  // What the harness needs from this image (a browser task's Chromium, node, MCP server): missing,
  // the image is wrong, not the policy: an infrastructure error naming what to fix.
  const missing = (invocation.preflight ?? []).filter((need) => !present(need.path)).map((need) => `${need.why} (looked for ${need.path})`);
  if (missing.length > 0) {
    const outcome: HarnessOutcome = { exit_code: null, signal: null, timed_out: false, duration_ms: 0, error: `${missing.join("; ")}; docs/gui.md, "On Argo"` };
    writeFileSync(resultFile, JSON.stringify(outcome));
    console.error(`harness: not started: ${outcome.error}`);
    return;
  }
  // Config files are written here, not in the register container: only the volumes are shared.
  writeTree("/", invocation.files);
  // This container is given no secret; the scrub is a second line in case a pod spec adds one.
  const { FORGE_ADMIN_TOKEN: _never, ...inherited } = process.env as Record<string, string>;
  const oomBefore = oomKills();
  const outcome: HarnessOutcome =
    invocation.command.length === 0
      ? { exit_code: null, signal: null, timed_out: false, duration_ms: 0, error: "empty harness command" }
      : await runGroup(invocation.command, {
          cwd: options.workspace,
          env: { ...inherited, ...invocation.env },
          timeoutMs: timeoutSeconds * 1000,
          log: join(options.harnessOut, "harness.log"),
        });
  const oomAfter = oomKills();
  if (oomBefore !== undefined && oomAfter !== undefined && oomAfter > oomBefore) outcome.oom_killed = true;
  writeFileSync(resultFile, JSON.stringify(outcome));
  console.log(`harness ${outcome.timed_out ? "timed out" : `exited ${outcome.exit_code ?? outcome.signal ?? outcome.error}`} after ${outcome.duration_ms} ms${outcome.oom_killed ? " (OOM kill)" : ""}`);
}

/** Why the harness's run cannot be scored (the infrastructure failed it), if so. */
function launcherFailure(harness: HarnessOutcome | undefined): string | undefined {
  if (!harness) return "the harness container left no outcome (it was killed or never started)";
  if (harness.skipped) return harness.skipped;
  if (harness.error) return `harness did not start: ${harness.error}`;
  if (harness.oom_killed) return `the harness was OOM-killed (exit ${harness.exit_code ?? harness.signal}); raise spec.rollouts.resources.memory`;
  if (!harness.timed_out && harness.exit_code !== null && LAUNCHER_EXIT_CODES[harness.exit_code]) return `harness: launcher failed with exit ${harness.exit_code} (command ${LAUNCHER_EXIT_CODES[harness.exit_code]})`;
  return undefined;
}

/**
 * The verify container (harness image, no secret): runs the task's verifier after the harness
 * container has exited, on a copy of the workspace (the workspace volume is mounted read-only
 * here), with its tests from the experiment volume and a fresh output directory ($FORGE_LOGS =
 * /verdict/logs) on a volume the harness container never had. Always exits 0.
 */
export async function verifyStep(options: { experiment: Experiment; experimentDir: string; workspace: string; harnessOut: string; verdict: string; scratch: string; taskId: string; siteLog?: string }) {
  const outcomeFile = join(options.verdict, "verifier.json");
  const write = (outcome: VerifierOutcome) => writeFileSync(outcomeFile, JSON.stringify(outcome));
  const harness = readJson<HarnessOutcome>(join(options.harnessOut, "harness-result.json"));
  const notRun = launcherFailure(harness);
  const { task, testFiles, testScript } = loadTask(options.experiment, options.experimentDir, options.taskId);
  if (notRun || !testScript) {
    write({ exit_code: null, signal: null, timed_out: false, duration_ms: 0, output: "", skipped: notRun ?? "the task is scored from the harness output (expected)" });
    return;
  }
  const logs = join(options.verdict, "logs");
  const tests = join(options.scratch, "tests");
  const copy = join(options.scratch, "workspace");
  const home = join(options.scratch, "home");
  for (const path of [logs, tests, copy, home]) rmSync(path, { recursive: true, force: true });
  for (const path of [logs, tests, home]) mkdirSync(path, { recursive: true });
  writeTree(tests, testFiles);
  const copied = Bun.spawnSync(["cp", "-a", "--no-target-directory", options.workspace, copy], { stdout: "ignore", stderr: "pipe" });
  const copyNote = copied.exitCode === 0 ? "" : `[some workspace entries could not be copied for the verifier: ${copied.stderr.toString().trim().slice(0, 500)}]\n`;
  if (!existsSync(copy)) {
    write({ exit_code: null, signal: null, timed_out: false, duration_ms: 0, output: copyNote, error: "cannot copy the workspace for the verifier" });
    return;
  }
  // A task with a site is scored from the site's request log, which the site sidecar wrote to a
  // volume mounted read-only here and nowhere the harness ran (gui.ts).
  let siteLog: string | undefined;
  if (task.siteDir) {
    siteLog = join(options.siteLog ?? POD_SITE_LOG_DIR, "requests.jsonl");
    if (!existsSync(siteLog)) {
      write({ exit_code: null, signal: null, timed_out: false, duration_ms: 0, output: copyNote, error: `the site sidecar left no request log at ${siteLog} (was the pod rendered with the task's site? its container log says why)` });
      return;
    }
  }
  const { FORGE_ADMIN_TOKEN: _never, ...inherited } = process.env as Record<string, string>;
  const env = { ...inherited, HOME: home, FORGE_TESTS: tests, FORGE_LOGS: logs, FORGE_WORKSPACE: copy, FORGE_HARNESS_STDOUT: join(options.harnessOut, "harness.log"), ...(siteLog ? { FORGE_SITE_LOG: siteLog } : {}) };
  const seconds = task.verifierTimeoutSeconds ?? 600;
  const log = join(options.verdict, "verifier.log");
  const outcome = await runGroup(["bash", join(tests, testScript)], { cwd: copy, env, timeoutMs: seconds * 1000, log });
  write({ ...outcome, output: `${copyNote}${readFileSync(log, "utf8").slice(-4000)}${outcome.timed_out ? `\n[verifier killed after ${seconds} s]` : ""}` });
  console.log(`verifier ${outcome.timed_out ? "timed out" : `exited ${outcome.exit_code ?? outcome.signal ?? outcome.error}`} after ${outcome.duration_ms} ms`);
}

export type FinishOutcome = { rollout_id: string; task_id: string; reward: number; status: "ok" | "failed" | "timeout" | "infra_error"; passed: boolean };

/**
 * The `main` container: turns what the other three left into the rollout's verdict, reports it
 * to the proxy (the same body again when this container is re-run: finish is idempotent for the
 * same verdict) and writes /control/result.json (and, with `onResult`, the result file the
 * report step reads from the data volume). The reward
 * comes only from /verdict (or the verifier's exit code when the task declares it), range-checked.
 */
export async function finishStep(
  options: { experiment: Experiment; experimentDir: string; proxy: string; harnessOut: string; verdict: string; controlDir: string; onResult?: (result: FinishOutcome) => void } & RolloutIds,
) {
  const { experiment } = options;
  const resultFile = join(options.controlDir, "result.json");
  const writeResult = (result: FinishOutcome) => {
    writeFileSync(resultFile, JSON.stringify(result));
    // The iteration's results directory on the data volume (plan-files.ts), which the report reads.
    options.onResult?.(result);
    console.log(JSON.stringify(result));
  };
  const registered = readJson<RegisterOutcome>(join(options.controlDir, "register.json"));
  if (!registered) throw new InfraError("the register container left no outcome (it was killed or never started)");
  if ("error" in registered) {
    if (registered.infra) throw new InfraError(`registration failed: ${registered.error}`);
    throw new Error(`registration failed: ${registered.error}`);
  }
  const passedOf = (status: string, reward: number) => passed(status, reward, experiment.spec.metrics.passThreshold);
  if ("done" in registered) {
    const status = (registered.result.status ?? "ROLLOUT_STATUS_INFRA_ERROR").replace(/^ROLLOUT_STATUS_/, "").toLowerCase() as FinishOutcome["status"];
    const reward = registered.result.reward ?? 0;
    writeResult({ rollout_id: registered.rollout_id, task_id: options.taskId, reward, status, passed: passedOf(status, reward) });
    return;
  }

  // A re-run of this container reports the verdict it computed the first time.
  const finishFile = join(options.controlDir, "finish.json");
  let body = readJson<{ reward: number; status: FinishOutcome["status"]; verifier_output: string; error?: string; metrics: Record<string, number> }>(finishFile);
  const harness = readJson<HarnessOutcome>(join(options.harnessOut, "harness-result.json"));
  const launcher = launcherFailure(harness);
  if (!body) {
    const { task, verifier } = loadTask(experiment, options.experimentDir, options.taskId);
    let status: FinishOutcome["status"] = launcher ? "infra_error" : harness!.timed_out ? "timeout" : harness!.exit_code === 0 ? "ok" : "failed";
    let reward = 0;
    let output = "";
    let error = launcher;
    if (!launcher && verifier.kind === "expected") {
      const log = join(options.harnessOut, "harness.log");
      const found = existsSync(log) && readFileSync(log, "utf8").includes(verifier.text);
      reward = found ? 1 : 0;
      output = `expected ${JSON.stringify(verifier.text)} ${found ? "found" : "not found"} in the harness output`;
    } else if (!launcher && verifier.kind !== "expected") {
      const ran = readJson<VerifierOutcome>(join(options.verdict, "verifier.json"));
      output = ran?.output ?? "";
      if (!ran || ran.error || ran.skipped) {
        status = "infra_error";
        error = `verifier: ${ran?.error ?? ran?.skipped ?? "the verify container left no outcome"}`;
      } else if (ran.timed_out) {
        if (status === "ok") status = "timeout";
        error = "verifier timed out";
      } else {
        const reading = readReward({ outputDir: join(options.verdict, "logs"), exitCode: ran.exit_code, source: verifier.reward, range: task.rewardRange });
        if (reading.ok) {
          reward = reading.reward;
          output += `\n[reward ${reading.reward} from ${reading.source}]`;
        } else {
          status = "infra_error";
          error = reading.error;
          output += `\n${reading.error}`;
        }
      }
    }
    body = {
      reward,
      status,
      verifier_output: output.slice(-8000),
      ...(error ? { error } : {}),
      metrics: { harness_exit_code: harness?.exit_code ?? -1, harness_duration_ms: harness?.duration_ms ?? 0, retry: options.retry },
    };
    writeFileSync(finishFile, JSON.stringify(body));
  }
  await withRetries(() => control(options.proxy, `/control/rollouts/${encodeURIComponent(options.rolloutId)}/finish`, body));
  writeResult({ rollout_id: options.rolloutId, task_id: options.taskId, reward: body.reward, status: body.status, passed: passedOf(body.status, body.reward) });
  // The machine failed the harness, not the policy: a new try may get a working node.
  if (launcher) throw new InfraError(launcher);
}
