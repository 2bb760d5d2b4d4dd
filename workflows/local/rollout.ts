/**
 * One rollout on this machine: register with the proxy, lay out the workspace, run the harness
 * as its own process group (sandboxed where bubblewrap works) under the timeout, then, once the
 * harness and everything it started are gone, run the verifier on a copy of the workspace with
 * its own output directory (made only now, so nothing the harness did can be read as a
 * reward), and report reward and status.
 *
 * Status: infra_error (registration, workspace or spawn failed, the harness's launcher failed
 * (exit 126/127), the verifier could not run or gave no valid reward, Ctrl-C), timeout (the
 * harness or the verifier ran past its limit), failed (the harness exited non-zero or was
 * killed; or wrote more than the disk limit: error "disk limit: …", metric
 * disk_limit_exceeded), ok (the harness exited 0 and was verified; the reward says whether it passed).
 */
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { FORGE_REACT_MAIN, launchHarness, modelContextWindow, type McpServer } from "../harnesses/index.ts";
import { browserMcpServer, DEFAULT_BROWSER_SETTINGS, type BrowserSettings } from "../gui/browser.ts";
import { startRolloutSite, SITE_LOG_DIR, type RolloutSite } from "../gui/rollout-site.ts";
import type { Task } from "../tasks/index.ts";
import type { ControlClient, FinishBody, RolloutStatus } from "./control.ts";
import { runProcessGroup, type GroupResult } from "./process-group.ts";
import { readReward } from "./reward.ts";
import { diskUsage, watchDisk } from "./disk-limit.ts";
import { SANDBOX_ENV, sandboxArgv, type SandboxSpec } from "./sandbox.ts";

export type RolloutPlan = { rolloutId: string; task: Task; attempt: number; group: string };

export type RolloutContext = {
  experiment: string;
  iteration: number;
  harness: string;
  harnessOptions: Record<string, unknown>;
  harnessCommand?: string[];
  model: string;
  dataDir: string;
  control: ControlClient;
  /** Run-wide default; task.toml's [agent] timeout_sec overrides it. */
  timeoutSeconds: number;
  verifierTimeoutSeconds: number;
  sandbox: "bwrap" | "none";
  /** The proxy bridge, when sandboxed with network isolation; `also`: the other shards' bridges. */
  network?: { socket: string; port: number; also?: { socket: string; port: number }[] };
  /** Extra variables for the harness (PATH, …). */
  baseEnv: Record<string, string>;
  graceMs: number;
  signal?: AbortSignal;
  /** Recorded on the rollout's registration. */
  labels: Record<string, string>;
  /** `spec.environment.browser`: the browser of tasks with `[environment] browser = true`. */
  browser?: BrowserSettings;
  /** Bytes: `disk` for the workspace and HOME together, `tmp` for the sandbox's /tmp (disk-limit.ts). */
  diskLimits: { disk: number; tmp: number };
};

export type RolloutOutcome = {
  rollout_id: string;
  task_id: string;
  attempt: number;
  status: RolloutStatus;
  reward: number;
  verifier_output: string;
  error?: string;
  /** The harness was killed for writing more than spec.rollouts.resources.disk (status failed). */
  disk_limit_exceeded?: true;
  harness_exit_code: number | null;
  duration_ms: number;
  dir: string;
};

const tail = (path: string, max = 4000) => {
  if (!existsSync(path)) return "";
  const text = readFileSync(path, "utf8");
  return text.length > max ? `[...]\n${text.slice(-max)}` : text;
};

const VERIFIER_LOGS = "/logs/verifier";
const VERIFIER_TESTS = "/tests";

/**
 * Exit codes of a launcher that could not run the harness at all (126: not executable, 127: not
 * found, from the shell, setsid or the sandbox's bridge): the machine's fault, not the policy's.
 */
const LAUNCHER_EXIT_CODES: Record<number, string> = { 126: "found but not executable", 127: "not found" };

/** Lays out DIR/rollouts/<id>/{workspace,home,logs} and copies the task's files in. */
function prepareWorkspace(dir: string, task: Task): { workspace: string; home: string; logs: string } {
  const workspace = join(dir, "workspace");
  const home = join(dir, "home");
  const logs = join(dir, "logs");
  for (const path of [workspace, home, logs]) mkdirSync(path, { recursive: true });
  if (task.environmentDir) {
    // The Dockerfile builds the Kubernetes image; it is not part of the workspace.
    cpSync(task.environmentDir, workspace, { recursive: true, filter: (source) => resolve(source) !== resolve(task.environmentDir!, "Dockerfile") });
  }
  for (const [path, content] of Object.entries(task.files)) {
    const full = resolve(workspace, path);
    if (!full.startsWith(`${workspace}/`)) throw new Error(`task ${task.source}: file path "${path}" leaves the workspace`);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
  }
  return { workspace, home, logs };
}

function statusOf(result: GroupResult): RolloutStatus {
  if (result.spawnError || result.aborted) return "infra_error";
  if (result.timedOut) return "timeout";
  if (result.exitCode !== null && LAUNCHER_EXIT_CODES[result.exitCode]) return "infra_error";
  return result.exitCode === 0 ? "ok" : "failed";
}

type Verdict = {
  reward: number;
  output: string;
  timedOut: boolean;
  /** No valid reward: the verifier could not run, was interrupted, or wrote none / a bad one. */
  infraError?: string;
};

/**
 * Copies the workspace for the verifier with `cp -a` (holes stay holes, links stay links, what
 * cannot be read is skipped and named), so nothing left of the harness can change what the
 * verifier sees, and the verifier's own writes leave the harness's workspace as it was.
 */
function copyForVerifier(workspace: string, copy: string): string | undefined {
  rmSync(copy, { recursive: true, force: true });
  const run = Bun.spawnSync(["cp", "-a", "--reflink=auto", "--no-target-directory", workspace, copy], { stdout: "ignore", stderr: "pipe" });
  if (!existsSync(copy)) throw new Error(`cannot copy the workspace for the verifier: ${run.stderr.toString().trim()}`);
  return run.exitCode === 0 ? undefined : `[some workspace entries could not be copied for the verifier: ${run.stderr.toString().trim().slice(0, 500)}]`;
}

/**
 * Runs the verifier after the harness has exited. It sees a copy of the workspace at the
 * workspace's path, its tests at /tests and a fresh, empty output directory at /logs/verifier
 * ($FORGE_LOGS; Harbor's paths), a private HOME, no network and no secret; unsandboxed the same
 * directories are given by path. Its reward comes only from that output directory (or its exit
 * code, when the task declares it).
 */
async function verify(plan: RolloutPlan, ctx: RolloutContext, dirs: ReturnType<typeof prepareWorkspace> & { dir: string }, harnessStdout: string, siteState?: string): Promise<Verdict> {
  const { task } = plan;
  if (task.verifier.kind === "expected") {
    const found = harnessStdout.includes(task.verifier.text);
    return { reward: found ? 1 : 0, output: `expected ${JSON.stringify(task.verifier.text)} ${found ? "found" : "not found"} in the harness output`, timedOut: false };
  }
  const testsDir = join(dirs.dir, "tests");
  // Made now, after the harness and its process group are gone: nothing in it predates the verifier.
  const outputDir = join(dirs.dir, "verifier");
  const workspaceCopy = join(dirs.dir, "verifier-workspace");
  const home = join(dirs.dir, "verifier-home");
  let script: string;
  let copyNote: string | undefined;
  try {
    for (const path of [testsDir, outputDir, home]) rmSync(path, { recursive: true, force: true });
    mkdirSync(outputDir, { mode: 0o700 });
    mkdirSync(home, { mode: 0o700 });
    if (task.verifier.kind === "script") {
      // Copied only now, so the harness never saw the tests.
      cpSync(task.verifier.testsDir, testsDir, { recursive: true });
      script = "test.sh";
    } else {
      mkdirSync(testsDir, { recursive: true });
      writeFileSync(join(testsDir, "verify.sh"), task.verifier.script);
      script = "verify.sh";
    }
    copyNote = copyForVerifier(dirs.workspace, workspaceCopy);
  } catch (error) {
    return { reward: 0, output: "", timedOut: false, infraError: `verifier: ${(error as Error).message}` };
  }
  const sandboxed = ctx.sandbox === "bwrap";
  const testsPath = sandboxed ? VERIFIER_TESTS : testsDir;
  const logsPath = sandboxed ? VERIFIER_LOGS : outputDir;
  const workspacePath = sandboxed ? dirs.workspace : workspaceCopy;
  const argv = ["bash", join(testsPath, script)];
  // A browser task's site log: what the agent did on the site, recorded where it could not write.
  const sitePath = siteState ? (sandboxed ? SITE_LOG_DIR : siteState) : undefined;
  const env = {
    ...ctx.baseEnv,
    ...(sandboxed ? SANDBOX_ENV : {}),
    HOME: home,
    FORGE_LOGS: logsPath,
    FORGE_TESTS: testsPath,
    FORGE_WORKSPACE: workspacePath,
    FORGE_HARNESS_STDOUT: join(dirs.logs, "harness.stdout"),
    ...(sitePath ? { FORGE_SITE_LOG: join(sitePath, "requests.jsonl") } : {}),
  };
  const spec: SandboxSpec = {
    writable: [],
    readOnly: [dirs.logs],
    readOnlyAt: [[testsDir, VERIFIER_TESTS], ...(siteState ? ([[siteState, SITE_LOG_DIR]] as [string, string][]) : [])],
    // The copy appears where the workspace was, so paths the harness wrote stay valid.
    writableAt: [
      [workspaceCopy, dirs.workspace],
      [outputDir, VERIFIER_LOGS],
    ],
    tmpfs: [home],
    tmpBytes: ctx.diskLimits.tmp,
    cwd: dirs.workspace,
    // The verifier needs no network, and gets none.
    offline: true,
  };
  const result = await runProcessGroup({
    argv: sandboxed ? sandboxArgv(spec, argv) : argv,
    cwd: workspacePath,
    env,
    stdoutPath: join(dirs.logs, "verifier.stdout"),
    stderrPath: join(dirs.logs, "verifier.stderr"),
    timeoutMs: (task.verifierTimeoutSeconds ?? ctx.verifierTimeoutSeconds) * 1000,
    graceMs: ctx.graceMs,
    signal: ctx.signal,
  });
  // Scratch: the verifier's reward and logs are kept, not its copy of the workspace or its HOME.
  for (const path of [workspaceCopy, home]) rmSync(path, { recursive: true, force: true });
  const output = `${copyNote ? `${copyNote}\n` : ""}${tail(join(dirs.logs, "verifier.stdout"))}${tail(join(dirs.logs, "verifier.stderr"))}`;
  if (result.spawnError) return { reward: 0, output, timedOut: false, infraError: `verifier: cannot start: ${result.spawnError}` };
  if (result.aborted) return { reward: 0, output, timedOut: false, infraError: "verifier: interrupted (Ctrl-C)" };
  if (result.timedOut) return { reward: 0, output: `${output}\n[verifier killed after ${task.verifierTimeoutSeconds ?? ctx.verifierTimeoutSeconds} s]`, timedOut: true };
  const reading = readReward({ outputDir, exitCode: result.exitCode, source: task.verifier.reward, range: task.rewardRange });
  if (!reading.ok) return { reward: 0, output: `${output}\n${reading.error.replaceAll(dirs.dir, "<rollout>")}`, timedOut: false, infraError: reading.error.replaceAll(dirs.dir, "<rollout>") };
  return { reward: reading.reward, output: `${output}\n[reward ${reading.reward} from ${reading.source.replace(dirs.dir, "<rollout>")}]`, timedOut: false };
}

/** The rollout's result to result.json and to the proxy; a proxy that refuses it makes the outcome an infrastructure error. */
async function finishRollout(plan: RolloutPlan, ctx: RolloutContext, dir: string, result: RolloutOutcome): Promise<RolloutOutcome> {
  writeFileSync(join(dir, "result.json"), `${JSON.stringify(result, null, 2)}\n`);
  const body: FinishBody = {
    reward: result.reward,
    status: result.status,
    verifier_output: result.verifier_output,
    ...(result.error ? { error: result.error } : {}),
    metrics: {
      duration_ms: result.duration_ms,
      ...(result.harness_exit_code !== null ? { harness_exit_code: result.harness_exit_code } : {}),
      ...(result.disk_limit_exceeded ? { disk_limit_exceeded: 1 } : {}),
    },
  };
  try {
    await ctx.control.finish(plan.rolloutId, body);
  } catch (error) {
    return { ...result, status: "infra_error", error: `${result.error ? `${result.error}; ` : ""}${(error as Error).message}` };
  }
  return result;
}

type Registration = Awaited<ReturnType<RolloutContext["control"]["register"]>>;

/** A rollout ready to run: its directories, the harness's launch, its site and browser if the task has them. */
type PreparedRollout = {
  dirs: ReturnType<typeof prepareWorkspace> & { dir: string };
  launch: ReturnType<typeof launchHarness>;
  site: RolloutSite | undefined;
  browser: (McpServer & { readOnlyPaths: string[] }) | undefined;
};

/** Stages the workspace, starts the task's site, and writes the harness's launch files; a site started is closed again on failure. */
async function prepareRollout(plan: RolloutPlan, ctx: RolloutContext, dir: string, registration: Registration, contextWindow: number | undefined, sandboxed: boolean): Promise<PreparedRollout> {
  let site: RolloutSite | undefined;
  let browser: (McpServer & { readOnlyPaths: string[] }) | undefined;
  try {
    const dirs = { ...prepareWorkspace(dir, plan.task), dir };
    if (plan.task.siteDir) site = await startRolloutSite({ siteDir: plan.task.siteDir, stateDir: join(dir, "site"), sandboxed, takenPorts: ctx.network ? [ctx.network.port, ...(ctx.network.also ?? []).map((forward) => forward.port)] : [] });
    if (plan.task.browser) {
      // Chromium's own sandbox needs user namespaces, which bwrap leaves none of (the rollout's
      // sandbox takes its place), and refuses to start as root.
      browser = browserMcpServer({ settings: ctx.browser ?? DEFAULT_BROWSER_SETTINGS, outputDir: join(dirs.home, ".playwright-mcp"), chromiumSandbox: !sandboxed && process.getuid?.() !== 0 });
    }
    const launch = launchHarness(ctx.harness, {
      baseUrlOpenAI: registration.openai_base_url,
      baseUrlAnthropic: registration.anthropic_base_url,
      apiKey: registration.api_key,
      model: ctx.model,
      workspace: dirs.workspace,
      homeDir: dirs.home,
      prompt: site ? plan.task.instruction.replaceAll("{site_url}", site.url) : plan.task.instruction,
      options: ctx.harnessOptions,
      command: ctx.harnessCommand,
      contextWindow,
      ...(browser ? { mcpServers: [{ name: browser.name, command: browser.command, args: browser.args }] } : {}),
    });
    for (const file of launch.files) {
      mkdirSync(dirname(file.path), { recursive: true });
      writeFileSync(file.path, file.content);
    }
    return { dirs, launch, site, browser };
  } catch (error) {
    await site?.close();
    throw error;
  }
}

/** Runs the harness (sandboxed, under the disk limit, until its timeout), then stops the site; with the bytes it left on disk. */
async function runHarness(plan: RolloutPlan, ctx: RolloutContext, prepared: PreparedRollout, sandboxed: boolean, timeoutSeconds: number) {
  const { dirs, launch, site, browser } = prepared;
  const network = ctx.network && site?.bridge ? { ...ctx.network, also: [...(ctx.network.also ?? []), site.bridge] } : ctx.network;
  const argv = sandboxed
    ? sandboxArgv({ writable: [dirs.workspace, dirs.home], readOnly: [dirname(FORGE_REACT_MAIN), ...(browser?.readOnlyPaths ?? [])], cwd: dirs.workspace, network, tmpBytes: ctx.diskLimits.tmp }, launch.command)
    : launch.command;
  // What stays on disk for the verifier is measured while the harness writes it.
  const disk = watchDisk([dirs.workspace, dirs.home], ctx.diskLimits.disk);
  const harness = await runProcessGroup({
    argv,
    cwd: dirs.workspace,
    env: { ...ctx.baseEnv, ...(sandboxed ? SANDBOX_ENV : {}), ...launch.env, FORGE_ROLLOUT_ID: plan.rolloutId, ...(site ? { FORGE_SITE_URL: site.url } : {}) },
    stdoutPath: join(dirs.logs, "harness.stdout"),
    stderrPath: join(dirs.logs, "harness.stderr"),
    timeoutMs: timeoutSeconds * 1000,
    graceMs: ctx.graceMs,
    signal: ctx.signal,
    stop: disk.over,
  });
  disk.stop();
  // The site stops with the harness: nothing reaches it once the verifier reads its log.
  await site?.close();
  // Measured once more now that nothing writes: a burst between two checks counts too.
  const diskUsed = harness.stopped ? disk.seenBytes() : await diskUsage([dirs.workspace, dirs.home]);
  return { harness, diskUsed };
}

/**
 * @example
 * const outcome = await runRollout({ rolloutId: "quick.i0.hello.0", task, attempt: 0, group: "hello@i0" }, ctx);
 * outcome.status; // "ok"
 */
export async function runRollout(plan: RolloutPlan, ctx: RolloutContext): Promise<RolloutOutcome> {
  const started = performance.now();
  const dir = join(ctx.dataDir, "rollouts", plan.rolloutId);
  const outcome = (status: RolloutStatus, reward: number, verifierOutput: string, harnessExit: number | null, error?: string): RolloutOutcome => ({
    rollout_id: plan.rolloutId,
    task_id: plan.task.id,
    attempt: plan.attempt,
    status,
    reward,
    verifier_output: verifierOutput,
    ...(error ? { error } : {}),
    harness_exit_code: harnessExit,
    duration_ms: Math.round(performance.now() - started),
    dir,
  });

  let registration;
  try {
    registration = await ctx.control.register({
      rollout_id: plan.rolloutId,
      experiment: ctx.experiment,
      iteration: ctx.iteration,
      task_id: plan.task.id,
      group: plan.group,
      attempt: plan.attempt,
      harness: ctx.harness,
      labels: ctx.labels,
    });
  } catch (error) {
    // Nothing to report to: the proxy does not know the rollout.
    return outcome("infra_error", 0, "", null, (error as Error).message);
  }

  const finish = (result: RolloutOutcome) => finishRollout(plan, ctx, dir, result);

  // The model's window as served, for adapters that must be told (pi); undefined when not reported.
  const contextWindow = await modelContextWindow(registration.openai_base_url, registration.api_key, ctx.model, ctx.signal);
  const sandboxed = ctx.sandbox === "bwrap";
  let prepared: PreparedRollout;
  try {
    prepared = await prepareRollout(plan, ctx, dir, registration, contextWindow, sandboxed);
  } catch (error) {
    mkdirSync(dir, { recursive: true });
    return finish(outcome("infra_error", 0, "", null, `workspace: ${(error as Error).message}`));
  }
  const { dirs, launch, site } = prepared;

  const timeoutSeconds = plan.task.agentTimeoutSeconds ?? ctx.timeoutSeconds;
  const { harness, diskUsed } = await runHarness(plan, ctx, prepared, sandboxed, timeoutSeconds);
  if (diskUsed > ctx.diskLimits.disk && !harness.aborted) {
    // Nothing to verify: the policy filled the disk. What it wrote goes (it is over the limit by
    // definition); the logs stay.
    for (const path of [dirs.workspace, dirs.home]) rmSync(path, { recursive: true, force: true });
    const error = `disk limit: the workspace and HOME held ${diskUsed} bytes, over spec.rollouts.resources.disk (${ctx.diskLimits.disk} bytes); the harness was ${harness.stopped ? "killed" : "done"}, its workspace and HOME removed, the verifier not run`;
    return finish({ ...outcome("failed", 0, "", harness.exitCode, error), disk_limit_exceeded: true });
  }
  const status = statusOf(harness);
  if (harness.spawnError) return finish(outcome("infra_error", 0, "", null, `harness: cannot start ${launch.command[0]}: ${harness.spawnError}`));
  if (harness.aborted) return finish(outcome("infra_error", 0, "", harness.exitCode, "interrupted (Ctrl-C) while the harness ran"));
  if (harness.exitCode !== null && LAUNCHER_EXIT_CODES[harness.exitCode] && !harness.timedOut) {
    // The harness never ran: nothing to verify, and nothing the policy should be scored on.
    return finish(
      outcome("infra_error", 0, "", harness.exitCode, `harness: launcher failed with exit ${harness.exitCode} (command ${LAUNCHER_EXIT_CODES[harness.exitCode]}) running ${launch.command[0]}; stderr tail: ${tail(join(dirs.logs, "harness.stderr"), 600)}`),
    );
  }
  const harnessNote = harness.timedOut
    ? `harness killed after ${timeoutSeconds} s (timeout)`
    : harness.exitCode === 0
      ? undefined
      : `harness exited with ${harness.signal ? `signal ${harness.signal}` : `code ${harness.exitCode}`}; stderr tail: ${tail(join(dirs.logs, "harness.stderr"), 600)}`;

  // The verifier runs even after a timeout or crash: the work may be partly done, and its output
  // is worth recording; the status still says what went wrong.
  const verdict = await verify(plan, ctx, dirs, readFileSync(join(dirs.logs, "harness.stdout"), "utf8"), site?.stateDir);
  if (verdict.infraError) return finish(outcome("infra_error", 0, verdict.output, harness.exitCode, [harnessNote, verdict.infraError].filter(Boolean).join("; ")));
  const finalStatus: RolloutStatus = status !== "ok" ? status : verdict.timedOut ? "timeout" : "ok";
  const error = [harnessNote, verdict.timedOut ? "verifier timed out" : undefined].filter(Boolean).join("; ") || undefined;
  return finish(outcome(finalStatus, verdict.reward, verdict.output, harness.exitCode, error));
}
