/**
 * `forge run EXPERIMENT [--data DIR] [--json] [--parallelism N] [--sandbox auto|bwrap|none]`.
 * Ctrl-C once: running rollouts are killed (whole process groups) and finished as infra_error,
 * the log is closed; twice: exit at once.
 */
import { dirname, join, resolve } from "node:path";
import { intFlag, parseCommand, UsageError } from "../../lib/index.ts";
import { ExperimentError, parseExperimentFile, parsePolicyScriptFile, PolicyScriptError, type Experiment } from "../../schemas/index.ts";
import { TaskError } from "../tasks/index.ts";
import { liveGroups } from "./process-group.ts";
import { SandboxError } from "./sandbox.ts";
import { runExperiment } from "./run.ts";

const usage = `
usage: forge run EXPERIMENT [options]

Runs an experiment on this machine: the proxy (and, without upstreams, the policy simulator)
in this process, every task k times with the local executor, then the veRL export and the
pass@k / pass^k table.

  --data DIR           data directory (default .forge/runs/<experiment>-<timestamp>)
  --parallelism N      rollouts at a time (default spec.rollouts.parallelism)
  --sandbox MODE       auto | bwrap | none (default spec.rollouts.sandbox)
  --allow-root-unsandboxed
                       run rollouts without a holding sandbox even as root (refused otherwise;
                       also FORGE_ALLOW_ROOT_UNSANDBOXED=1)
  --proxy-shards N     proxy shards, each its own process and log (default spec.proxy.shards)
  --json               print the result as JSON on stdout
  --quiet              no progress line
  --label KEY=VALUE    record a label on every rollout (repeatable; gitops sets openforge.dev/commit)
`;

/** `--label key=value` flags → a map; a flag without `=` or with an empty key is a usage error. */
function parseLabels(flags: string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const flag of flags) {
    const at = flag.indexOf("=");
    if (at <= 0) throw new UsageError(`--label must be KEY=VALUE, got "${flag}"`);
    labels[flag.slice(0, at)] = flag.slice(at + 1);
  }
  return labels;
}

/**
 * The simulator's policy script, read before anything starts: a missing or invalid script is a
 * mistake in the experiment (exit 2 naming the file and field), not a failure of the run.
 */
function checkSimulatorScript(experiment: Experiment, experimentPath: string): void {
  const { script } = experiment.spec.policy.simulator;
  if (experiment.spec.policy.upstreams.length > 0 || script === undefined) return;
  try {
    parsePolicyScriptFile(resolve(dirname(experimentPath), script));
  } catch (error) {
    if (error instanceof PolicyScriptError) throw new UsageError(`forge run: ${experimentPath}: spec.policy.simulator.script: ${error.message}`);
    throw error;
  }
}

function timestamp(): string {
  return new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");
}

/**
 * @example
 * await runCommand(["examples/quickstart/experiment.yaml", "--parallelism", "8"]); // 0
 */
export async function runCommand(argv: string[]): Promise<number> {
  const args = parseCommand(
    {
      name: "run",
      usage,
      allowPositionals: true,
      options: {
        data: { type: "string" },
        parallelism: { type: "string" },
        "proxy-shards": { type: "string" },
        sandbox: { type: "string" },
        "allow-root-unsandboxed": { type: "boolean", default: false },
        json: { type: "boolean", default: false },
        quiet: { type: "boolean", default: false },
        label: { type: "string", multiple: true },
      },
    },
    argv,
  );
  if (!args) return 0;
  const { values, positionals } = args;
  if (positionals.length !== 1) throw new UsageError(`forge run: expected one EXPERIMENT file, got ${positionals.length}\n\n${usage.trim()}`);
  const parallelism = values.parallelism === undefined ? undefined : intFlag("parallelism", values.parallelism, 1);
  if (parallelism !== undefined && parallelism < 1) throw new UsageError("--parallelism must be ≥ 1");
  const proxyShards = values["proxy-shards"] === undefined ? undefined : intFlag("proxy-shards", values["proxy-shards"], 1);
  if (proxyShards !== undefined && proxyShards < 1) throw new UsageError("--proxy-shards must be ≥ 1");
  const sandbox = values.sandbox as "auto" | "bwrap" | "none" | undefined;
  if (sandbox !== undefined && !["auto", "bwrap", "none"].includes(sandbox)) throw new UsageError(`--sandbox must be auto, bwrap or none, got "${sandbox}"`);

  const labels = parseLabels(values.label ?? []);
  const experimentPath = positionals[0]!;
  let experiment;
  try {
    experiment = parseExperimentFile(experimentPath);
  } catch (error) {
    if (error instanceof ExperimentError) throw new UsageError(error.message);
    throw error;
  }
  checkSimulatorScript(experiment, experimentPath);
  const dataDir = resolve(values.data ?? join(".forge", "runs", `${experiment.metadata.name}-${timestamp()}`));

  const controller = new AbortController();
  let interrupts = 0;
  const onSignal = () => {
    interrupts++;
    if (interrupts === 1) {
      process.stderr.write("\nforge run: stopping (killing running rollouts; Ctrl-C again to exit at once)\n");
      controller.abort();
    } else {
      for (const pid of liveGroups) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {}
      }
      process.exit(130);
    }
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  let result;
  try {
    const allowRootUnsandboxed = values["allow-root-unsandboxed"] || undefined;
    result = await runExperiment({ experiment, experimentPath, dataDir, parallelism, sandbox, allowRootUnsandboxed, quiet: values.quiet, signal: controller.signal, labels, proxyShards });
  } catch (error) {
    if (error instanceof TaskError || error instanceof SandboxError) throw new UsageError(`forge run: ${error.message}`);
    throw error;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
  if (values.json) {
    const { local, ...rest } = result;
    console.log(JSON.stringify({ ...rest, sandbox: local.sandbox, aborted: local.aborted, duration_ms: Math.round(local.durationMs), outcomes: local.outcomes }, null, 2));
  } else {
    const counts = new Map<string, number>();
    for (const o of result.local.outcomes) counts.set(o.status, (counts.get(o.status) ?? 0) + 1);
    console.log(`\n${experiment.metadata.name}: ${result.local.outcomes.length} rollouts in ${(result.local.durationMs / 1000).toFixed(1)} s (${result.rollouts_per_minute.toFixed(0)}/min), sandbox ${result.local.sandbox}; ${[...counts].map(([s, n]) => `${n} ${s}`).join(", ")}`);
    console.log(`data: ${result.data_dir}`);
    if (result.export) console.log("error" in result.export ? `veRL export failed: ${result.export.error}` : `veRL batch: ${result.export.out} (${result.export.rows} rows, ${result.export.samples} samples)\n${samplesLine(experiment.spec.policy.tokenMode, result.export.samples, result.local.outcomes.length)}`);
    if (result.pass) console.log(`\n${result.pass.summary}\n\nthe same from the log: forge analyze --data ${result.data_dir} --run ${result.run} [--report report.html]`);
    else if (result.pass_error) console.log(`\npass@k unavailable: ${result.pass_error}`);
  }
  if (result.local.aborted) return 130;
  return 0;
}

/** One line on how the exported samples map to rollouts: token-in trains one per rollout; engine mode forks where a harness re-serialized its history (docs/token-in.md). */
function samplesLine(tokenMode: "engine" | "token-in", samples: number, rollouts: number): string {
  const counts = samples === rollouts ? `one training sample per rollout (${samples} samples, ${rollouts} rollouts)` : `${samples} training samples from ${rollouts} rollouts`;
  if (tokenMode === "token-in") return `token-in: ${counts}`;
  return `engine mode: ${counts}${samples > rollouts ? "; a rollout whose harness re-serialized its history forks into several, spec.policy.tokenMode: token-in trains one per rollout (docs/token-in.md)" : ""}`;
}
