/**
 * The plan: which rollouts an iteration runs (tasks × k). It runs inside the cluster as the
 * first step of each iteration, and its JSON output fans the rollouts out with `withParam`,
 * so the Workflow object stays the same size however many rollouts there are.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Experiment } from "../../schemas/experiment.ts";

/**
 * One rollout of the plan: an Argo parameter item (`{{item.task_id}}`), so strings, and only
 * what cannot be derived: the plan of 10,000 rollouts is runtime data stored in the workflow's
 * status, so each byte here is paid 10,000 times (see bench/render.ts).
 */
export type PlannedRollout = { task_id: string; attempt: string };

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
 *
 * @example
 * rolloutIdentity({ run: "quick-1a2b3c4d", iteration: 0, taskId: "fix typo", attempt: 1 })
 * // { rolloutId: "quick-1a2b3c4d.i0.fix_typo.1", group: "fix typo@i0" }
 */
export function rolloutIdentity(options: { run: string; iteration: number; taskId: string; attempt: number }): { rolloutId: string; group: string } {
  const safe = options.taskId.replace(/[^A-Za-z0-9_-]/g, "_");
  return { rolloutId: `${options.run}.i${options.iteration}.${safe}.${options.attempt}`, group: `${options.taskId}@i${options.iteration}` };
}
