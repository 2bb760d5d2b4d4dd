/**
 * The pass@k block of `forge run`: the run's own rollouts scored by analytics (DuckDB over the
 * recorded log) — the code path and printout of `forge analyze --data DIR --run RUN`, so the
 * two commands print the same numbers. The experiment's metric settings travel with the run
 * as rollout labels (analytics/labels.ts), which is how `forge analyze` finds them later.
 */
import type { Experiment } from "../../schemas/index.ts";

/** What `forge run` prints and returns about pass@k. */
export type RunScore = {
  /** pass@k, pass^k, mean reward and task counts for the run (one row per iteration). */
  pass: Record<string, unknown>[];
  /** The same per task. */
  pass_by_task: Record<string, unknown>[];
  /** The block as printed (the same text `forge analyze --run RUN` prints). */
  summary: string;
};

/**
 * The labels `forge run` records on each rollout: the run id and the experiment's metric settings.
 *
 * @example
 * await runLabelsOf(experiment, "quickstart-mc0x1") // { "openforge.dev/run": "quickstart-mc0x1", "openforge.dev/metrics-k": "1,2,4", ... }
 */
export async function runLabelsOf(experiment: Experiment, run: string): Promise<Record<string, string>> {
  const { runLabels } = await import("../../analytics/index.ts");
  const { metrics, rollouts, policy } = experiment.spec;
  return runLabels({ run, model: policy.model, ks: metrics.k, passThreshold: metrics.passThreshold, missingTrials: metrics.missingTrials, rolloutsK: rollouts.k });
}

/**
 * Scores one run from the log in `dataDir` with the settings its rollouts recorded.
 *
 * @example
 * const score = await scoreRun(".forge/runs/q", "quickstart-mc0x1");
 * console.log(score.summary);
 */
export async function scoreRun(dataDir: string, run: string): Promise<RunScore> {
  const { analyze, formatPassSummary, openAnalytics } = await import("../../analytics/index.ts");
  const session = await openAnalytics(dataDir, {});
  try {
    const analysis = await analyze(session.connection, { scope: { run } }, session.compaction);
    return { pass: analysis.pass, pass_by_task: analysis.passByTask, summary: formatPassSummary(analysis) };
  } finally {
    session.close();
  }
}

/**
 * Whether one rollout passed: status ok and reward at or above the threshold — the rule
 * analytics scores pass@k with (analytics' `is_success` macro), so a progress line never counts
 * a failed or timed-out rollout that happened to carry a high reward.
 *
 * @example
 * passed("ok", 1, 1) // true
 * passed("timeout", 1, 1) // false
 */
export function passed(status: string, reward: number, threshold: number): boolean {
  return status === "ok" && reward >= threshold;
}
