/**
 * The local executor: tasks × k rollouts, at most `parallelism` at a time, each its own process
 * group (and bubblewrap sandbox where available). One rollout's hang, crash or failed verifier
 * never stops the others; an abort (Ctrl-C) kills the running groups and finishes their records
 * as infra_error, and rollouts not yet started are not registered at all.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { checkTaskIds, safeTaskId, type Task } from "../tasks/index.ts";
import { controlClient } from "./control.ts";
import { startProxyBridge } from "./bridge.ts";
import { progressReporter, type ProgressState } from "./progress.ts";
import { runRollout, type RolloutContext, type RolloutOutcome, type RolloutPlan } from "./rollout.ts";
import { resolveSandbox, type SandboxMode } from "./sandbox.ts";
import { passed } from "./passk.ts";
import { DEFAULT_DISK_LIMITS, quantityBytes } from "./disk-limit.ts";
import type { BrowserSettings } from "../gui/browser.ts";

export type LocalRunOptions = {
  /** The run's name; rollout ids are `<run>.i<iteration>.<task>.<attempt>`. */
  run: string;
  experiment: string;
  tasks: Task[];
  k: number;
  harness: string;
  harnessOptions?: Record<string, unknown>;
  harnessCommand?: string[];
  model: string;
  proxyUrl: string;
  /**
   * Every proxy a rollout's base URLs may point at (sharded proxies: each shard's URL, the
   * registration answering the owner's); default [proxyUrl]. A sandbox bridges each one.
   */
  proxyUrls?: string[];
  adminToken?: string;
  dataDir: string;
  parallelism: number;
  timeoutSeconds: number;
  verifierTimeoutSeconds?: number;
  iteration?: number;
  sandbox?: SandboxMode;
  /** Run unsandboxed even as root (refused otherwise); also FORGE_ALLOW_ROOT_UNSANDBOXED=1. */
  allowRootUnsandboxed?: boolean;
  /** Reward ≥ this counts as a pass in the progress line. */
  passThreshold?: number;
  graceMs?: number;
  signal?: AbortSignal;
  /** Where the progress line goes; default process.stderr. */
  progress?: { write(text: string): unknown; isTTY?: boolean };
  quiet?: boolean;
  onOutcome?: (outcome: RolloutOutcome) => void;
  /** Labels recorded on every rollout (e.g. `openforge.dev/commit` from gitops). */
  labels?: Record<string, string>;
  /** `spec.environment.browser`: the browser of browser tasks (docs/gui.md). */
  browser?: BrowserSettings;
  /** `spec.rollouts.resources.disk` / `.tmp` (Kubernetes quantities); defaults DEFAULT_DISK_LIMITS. */
  diskLimits?: { disk?: string; tmp?: string };
};

export type LocalRunResult = { outcomes: RolloutOutcome[]; durationMs: number; sandbox: "bwrap" | "none"; aborted: boolean };

/**
 * The rollouts of one iteration: every task k times, ids that are safe as directory names (two
 * tasks whose ids become the same are refused, naming both).
 *
 * @example
 * planLocalRollouts({ run: "quick-1", iteration: 0, tasks, k: 2 })[0].rolloutId; // "quick-1.i0.hello-file.0"
 */
export function planLocalRollouts(options: { run: string; iteration: number; tasks: Task[]; k: number }): RolloutPlan[] {
  checkTaskIds(options.tasks);
  const plans: RolloutPlan[] = [];
  for (const task of options.tasks) {
    const safe = safeTaskId(task.id);
    for (let attempt = 0; attempt < options.k; attempt++) {
      plans.push({ rolloutId: `${options.run}.i${options.iteration}.${safe}.${attempt}`, task, attempt, group: `${task.id}@i${options.iteration}` });
    }
  }
  return plans;
}

/** PATH and locale for harness processes; nothing else of the caller's environment leaks in. */
function baseEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "LANG", "LC_ALL", "TZ"]) if (process.env[name]) env[name] = process.env[name]!;
  env.PATH ??= "/usr/local/bin:/usr/bin:/bin";
  return env;
}

/**
 * @example
 * const { outcomes } = await runLocal({ run: "quick-1", experiment: "quick", tasks, k: 4, harness: "forge-react", model, proxyUrl, dataDir, parallelism: 4, timeoutSeconds: 120 });
 */
export async function runLocal(options: LocalRunOptions): Promise<LocalRunResult> {
  const started = performance.now();
  const iteration = options.iteration ?? 0;
  const plans = planLocalRollouts({ run: options.run, iteration, tasks: options.tasks, k: options.k });
  const sandbox = resolveSandbox(options.sandbox ?? "auto", { allowRootUnsandboxed: options.allowRootUnsandboxed });
  mkdirSync(join(options.dataDir, "rollouts"), { recursive: true });
  // Sandboxed, the namespace's only way out: one bridge per proxy (shard) the base URLs name.
  const proxies = [...new Set([options.proxyUrl, ...(options.proxyUrls ?? [])])].map((url) => new URL(url));
  const bridges =
    sandbox === "bwrap"
      ? await Promise.all(proxies.map(async (proxy, i) => ({ socket: (await startProxyBridge(join(options.dataDir, "rollouts", `.proxy-${process.pid}-${i}.sock`), { host: proxy.hostname, port: Number(proxy.port || 80) })), port: Number(proxy.port || 80) })))
      : [];
  const ctx: RolloutContext = {
    experiment: options.experiment,
    iteration,
    harness: options.harness,
    harnessOptions: options.harnessOptions ?? {},
    harnessCommand: options.harnessCommand,
    model: options.model,
    dataDir: options.dataDir,
    control: controlClient(options.proxyUrl, options.adminToken),
    timeoutSeconds: options.timeoutSeconds,
    verifierTimeoutSeconds: options.verifierTimeoutSeconds ?? 120,
    sandbox,
    network: bridges.length > 0 ? { socket: bridges[0]!.socket.path, port: bridges[0]!.port, also: bridges.slice(1).map((b) => ({ socket: b.socket.path, port: b.port })) } : undefined,
    baseEnv: baseEnvironment(),
    graceMs: options.graceMs ?? 2000,
    signal: options.signal,
    labels: options.labels ?? {},
    ...(options.browser ? { browser: options.browser } : {}),
    diskLimits: {
      disk: quantityBytes(options.diskLimits?.disk ?? DEFAULT_DISK_LIMITS.disk),
      tmp: quantityBytes(options.diskLimits?.tmp ?? DEFAULT_DISK_LIMITS.tmp),
    },
  };
  const state: ProgressState = { total: plans.length, done: 0, running: 0, passed: 0, failed: 0, timedOut: 0, infra: 0 };
  const bar = progressReporter(options.progress ?? process.stderr, { quiet: options.quiet });
  const threshold = options.passThreshold ?? 1;
  const outcomes: RolloutOutcome[] = new Array(plans.length);
  let next = 0;
  const worker = async () => {
    while (next < plans.length && !options.signal?.aborted) {
      const index = next++;
      state.running++;
      bar.update(state);
      const outcome = await runRollout(plans[index]!, ctx);
      outcomes[index] = outcome;
      state.running--;
      state.done++;
      if (outcome.status === "infra_error") state.infra++;
      else if (outcome.status === "timeout") state.timedOut++;
      if (outcome.status === "failed") state.failed++;
      if (passed(outcome.status, outcome.reward, threshold)) state.passed++;
      options.onOutcome?.(outcome);
      bar.update(state);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(options.parallelism, plans.length)) }, worker));
  } finally {
    await Promise.all(bridges.map((bridge) => bridge.socket.close()));
  }
  bar.end(state);
  return { outcomes: outcomes.filter(Boolean), durationMs: performance.now() - started, sandbox, aborted: Boolean(options.signal?.aborted) };
}
