/**
 * The pass@k block both `forge run` and `forge analyze` print: one formatter over one analysis,
 * so the two commands cannot show different numbers for the same run.
 */
import type { Analysis } from "./analysis.ts";
import type { Row } from "./metrics.ts";
import { formatTable } from "./table.ts";

/** Above this many tasks the per-task table is left to `--json` and the report. */
const perTaskLimit = 40;

/** The scope and grouping in words: "run q-1; grouped by experiment, run, iteration". */
export function scopeText(analysis: Analysis): string {
  const { scope, by } = analysis.options;
  const parts = [
    scope.experiment !== undefined ? `experiment ${scope.experiment}` : "",
    scope.run !== undefined ? `run ${scope.run}` : "",
    scope.iteration !== undefined ? `iteration ${scope.iteration}` : "",
  ].filter(Boolean);
  const grouped = by.length ? `grouped by ${by.join(", ")}` : "pooled into one row";
  return `${parts.length ? parts.join(", ") : "every rollout in the data directory"}; ${grouped}`;
}

/**
 * How the figures were computed, in words: estimator, k and where it came from, success rule,
 * missing-trial convention.
 *
 * @example
 * conventionText(analysis) // "unbiased estimators, k = 1, 2, 4 (the experiment's metrics.k); success: status ok and reward ≥ 1; ..."
 */
export function conventionText(analysis: Analysis): string {
  const { ks, ksFrom, convention, threshold, missingTrials } = analysis.options;
  const kText = `k = ${ks.join(", ")} (${ksFrom === "request" ? "--k" : ksFrom === "experiment" ? "the experiment's metrics.k" : "default; no metrics.k recorded"})`;
  if (convention === "claw") {
    return `Claw-Eval (score_summary.py): every graded trial, padded with 0 up to k; pass@k = any trial ≥ ${threshold ?? 0.75}, pass^k = all, avg_pass@k = mean score ≥ ${threshold ?? 0.75}; ${kText}`;
  }
  const thresholds = [...new Set(analysis.pass.map((row) => row.threshold))];
  const thresholdText = threshold !== null ? String(threshold) : thresholds.length === 1 && thresholds[0] !== null ? String(thresholds[0]) : "each experiment's passThreshold";
  const missing = missingTrials ?? ([...new Set(analysis.pass.map((row) => String(row.missing_trials ?? "exclude")))].join(" / ") || "exclude");
  const missingText =
    missing === "fail"
      ? "missing trials count as failures (tau-bench)"
      : missing === "exclude"
        ? `tasks with fewer than ${Math.max(...ks)} valid trials are excluded`
        : `missing trials: ${missing} (per experiment)`;
  return `unbiased estimators, ${kText}; success: status ok and reward ≥ ${thresholdText}; ${missingText}`;
}

const passColumns = (ks: number[], convention: Analysis["options"]["convention"]) => [
  ...ks.map((k) => `pass@${k}`),
  ...ks.map((k) => `pass^${k}`),
  ...(convention === "claw" ? ks.map((k) => `avg_pass@${k}`) : []),
];

/** Columns of the group table, in print order. */
export function groupColumns(analysis: Analysis): string[] {
  const { by, ks, convention } = analysis.options;
  return [...by, "tasks", "tasks_scored", "rollouts", "valid", "successes", "infra_errors", "unfinished", "mean_reward", ...passColumns(ks, convention)];
}

/** Columns of the per-task table, in print order. */
export function taskColumns(analysis: Analysis): string[] {
  const { by, ks, convention } = analysis.options;
  const keys = [...by.filter((key) => key !== "task"), "task"];
  return [...keys, "rollouts", "valid", "successes", "infra_errors", "tasks_scored", "mean_reward", ...passColumns(ks, convention)];
}

function renamed(rows: Row[], columns: string[], names: { [column: string]: string }, cell: (column: string, value: Row[string]) => Row[string] = (_, v) => v): string {
  const shown = rows.map((row) => Object.fromEntries(columns.map((column) => [names[column] ?? column, cell(column, row[column] ?? null)])));
  return formatTable(shown, columns.map((column) => names[column] ?? column));
}

/**
 * The pass@k block as text: scope, conventions, the group table, and the per-task table when
 * there are at most 40 tasks.
 *
 * @example
 * console.log(formatPassSummary(analysis));
 */
export function formatPassSummary(analysis: Analysis): string {
  const lines = [`pass@k / pass^k over ${scopeText(analysis)}`, conventionText(analysis), ""];
  if (analysis.pass.length === 0) return [...lines, "no rollouts in scope"].join("\n");
  lines.push(renamed(analysis.pass, groupColumns(analysis), { tasks_scored: "scored", infra_errors: "infra" }));
  const excluded = analysis.pass.reduce((sum, row) => sum + Number(row.tasks_excluded ?? 0), 0);
  if (excluded > 0) lines.push(`${excluded} task(s) not scored: fewer than ${Math.max(...analysis.options.ks)} valid trials (n/a where no task is left)`);
  if (analysis.passByTask.length <= perTaskLimit) {
    lines.push("", "per task:");
    // Per task, "scored" is whether the task is in the figures above.
    lines.push(renamed(analysis.passByTask, taskColumns(analysis), { tasks_scored: "scored", infra_errors: "infra" }, (column, value) => (column === "tasks_scored" ? (value ? "yes" : "no") : value)));
  } else {
    lines.push("", `${analysis.passByTask.length} tasks: per-task rows in --json (passByTask) and in the --report page`);
  }
  return lines.join("\n");
}
