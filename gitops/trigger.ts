/**
 * The local trigger: given a commit, run (or submit) every experiment it added or
 * changed, each from a clean export of exactly that commit, with the commit SHA
 * recorded on every rollout. A failing experiment blocks nothing else.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { parseExperimentFile } from "../schemas/index.ts";
import { commitExperimentChanges } from "./changes.ts";
import { GitError, resolveCommit } from "./git.ts";
import { LOCAL_STATE_DIR } from "./layout.ts";

/** The rollout label that ties every rollout to the commit that started it. */
export const COMMIT_LABEL = "openforge.dev/commit";

export type ExperimentOutcome =
  | { path: string; outcome: "ran"; exitCode: number; dataDir: string; logFile: string }
  | { path: string; outcome: "invalid"; error: string }
  | { path: string; outcome: "unscheduled" };

export type TriggerOptions = {
  repo: string;
  commit?: string;
  executor: "local" | "argo";
  /** Where run data goes; default `<repo>/.forge/runs`. */
  runsDir?: string;
  /** Extra argv for `forge run` / `forge submit` (tests shrink k or parallelism with it). */
  extraArgs?: string[];
  log?: (line: string) => void;
};

/** The forge CLI of this checkout: what the hook and the trigger run. */
export const FORGE_CLI = join(import.meta.dir, "..", "bin", "forge.ts");

/** Writes the tree of `commit` into a fresh temp dir, so a run sees exactly what was committed. */
function exportCommit(repo: string, commit: string): string {
  const dir = mkdtempSync(join(tmpdir(), `forge-gitops-${commit.slice(0, 7)}-`));
  const archive = Bun.spawnSync(["git", "archive", "--format=tar", commit], { cwd: repo, stdout: "pipe", stderr: "pipe" });
  if (archive.exitCode !== 0) throw new GitError(`git archive ${commit} failed: ${archive.stderr.toString().trim()}`);
  const untar = Bun.spawnSync(["tar", "-x", "-C", dir], { stdin: archive.stdout, stderr: "pipe" });
  if (untar.exitCode !== 0) throw new GitError(`extracting ${commit} failed: ${untar.stderr.toString().trim()}`);
  return dir;
}

/**
 * Runs the experiments `commit` changed. Returns one outcome per changed experiment.
 *
 * @example
 * await triggerCommit({ repo, executor: "local" }) // [{ path: "experiments/a.yaml", outcome: "ran", exitCode: 0, ... }]
 */
export async function triggerCommit(options: TriggerOptions): Promise<ExperimentOutcome[]> {
  const log = options.log ?? ((line: string) => console.error(line));
  const commit = resolveCommit(options.repo, options.commit ?? "HEAD");
  const changes = commitExperimentChanges(options.repo, commit);
  if (changes.length === 0) {
    log(`gitops: commit ${commit.slice(0, 7)} changes no experiment`);
    return [];
  }
  const tree = exportCommit(options.repo, commit);
  const runsDir = options.runsDir ?? join(options.repo, LOCAL_STATE_DIR, "runs");
  mkdirSync(runsDir, { recursive: true });
  const outcomes: ExperimentOutcome[] = [];
  try {
    for (const change of changes) {
      if (change.kind === "deleted") {
        log(`gitops: ${change.path} was deleted at ${commit.slice(0, 7)}: no longer scheduled`);
        outcomes.push({ path: change.path, outcome: "unscheduled" });
        continue;
      }
      const file = join(tree, change.path);
      try {
        parseExperimentFile(file);
      } catch (error) {
        // Report against the repo path the user edits, not the temp export.
        const message = (error as Error).message.split(file).join(change.path);
        log(`gitops: ${message}`);
        outcomes.push({ path: change.path, outcome: "invalid", error: message });
        continue;
      }
      const name = basename(change.path).replace(/\.ya?ml$/, "");
      const dataDir = join(runsDir, `${name}-${commit.slice(0, 12)}`);
      mkdirSync(dataDir, { recursive: true });
      const logFile = join(dataDir, "gitops-run.log");
      const argv =
        options.executor === "local"
          ? ["run", file, "--data", dataDir, "--label", `${COMMIT_LABEL}=${commit}`]
          : ["submit", file, "--param", `commit=${commit}`];
      log(`gitops: ${change.path} @ ${commit.slice(0, 7)} → forge ${argv[0]} (log: ${logFile})`);
      const child = Bun.spawn(["bun", FORGE_CLI, ...argv, ...(options.extraArgs ?? [])], {
        cwd: tree,
        stdout: Bun.file(logFile),
        stderr: Bun.file(`${logFile}.err`),
        env: { ...process.env, FORGE_GITOPS_COMMIT: commit },
      });
      const exitCode = await child.exited;
      log(`gitops: ${change.path}: forge ${argv[0]} exited ${exitCode}`);
      outcomes.push({ path: change.path, outcome: "ran", exitCode, dataDir, logFile });
    }
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
  return outcomes;
}
