/**
 * Which experiments a commit touched: the unit a commit-triggered run works on.
 */
import { changedFiles, type FileChange } from "./git.ts";
import { EXPERIMENTS_DIR } from "./layout.ts";

export type ExperimentChange =
  | { kind: "run"; path: string }
  | { kind: "deleted"; path: string };

/** True for `experiments/*.yaml` (or .yml) at the top of the experiments folder. */
export function isExperimentPath(path: string): boolean {
  return path.startsWith(`${EXPERIMENTS_DIR}/`) && /^[^/]+\.ya?ml$/.test(path.slice(EXPERIMENTS_DIR.length + 1));
}

/**
 * Classifies a commit's file changes into experiments to run and experiments that
 * stopped existing (and so stop being scheduled).
 *
 * @example
 * experimentChanges([{ status: "modified", path: "experiments/a.yaml" }]) // [{ kind: "run", path: "experiments/a.yaml" }]
 */
export function experimentChanges(files: FileChange[]): ExperimentChange[] {
  const changes: ExperimentChange[] = [];
  for (const file of files) {
    if (file.status === "renamed" && file.from && isExperimentPath(file.from)) {
      changes.push({ kind: "deleted", path: file.from });
    }
    if (!isExperimentPath(file.path)) continue;
    changes.push({ kind: file.status === "deleted" ? "deleted" : "run", path: file.path });
  }
  return changes;
}

/** The experiment changes of one commit in `repo`. */
export function commitExperimentChanges(repo: string, commit: string): ExperimentChange[] {
  return experimentChanges(changedFiles(repo, commit));
}
