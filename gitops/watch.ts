/**
 * `forge gitops watch`: for a repo that is pushed to (a bare repo on a server, or a
 * clone that pulls), runs the experiments of each new commit on the branch, oldest
 * first, remembering the last commit it handled so a restart neither skips nor repeats.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commitsBetween, git } from "./git.ts";
import { LOCAL_STATE_DIR } from "./layout.ts";
import { triggerCommit, type ExperimentOutcome, type TriggerOptions } from "./trigger.ts";

export type WatchOptions = Omit<TriggerOptions, "commit"> & {
  branch: string;
  intervalMs: number;
  /** Stop after one pass (tests, cron). */
  once?: boolean;
  signal?: AbortSignal;
};

function statePath(repo: string): string {
  return join(repo, LOCAL_STATE_DIR, "gitops", "watch.json");
}

function readLastCommit(repo: string): string | null {
  const path = statePath(repo);
  if (!existsSync(path)) return null;
  const state = JSON.parse(readFileSync(path, "utf8")) as { lastCommit?: string };
  return state.lastCommit ?? null;
}

function writeLastCommit(repo: string, commit: string): void {
  mkdirSync(join(repo, LOCAL_STATE_DIR, "gitops"), { recursive: true });
  writeFileSync(statePath(repo), JSON.stringify({ lastCommit: commit }) + "\n");
}

/** The branch head, or null while the branch does not exist yet (an empty bare repo). */
function branchHead(repo: string, branch: string): string | null {
  const run = Bun.spawnSync(["git", "rev-parse", "--verify", "--quiet", `refs/heads/${branch}`], { cwd: repo, stdout: "pipe" });
  return run.exitCode === 0 ? run.stdout.toString().trim() : null;
}

/**
 * Handles every commit on `branch` not yet handled. On the first run it handles only
 * the head (a fresh watch must not replay the whole history).
 *
 * @example
 * await watchOnce({ repo, branch: "main", executor: "local", intervalMs: 5000 })
 */
export async function watchOnce(options: WatchOptions): Promise<ExperimentOutcome[]> {
  const head = branchHead(options.repo, options.branch);
  if (!head) return [];
  const last = readLastCommit(options.repo);
  if (last === head) return [];
  const isAncestor = last !== null && Bun.spawnSync(["git", "merge-base", "--is-ancestor", last, head], { cwd: options.repo }).exitCode === 0;
  // A force-push that dropped `last` restarts from the new head.
  const commits = isAncestor ? commitsBetween(options.repo, last, head) : [head];
  const outcomes: ExperimentOutcome[] = [];
  for (const commit of commits) {
    outcomes.push(...(await triggerCommit({ ...options, commit })));
    writeLastCommit(options.repo, commit);
  }
  return outcomes;
}

/** Polls until aborted (or once). */
export async function watchRepo(options: WatchOptions): Promise<void> {
  git(options.repo, ["rev-parse", "--git-dir"]);
  for (;;) {
    await watchOnce(options);
    if (options.once || options.signal?.aborted) return;
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs));
    if (options.signal?.aborted) return;
  }
}
