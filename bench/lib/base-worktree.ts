/**
 * Another commit of this checkout in a temporary git worktree that shares its node_modules: the
 * base side an A/B bench imports or starts, so both sides run from one process's view of the
 * same files. Removed with `remove()`.
 */
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";

export interface BaseWorktree {
  /** The worktree's root. */
  root: string;
  /** The commit checked out. */
  sha: string;
  /** The worktree removed (and its temporary folder). */
  remove(): void;
}

/**
 * `ref` of the repository at `root`, checked out under a temporary folder named after `name`.
 *
 * @example
 * const base = baseWorktree(ROOT, "HEAD~1", "sse-split");
 * try { await import(join(base.root, "proxy/capture/sse-rewriter.ts")); } finally { base.remove(); }
 */
export function baseWorktree(root: string, ref: string, name: string): BaseWorktree {
  const git = (...a: string[]) => {
    const r = spawnSync("git", a, { cwd: root, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`git ${a.join(" ")}: ${r.stderr.trim()}`);
    return r.stdout.trim();
  };
  const sha = git("rev-parse", "--verify", `${ref}^{commit}`);
  const work = mkdtempSync(join(tmpdir(), `forge-bench-${name}-`));
  const base = join(work, "base");
  git("worktree", "add", "--detach", base, sha);
  symlinkSync(join(root, "node_modules"), join(base, "node_modules"));
  return {
    root: base,
    sha,
    remove() {
      spawnSync("git", ["worktree", "remove", "--force", base], { cwd: root });
      rmSync(work, { recursive: true, force: true });
    },
  };
}
