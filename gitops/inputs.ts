/**
 * What an experiment is made of besides its own file: the tasks path and the simulator's policy
 * script it names. A commit that changes one of them changes the experiment, so it runs again
 * (the local hook and watch) or is submitted again (the Argo Events Sensor).
 */
import { posix } from "node:path";
import type { Experiment } from "../schemas/index.ts";

/**
 * The repo-relative paths (files or folders) `experiment` at `experimentPath` reads. Paths
 * outside the repo are left out (a commit cannot change them).
 *
 * @example
 * experimentInputs(experiment, "experiments/example.yaml"); // ["tasks", "policies/example.yaml"]
 */
export function experimentInputs(experiment: Experiment, experimentPath: string): string[] {
  const base = posix.dirname(experimentPath);
  const inputs: string[] = [];
  const tasks = experiment.spec.environment.tasks;
  if (typeof tasks === "string") inputs.push(tasks);
  const script = experiment.spec.policy.simulator.script;
  // The simulator (and so its script) plays only for an experiment that names no upstream.
  if (script !== undefined && experiment.spec.policy.upstreams.length === 0) inputs.push(script);
  return inputs
    .filter((path) => !posix.isAbsolute(path))
    .map((path) => posix.normalize(posix.join(base, path)).replace(/\/+$/, ""))
    .filter((path) => path !== ".." && !path.startsWith("../"));
}

/**
 * Whether `file` (repo-relative) is `input` or inside it.
 *
 * @example
 * isInputFile("tasks/hello/tests/test.sh", "tasks"); // true
 * isInputFile("tasks-old/x", "tasks"); // false
 */
export function isInputFile(file: string, input: string): boolean {
  return input === "." || file === input || file.startsWith(`${input}/`);
}
