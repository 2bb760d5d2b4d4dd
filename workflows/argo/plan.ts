/**
 * The plan: which rollouts an iteration runs (tasks × k). It runs inside the cluster as the
 * first step of each iteration, and its JSON output fans the rollouts out with `withParam`,
 * so the Workflow object stays the same size however many rollouts there are.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Experiment } from "../../schemas/experiment.ts";

/** One rollout of the plan; the fields are Argo parameters (`{{item.task_id}}`), so snake_case strings. */
export type PlannedRollout = {
  rollout_id: string;
  task_id: string;
  attempt: string;
  iteration: string;
  group: string;
};

/**
 * Lists the task ids of an experiment: a task directory's subdirectories that hold an
 * `instruction.md`, the `id` of each JSONL line, or the inline list.
 *
 * @example
 * listTaskIds(experiment, dirname(experimentPath)) // ["count-lines", "fix-typo"]
 */
export function listTaskIds(experiment: Experiment, baseDir: string): string[] {
  const tasks = experiment.spec.environment.tasks;
  if (Array.isArray(tasks)) return tasks.map((task) => task.id);
  const path = resolve(baseDir, tasks);
  if (!existsSync(path)) throw new Error(`spec.environment.tasks: ${path} does not exist (it is resolved against the experiment file's directory)`);
  if (statSync(path).isDirectory()) {
    const ids = readdirSync(path)
      .filter((entry) => existsSync(join(path, entry, "instruction.md")))
      .sort();
    if (ids.length === 0) throw new Error(`spec.environment.tasks: ${path} has no task directories (each needs an instruction.md)`);
    return ids;
  }
  return readFileSync(path, "utf8")
    .split("\n")
    .map((line, index) => ({ line: line.trim(), index }))
    .filter(({ line }) => line.length > 0)
    .map(({ line, index }) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch (error) {
        throw new Error(`${path}:${index + 1}: not JSON: ${(error as Error).message}`);
      }
      const id = (parsed as { id?: unknown }).id;
      if (typeof id !== "string" || !id) throw new Error(`${path}:${index + 1}: each task line needs a string "id"`);
      return id;
    });
}

/**
 * The rollouts of one iteration: every task k times. `run` (the Workflow name) makes rollout
 * ids unique across re-runs that record into the same data directory.
 *
 * @example
 * planRollouts({ run: "quick-1a2b3c4d", taskIds: ["a"], k: 2, iteration: 0 }).map((r) => r.rollout_id)
 * // ["quick-1a2b3c4d.i0.a.0", "quick-1a2b3c4d.i0.a.1"]
 */
export function planRollouts(options: { run: string; taskIds: string[]; k: number; iteration: number }): PlannedRollout[] {
  const plan: PlannedRollout[] = [];
  for (const taskId of options.taskIds) {
    const safe = taskId.replace(/[^A-Za-z0-9_-]/g, "_");
    for (let attempt = 0; attempt < options.k; attempt++) {
      plan.push({
        rollout_id: `${options.run}.i${options.iteration}.${safe}.${attempt}`,
        task_id: taskId,
        attempt: String(attempt),
        iteration: String(options.iteration),
        group: `${taskId}@i${options.iteration}`,
      });
    }
  }
  return plan;
}
