/**
 * Task ids in rollout ids and directory names: characters outside `[A-Za-z0-9_-]` become `_`,
 * so two ids may become one (`a/b` and `a_b`); such a pair is refused, naming both, rather
 * than letting the second task's rollouts collide with the first's (409 at registration).
 */
import { TaskError, type Task } from "./types.ts";

/**
 * The task id as it appears in rollout ids and paths.
 *
 * @example
 * safeTaskId("fix typo/1"); // "fix_typo_1"
 */
export function safeTaskId(id: string): string {
  return id.replace(/[^A-Za-z0-9_-]/g, "_");
}

/**
 * Throws a TaskError when two tasks have the same id, or ids that are the same once made safe.
 *
 * @example
 * checkTaskIds([{ id: "a/b", source: "x.jsonl:1" }, { id: "a_b", source: "x.jsonl:2" }]);
 * // TaskError: task ids "a/b" (x.jsonl:1) and "a_b" (x.jsonl:2) both become "a_b" in rollout ids: rename one
 */
export function checkTaskIds(tasks: Pick<Task, "id" | "source">[]): void {
  const seen = new Map<string, Pick<Task, "id" | "source">>();
  for (const task of tasks) {
    const safe = safeTaskId(task.id);
    const earlier = seen.get(safe);
    if (earlier) {
      const why = earlier.id === task.id ? `task id "${task.id}" is used twice` : `task ids "${earlier.id}" and "${task.id}" both become "${safe}" in rollout ids`;
      throw new TaskError(`${why} (${earlier.source} and ${task.source}): rename one`);
    }
    seen.set(safe, task);
  }
}
