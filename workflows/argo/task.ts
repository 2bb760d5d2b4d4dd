/**
 * One task inside a rollout pod, from the experiment as mounted at /experiment, loaded with
 * the workflows area's task loader (workflows/tasks: Harbor / Terminal-Bench directories,
 * JSONL, inline) and turned into bytes to stage: the files the harness may see, and apart from
 * them the verifier's tests, copied in only after the harness finished.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { Experiment } from "../../schemas/index.ts";
import { loadExperimentTasks, type Task, type TaskVerifier } from "../tasks/index.ts";

export type LoadedTask = {
  task: Task;
  /** Files for the workspace before the harness runs (relative path → bytes). */
  files: Map<string, Uint8Array>;
  /** Verifier files (a task's tests/), or the inline script as `verify.sh`. */
  testFiles: Map<string, Uint8Array>;
  /** The script to run from the tests directory, when the verifier is a script. */
  testScript?: string;
  verifier: TaskVerifier;
};

function readTree(root: string | undefined, into: Map<string, Uint8Array>) {
  if (!root) return into;
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) into.set(relative(root, path), readFileSync(path));
    }
  };
  walk(root);
  return into;
}

/**
 * Loads a task by id (every task of the experiment is listed, to find it by the same rules
 * the plan used).
 *
 * @example
 * const { task, files } = loadTask(experiment, "/experiment", "count-lines");
 */
export function loadTask(experiment: Experiment, baseDir: string, taskId: string): LoadedTask {
  const task = loadExperimentTasks(experiment, baseDir).find((candidate) => candidate.id === taskId);
  if (!task) throw new Error(`task "${taskId}" is not among the experiment's tasks (spec.environment.tasks)`);
  const encoder = new TextEncoder();
  const files = readTree(task.environmentDir, new Map());
  for (const [path, content] of Object.entries(task.files)) files.set(path, encoder.encode(content));
  const testFiles = new Map<string, Uint8Array>();
  let testScript: string | undefined;
  if (task.verifier.kind === "script") {
    readTree(task.verifier.testsDir, testFiles);
    testScript = "test.sh";
  } else if (task.verifier.kind === "inline") {
    testFiles.set("verify.sh", encoder.encode(task.verifier.script));
    testScript = "verify.sh";
  }
  return { task, files, testFiles, testScript, verifier: task.verifier };
}
