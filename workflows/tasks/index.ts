/**
 * Tasks: Harbor / Terminal-Bench task directories, JSONL task lists and inline tasks, loaded
 * into one `Task` shape for the executors.
 */
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import type { Experiment } from "../../schemas/index.ts";
import { loadTaskTree } from "./directory.ts";
import { checkTaskIds } from "./ids.ts";
import { loadJsonlTasks, taskFromSpec } from "./jsonl.ts";
import { TaskError, type Task } from "./types.ts";

export { loadTaskDir, loadTaskTree } from "./directory.ts";
export { loadJsonlTasks, taskFromSpec } from "./jsonl.ts";
export { checkTaskIds, safeTaskId } from "./ids.ts";
export { DEFAULT_REWARD_RANGE, TaskError, type RewardRange, type RewardSource, type Task, type TaskVerifier } from "./types.ts";

/**
 * Loads tasks from a path: a task directory, a directory of task directories, or a .jsonl list.
 *
 * @example
 * loadTasks("examples/quickstart/tasks").length; // 5
 */
export function loadTasks(path: string): Task[] {
  const full = resolve(path);
  if (!existsSync(full)) throw new TaskError(`tasks: ${full} does not exist`);
  const tasks = statSync(full).isDirectory() ? loadTaskTree(full) : loadJsonlTasks(full);
  checkTaskIds(tasks);
  return tasks;
}

/**
 * The tasks of an experiment: `spec.environment.tasks` is a path (resolved against the
 * experiment file's directory) or an inline list. `experimentFile` names the file in the
 * error when the path does not exist.
 *
 * @example
 * loadExperimentTasks(experiment, "examples/quickstart", "examples/quickstart/experiment.yaml");
 */
export function loadExperimentTasks(experiment: Experiment, baseDir: string, experimentFile?: string): Task[] {
  const tasks = experiment.spec.environment.tasks;
  if (Array.isArray(tasks)) {
    const inline = tasks.map((spec, index) => taskFromSpec(spec, `spec.environment.tasks[${index}]`));
    checkTaskIds(inline);
    return inline;
  }
  const full = resolve(baseDir, tasks);
  if (!existsSync(full)) {
    throw new TaskError(
      `${experimentFile ?? "the experiment"}: spec.environment.tasks: "${tasks}" (${full}) does not exist; it is a task directory, a directory of task directories or a .jsonl file, relative to the experiment file`,
    );
  }
  return loadTasks(full);
}
