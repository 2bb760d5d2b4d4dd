/**
 * The plan: which rollouts an iteration runs (tasks × k). It runs inside the cluster as the
 * first step of each iteration and writes the list to the data volume (plan-files.ts); the
 * rollouts are fanned out by index (`withSequence`), each pod reading its own item, so no
 * Argo parameter grows with the number of rollouts.
 */
import type { Experiment } from "../../schemas/index.ts";
import { loadExperimentTasks, safeTaskId } from "../tasks/index.ts";
import { orderedTaskIds } from "./task-images.ts";

/** One rollout of the plan: the task and which of its k attempts. */
export type PlannedRollout = { task_id: string; attempt: string };

/**
 * Lists the task ids of an experiment with the area's task loader (workflows/tasks): a
 * directory of Harbor task directories, one task directory, a JSONL list, or the inline list;
 * grouped by the image and resources they run in (task-images.ts), so each environment's
 * rollouts are one index range of the plan, as the rendered fan-out expects.
 *
 * @example
 * listTaskIds(experiment, dirname(experimentPath)) // ["count-lines", "fix-typo"]
 */
export function listTaskIds(experiment: Experiment, baseDir: string): string[] {
  return orderedTaskIds(experiment, loadExperimentTasks(experiment, baseDir));
}

/**
 * The rollouts of one iteration: every task k times.
 *
 * @example
 * planRollouts({ taskIds: ["a"], k: 2 }) // [{ task_id: "a", attempt: "0" }, { task_id: "a", attempt: "1" }]
 */
export function planRollouts(options: { taskIds: string[]; k: number }): PlannedRollout[] {
  const plan: PlannedRollout[] = [];
  for (const taskId of options.taskIds) {
    for (let attempt = 0; attempt < options.k; attempt++) plan.push({ task_id: taskId, attempt: String(attempt) });
  }
  return plan;
}

/**
 * A rollout's id and GRPO group, derived in the pod from the run (the Workflow name, unique
 * per submission, so re-runs recording into one data directory never collide) and the item.
 * A retry (Argo's `{{retries}}` > 0) is a new try with its own id, `<first>.r<retry>`, that
 * names the first try (`firstId`) when it registers.
 *
 * @example
 * rolloutIdentity({ run: "quick-1a2b3c4d", iteration: 0, taskId: "fix typo", attempt: 1 })
 * // { rolloutId: "quick-1a2b3c4d.i0.fix_typo.1", firstId: "quick-1a2b3c4d.i0.fix_typo.1", group: "fix typo@i0" }
 * rolloutIdentity({ run: "q", iteration: 0, taskId: "t", attempt: 1, retry: 2 }).rolloutId // "q.i0.t.1.r2"
 */
export function rolloutIdentity(options: { run: string; iteration: number; taskId: string; attempt: number; retry?: number }): { rolloutId: string; firstId: string; group: string } {
  const firstId = `${options.run}.i${options.iteration}.${safeTaskId(options.taskId)}.${options.attempt}`;
  return { rolloutId: options.retry ? `${firstId}.r${options.retry}` : firstId, firstId, group: `${options.taskId}@i${options.iteration}` };
}
