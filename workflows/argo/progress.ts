/**
 * Progress of a rollout pod in the Argo UI: each of its four stages (register, harness, verify,
 * finish) writes `N/4` to `$ARGO_PROGRESS_FILE` when it is done. Argo's executor reads the file
 * every few seconds and the controller sums the pods' progress up the DAG (Argo's
 * docs/progress.md, workflow/progress/updater.go), so an iteration shows how far its running
 * rollouts are, not only how many have ended; a finished pod counts 4/4 either way.
 * Cosmetic only: nothing reads progress back, and a task that writes the file itself (the
 * harness container sees it too) changes nothing but the bar.
 */
import { renameSync, writeFileSync } from "node:fs";

export const ROLLOUT_STAGES = ["register", "harness", "verify", "finish"] as const;

/**
 * After step `step` of a rollout pod succeeded, its progress into `$ARGO_PROGRESS_FILE` (unset
 * outside Argo, or with progress reporting off: nothing to do). Never throws: progress must not
 * fail a rollout.
 *
 * @example
 * reportRolloutProgress("harness", { ARGO_PROGRESS_FILE: "/var/run/argo/progress" }) // writes "2/4"
 */
export function reportRolloutProgress(step: string | undefined, env: Record<string, string | undefined> = process.env): string | undefined {
  const stage = ROLLOUT_STAGES.indexOf(step as (typeof ROLLOUT_STAGES)[number]);
  const file = env.ARGO_PROGRESS_FILE;
  if (stage < 0 || !file) return undefined;
  const progress = `${stage + 1}/${ROLLOUT_STAGES.length}`;
  try {
    // Whole or not at all: the executor may read the file at any moment.
    writeFileSync(`${file}.tmp-${process.pid}`, progress);
    renameSync(`${file}.tmp-${process.pid}`, file);
  } catch (error) {
    console.error(`progress: cannot write ${file}: ${(error as Error).message}`);
    return undefined;
  }
  return progress;
}
