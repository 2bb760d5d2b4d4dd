/**
 * `forge run` without the CLI: an experiment end to end on this machine. Starts the policy
 * simulator (when the experiment names no upstream) and the recording proxy in this process,
 * runs every task k times with the local executor, then exports the veRL batch and computes
 * pass@k / pass^k. The executor itself only talks HTTP to the proxy's control API.
 */
import { simulatorToolParser, tokenInFlags, tokenInFor } from "../token-mode.ts";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Experiment } from "../../schemas/index.ts";
import { loadExperimentTasks } from "../tasks/index.ts";
import { runLocal, type LocalRunResult } from "./executor.ts";
import { runLabelsOf, scoreRun, type RunScore } from "./passk.ts";
import { controlClient } from "./control.ts";
import { runIterations, type IterationTiming } from "./iterations.ts";
import { trainLocally } from "./train-local.ts";
import { unsandboxedWarning } from "./sandbox.ts";

type Stoppable = { url: string; stop(): Promise<void> };

// The other areas are loaded only when a run starts (the simulator's tokenizer is large).

export type RunExperimentOptions = {
  experiment: Experiment;
  /** The experiment file (task paths and the simulator script are relative to its directory). */
  experimentPath: string;
  dataDir: string;
  parallelism?: number;
  sandbox?: "auto" | "bwrap" | "none";
  /** Run rollouts unsandboxed even as root (refused otherwise; workflows/local/sandbox.ts). */
  allowRootUnsandboxed?: boolean;
  quiet?: boolean;
  signal?: AbortSignal;
  /** Where progress and notes go (stderr by default). */
  log?: (line: string) => void;
  /** Proxy shards (processes), over spec.proxy.shards (`--proxy-shards N`). */
  proxyShards?: number;
  /** Labels recorded on every rollout (`--label key=value`). */
  labels?: Record<string, string>;
};

export type RunExperimentResult = {
  run: string;
  data_dir: string;
  local: LocalRunResult;
  rollouts_per_minute: number;
  /** pass@k / pass^k of this run, scored by analytics over the recorded log (absent when that failed: `pass_error`). */
  pass?: RunScore;
  pass_error?: string;
  export?: { out: string; samples: number; rows: number } | { error: string };
  /** With several iterations: when each one's rollouts and training step ran (iterations.ts). */
  iterations?: IterationTiming[];
};

/** Starts the simulator and proxy per the experiment; returns the proxy URL and a stop for both. */
async function startServices(options: RunExperimentOptions, log: (line: string) => void): Promise<{ proxyUrl: string; proxyUrls: string[]; adminToken?: string; stop(): Promise<void> }> {
  const { experiment } = options;
  const { startProxy } = await import("../../proxy/index.ts");
  let simulator: Stoppable | undefined;
  let upstreams = experiment.spec.policy.upstreams;
  if (upstreams.length === 0) {
    const { seed, script } = experiment.spec.policy.simulator;
    const { startPolicySimulator } = await import("../../simulator/index.ts");
    // spec.policy.engine: sglang makes the simulator play SGLang (its wire format and native routes); else vLLM.
    const engine = experiment.spec.policy.engine === "sglang" ? "sglang" : "vllm";
    simulator = await startPolicySimulator({ seed, script: script ? resolve(dirname(options.experimentPath), script) : undefined, model: experiment.spec.policy.model, toolCallParser: simulatorToolParser(experiment.spec.policy), engine });
    upstreams = [simulator.url];
    log(`policy simulator at ${simulator.url} (${engine}, seed ${seed}${script ? `, script ${script}` : ""})`);
  }
  // A fresh admin token per run: only this process may register and finish rollouts.
  const adminToken = `forge-admin-${crypto.randomUUID()}`;
  const shards = options.proxyShards ?? experiment.spec.proxy.shards;
  if (shards > 1) {
    const { startProxyShards } = await import("./proxy-shards.ts");
    const started = await startProxyShards({ shards, dataDir: options.dataDir, upstreams, mode: experiment.spec.policy.mode, engine: experiment.spec.policy.engine, extraArgs: tokenInFlags(experiment.spec.policy), adminToken, log, maxBodyBytes: experiment.spec.proxy.maxBodyBytes });
    const proxyFile = writeProxyFile(options.dataDir, started.urls[0]!, adminToken, experiment.spec.policy.mode);
    log(`control API while the run lasts (any shard): Authorization: Bearer <admin_token from ${proxyFile}>`);
    return {
      proxyUrl: started.urls[0]!,
      proxyUrls: started.urls,
      adminToken,
      async stop() {
        await started.stop();
        await simulator?.stop();
      },
    };
  }
  const { maxBodyBytes } = experiment.spec.proxy;
  const proxy = await startProxy({ listen: "127.0.0.1:0", upstreams, dataDir: options.dataDir, mode: experiment.spec.policy.mode, engine: experiment.spec.policy.engine, adminToken, ...(await tokenInFor(experiment.spec.policy)), ...(maxBodyBytes ? { maxBodyBytes } : {}) });
  const proxyFile = writeProxyFile(options.dataDir, proxy.url, adminToken, experiment.spec.policy.mode);
  log(`proxy at ${proxy.url} (${experiment.spec.policy.mode} mode${experiment.spec.policy.tokenMode === "token-in" ? ", token-in" : ""}), recording to ${join(options.dataDir, "log")}`);
  log(`control API while the run lasts: Authorization: Bearer <admin_token from ${proxyFile}>, e.g. GET ${proxy.url}/control/rollouts/<rollout id>/trajectory`);
  return {
    proxyUrl: proxy.url,
    proxyUrls: [proxy.url],
    adminToken,
    async stop() {
      await proxy.stop();
      await simulator?.stop();
    },
  };
}

/**
 * `<dataDir>/proxy.json`: where this run's proxy listens and its admin token, readable by the
 * owner only, so the control API (rollout state, trajectories) can be used during the run.
 */
function writeProxyFile(dataDir: string, url: string, adminToken: string, mode: string): string {
  const path = join(dataDir, "proxy.json");
  writeFileSync(path, `${JSON.stringify({ url, admin_token: adminToken, mode, pid: process.pid, started_unix_ms: Date.now() }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(path, 0o600); // a file left by an earlier run keeps its mode otherwise
  return path;
}

async function exportBatch(dataDir: string): Promise<RunExperimentResult["export"]> {
  try {
    const [{ readRecords }, { exportTrajectories }] = await Promise.all([import("../../records/index.ts"), import("../../trajectories/index.ts")]);
    const out = join(dataDir, "exports", "batch-verl.parquet");
    const manifest = await exportTrajectories(readRecords(dataDir), { format: "verl", out });
    return { out: manifest.out, samples: manifest.samples, rows: manifest.rows };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/**
 * @example
 * const result = await runExperiment({ experiment, experimentPath: "examples/quickstart/experiment.yaml", dataDir: ".forge/runs/q" });
 * result.pass?.pass[0]?.["pass@1"]; // the run's pass@1
 */
export async function runExperiment(options: RunExperimentOptions): Promise<RunExperimentResult> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const { experiment } = options;
  const tasks = loadExperimentTasks(experiment, dirname(resolve(options.experimentPath)), options.experimentPath);
  const sandboxMode = options.sandbox ?? experiment.spec.rollouts.sandbox;
  const warning = unsandboxedWarning(sandboxMode, { allowRootUnsandboxed: options.allowRootUnsandboxed });
  if (warning) log(`forge run: ${warning}`);
  mkdirSync(options.dataDir, { recursive: true });
  const run = `${experiment.metadata.name}-${Date.now().toString(36)}`;
  const services = await startServices(options, log);
  let local: LocalRunResult;
  let iterations: IterationTiming[] | undefined;
  const { training, policy } = experiment.spec;
  // Iterations train here only with a local trainer; without one, as before, one iteration is run.
  const iterationCount = policy.mode === "train" && training.localCommand ? training.iterations : 1;
  if (policy.mode === "train" && training.iterations > 1 && !training.localCommand) log(`forge run: spec.training.iterations is ${training.iterations}, but no spec.training.localCommand trains here: one iteration is run (the others run on Argo: forge submit)`);
  // One iteration's rollouts (the whole run when it has one iteration).
  const rolloutsOf = async (iteration: number): Promise<LocalRunResult> => runLocal({
      iteration,
      run,
      experiment: experiment.metadata.name,
      tasks,
      k: experiment.spec.rollouts.k,
      harness: experiment.spec.harness.name,
      harnessOptions: experiment.spec.harness.options,
      browser: experiment.spec.environment.browser,
      diskLimits: { disk: experiment.spec.rollouts.resources.disk, tmp: experiment.spec.rollouts.resources.tmp },
      harnessCommand: experiment.spec.harness.command,
      model: experiment.spec.policy.model,
      proxyUrl: services.proxyUrl,
      proxyUrls: services.proxyUrls,
      adminToken: services.adminToken,
      dataDir: options.dataDir,
      parallelism: options.parallelism ?? experiment.spec.rollouts.parallelism,
      timeoutSeconds: experiment.spec.rollouts.timeoutSeconds,
      sandbox: sandboxMode,
      allowRootUnsandboxed: options.allowRootUnsandboxed,
      passThreshold: experiment.spec.metrics.passThreshold,
      quiet: options.quiet,
      signal: options.signal,
      // The run id and the experiment's metric settings, so analytics scores the run as its experiment says.
      labels: { ...options.labels, ...(await runLabelsOf(experiment, run)) },
    });
  try {
    if (iterationCount === 1) local = await rolloutsOf(0);
    else {
      // Several iterations, each trained here (iterations.ts): in order, or overlapping (async).
      const started = performance.now();
      const parts: LocalRunResult[] = [];
      const control = controlClient(services.proxyUrl, services.adminToken);
      iterations = await runIterations({
        iterations: iterationCount,
        async: training.async,
        maxStaleness: training.maxStaleness,
        runRollouts: async (i) => void parts.push(await rolloutsOf(i)),
        train: (i) => trainLocally({ experiment, experimentPath: options.experimentPath, dataDir: options.dataDir, proxyUrl: services.proxyUrl, adminToken: services.adminToken!, control, iteration: i, run, log }),
        log,
        signal: options.signal,
      });
      local = { outcomes: parts.flatMap((p) => p.outcomes), durationMs: performance.now() - started, sandbox: parts[0]?.sandbox ?? "none", aborted: parts.some((p) => p.aborted) || Boolean(options.signal?.aborted) };
    }
  } finally {
    // Closes the segment log, so what was recorded is readable even after Ctrl-C.
    await services.stop();
  }
  const result: RunExperimentResult = {
    run,
    data_dir: options.dataDir,
    local,
    ...(iterations ? { iterations } : {}),
    rollouts_per_minute: local.outcomes.length / (local.durationMs / 60_000),
  };
  writeFileSync(join(options.dataDir, "rollouts", "outcomes.json"), `${JSON.stringify(local.outcomes, null, 2)}\n`);
  if (local.aborted) return result;
  result.export = await exportBatch(options.dataDir);
  try {
    result.pass = await scoreRun(options.dataDir, run);
  } catch (error) {
    // No second estimator to fall back on: one code path computes the numbers (docs/metrics.md).
    result.pass_error = (error as Error).message;
    log(`pass@k unavailable: analytics failed on ${options.dataDir}: ${result.pass_error.split("\n")[0]}`);
  }
  return result;
}
