/**
 * The few git operations GitOps needs, through the git CLI (the real tool the
 * user's repo is managed with). Every failure names the command and git's message.
 */

export class GitError extends Error {
  override name = "GitError";
}

/**
 * Runs `git ARGS` in `repo` and returns stdout; throws GitError with git's stderr.
 *
 * @example
 * const sha = git(repo, ["rev-parse", "HEAD"]).trim();
 */
export function git(repo: string, args: string[]): string {
  const run = Bun.spawnSync(["git", ...args], { cwd: repo, stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) {
    throw new GitError(`git ${args.join(" ")} (in ${repo}) failed: ${run.stderr.toString().trim()}`);
  }
  return run.stdout.toString();
}

/** The repository's top-level directory, or a GitError when `dir` is not in a git repo. */
export function repoRoot(dir: string): string {
  return git(dir, ["rev-parse", "--show-toplevel"]).trim();
}

/** The full SHA of a revision (HEAD by default). */
export function resolveCommit(repo: string, rev = "HEAD"): string {
  return git(repo, ["rev-parse", "--verify", `${rev}^{commit}`]).trim();
}

export type FileChange = { status: "added" | "modified" | "deleted" | "renamed"; path: string; from?: string };

/**
 * The files a commit changed against its first parent (or all its files for a root
 * commit), as git reports them with rename detection.
 *
 * @example
 * changedFiles(repo, sha) // [{ status: "modified", path: "experiments/quickstart.yaml" }]
 */
export function changedFiles(repo: string, commit: string): FileChange[] {
  const out = git(repo, ["diff-tree", "--root", "--no-commit-id", "-r", "-M", "--name-status", "-z", commit]);
  const fields = out.split("\0").filter((f) => f !== "");
  const changes: FileChange[] = [];
  for (let i = 0; i < fields.length; ) {
    const code = fields[i++]!;
    if (code.startsWith("R")) {
      const from = fields[i++]!;
      changes.push({ status: "renamed", from, path: fields[i++]! });
    } else {
      const status = code === "A" ? "added" : code === "D" ? "deleted" : "modified";
      changes.push({ status, path: fields[i++]! });
    }
  }
  return changes;
}

/** Commits reachable from `to` but not from `from`, oldest first (all of them when `from` is null). */
export function commitsBetween(repo: string, from: string | null, to: string): string[] {
  const range = from ? `${from}..${to}` : to;
  return git(repo, ["rev-list", "--reverse", range]).split("\n").filter((line) => line !== "");
}

/** The content of `path` at `commit`, or null when the file does not exist there. */
export function fileAtCommit(repo: string, commit: string, path: string): string | null {
  const run = Bun.spawnSync(["git", "show", `${commit}:${path}`], { cwd: repo, stdout: "pipe", stderr: "pipe" });
  return run.exitCode === 0 ? run.stdout.toString() : null;
}
