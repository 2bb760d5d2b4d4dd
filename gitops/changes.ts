/**
 * Which experiments a commit touched: the unit a commit-triggered run works on. An experiment
 * is touched when its file is added, changed or removed, or when a file it reads (its tasks,
 * its policy script: inputs.ts) is.
 */
import { parseExperimentText } from "../schemas/index.ts";
import { changedFiles, fileAtCommit, git, type FileChange } from "./git.ts";
import { experimentInputs, isInputFile } from "./inputs.ts";
import { EXPERIMENTS_DIR } from "./layout.ts";

export type ExperimentChange =
  /** `because`: the changed input file that makes an unchanged experiment run again. */
  | { kind: "run"; path: string; because?: string }
  | { kind: "deleted"; path: string };

/** An experiment present at the commit and the repo paths it reads. */
export type ExperimentInputs = { path: string; inputs: string[] };

/** True for `experiments/*.yaml` (or .yml) at the top of the experiments folder. */
export function isExperimentPath(path: string): boolean {
  return path.startsWith(`${EXPERIMENTS_DIR}/`) && /^[^/]+\.ya?ml$/.test(path.slice(EXPERIMENTS_DIR.length + 1));
}

/**
 * Classifies a commit's file changes into experiments to run and experiments that stopped
 * existing (and so stop being scheduled); `experiments` (those present at the commit, with
 * their inputs) adds the experiments whose tasks or policy script the commit changed.
 *
 * @example
 * experimentChanges([{ status: "modified", path: "experiments/a.yaml" }]) // [{ kind: "run", path: "experiments/a.yaml" }]
 * experimentChanges([{ status: "modified", path: "tasks/t/tests/test.sh" }], [{ path: "experiments/a.yaml", inputs: ["tasks"] }])
 * // [{ kind: "run", path: "experiments/a.yaml", because: "tasks/t/tests/test.sh" }]
 */
export function experimentChanges(files: FileChange[], experiments: ExperimentInputs[] = []): ExperimentChange[] {
  const changes: ExperimentChange[] = [];
  for (const file of files) {
    if (file.status === "renamed" && file.from && isExperimentPath(file.from)) {
      changes.push({ kind: "deleted", path: file.from });
    }
    if (!isExperimentPath(file.path)) continue;
    changes.push({ kind: file.status === "deleted" ? "deleted" : "run", path: file.path });
  }
  const touched = files.flatMap((file) => (file.from ? [file.path, file.from] : [file.path]));
  for (const experiment of experiments) {
    if (changes.some((change) => change.path === experiment.path)) continue;
    const because = touched.find((file) => experiment.inputs.some((input) => isInputFile(file, input)));
    if (because) changes.push({ kind: "run", path: experiment.path, because });
  }
  return changes;
}

/**
 * The experiments at `commit` and what each reads. One that does not parse is left out: a
 * commit that changes only its inputs has nothing to run it with (its own commit reported it).
 */
function experimentsAt(repo: string, commit: string): ExperimentInputs[] {
  const paths = git(repo, ["ls-tree", "-r", "--name-only", commit, "--", `${EXPERIMENTS_DIR}/`]).split("\n").filter(isExperimentPath);
  const found: ExperimentInputs[] = [];
  for (const path of paths) {
    const text = fileAtCommit(repo, commit, path);
    if (text === null) continue;
    try {
      found.push({ path, inputs: experimentInputs(parseExperimentText(text, path), path) });
    } catch {
      continue;
    }
  }
  return found;
}

/** The experiment changes of one commit in `repo`. */
export function commitExperimentChanges(repo: string, commit: string): ExperimentChange[] {
  const files = changedFiles(repo, commit);
  // Only a commit that changes something besides experiment files can touch an input.
  const others = files.some((file) => !isExperimentPath(file.path));
  return experimentChanges(files, others ? experimentsAt(repo, commit) : []);
}
