/**
 * Rollout labels that carry a run's identity and its experiment's metric settings into the log,
 * so that `forge analyze` scores a run as `forge run` did without the experiment file at hand.
 * `forge run` records them on every rollout it registers (docs/metrics.md, "Scope").
 */

export const LABEL_RUN = "openforge.dev/run";
/** Set by gitops on commit-triggered runs. */
export const LABEL_COMMIT = "openforge.dev/commit";
export const LABEL_MODEL = "openforge.dev/model";
/** The experiment's `metrics.k`, comma-separated. */
export const LABEL_METRICS_K = "openforge.dev/metrics-k";
export const LABEL_PASS_THRESHOLD = "openforge.dev/pass-threshold";
export const LABEL_MISSING_TRIALS = "openforge.dev/missing-trials";
/** The experiment's `rollouts.k`: trials planned per task, for the `fail` convention. */
export const LABEL_ROLLOUTS_K = "openforge.dev/rollouts-k";

export type MissingTrials = "exclude" | "fail";

export type RunLabelInput = {
  run: string;
  model: string;
  ks: readonly number[];
  passThreshold: number;
  missingTrials: MissingTrials;
  rolloutsK: number;
};

/**
 * The labels `forge run` records on each rollout of a run.
 *
 * @example
 * runLabels({ run: "quick-1", model: "m", ks: [1, 4], passThreshold: 1, missingTrials: "exclude", rolloutsK: 4 })
 * // { "openforge.dev/run": "quick-1", "openforge.dev/metrics-k": "1,4", ... }
 */
export function runLabels(input: RunLabelInput): Record<string, string> {
  return {
    [LABEL_RUN]: input.run,
    [LABEL_MODEL]: input.model,
    [LABEL_METRICS_K]: input.ks.join(","),
    [LABEL_PASS_THRESHOLD]: String(input.passThreshold),
    [LABEL_MISSING_TRIALS]: input.missingTrials,
    [LABEL_ROLLOUTS_K]: String(input.rolloutsK),
  };
}
