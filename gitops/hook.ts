/**
 * The `post-commit` hook that makes a local commit start a run. It holds no path of this
 * machine: it finds the forge CLI at run time (FORGE_CLI, else the clone's git config
 * `openforge.cli` that `forge gitops init` sets, else a `forge` on PATH), so a moved checkout
 * or a fresh clone needs only `forge gitops init .` again, never an edited hook.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git } from "./git.ts";
import { CLI_CONFIG_KEY, LOCAL_STATE_DIR } from "./layout.ts";

const MARKER = "# openforge post-commit hook";

/**
 * The hook script. `forge gitops hook --background` checks the commit's experiments in the
 * foreground (so `git commit` prints a broken experiment at once) and runs the valid ones in a
 * detached process (output in `.forge/gitops/hook.log`); FORGE_GITOPS_FOREGROUND=1 runs
 * everything in the foreground, which scripts and tests use to wait for the run.
 *
 * @example
 * postCommitHookScript().includes("gitops hook") // true
 */
export function postCommitHookScript(): string {
  return `#!/bin/sh
${MARKER}: checks and runs the experiments this commit added or changed, and those
# whose tasks or policy script it changed (forge gitops hook; docs/gitops.md in OpenForge).
top=$(git rev-parse --show-toplevel) || exit 0
forge_cli="\${FORGE_CLI:-$(git config --get ${CLI_CONFIG_KEY})}"
if [ -n "$forge_cli" ]; then
  set -- bun "$forge_cli"
elif command -v forge >/dev/null 2>&1; then
  set -- forge
else
  echo "openforge: no forge CLI known to this clone; run 'bun <OpenForge checkout>/bin/forge.ts gitops init .' here once (or set FORGE_CLI)" >&2
  exit 0
fi
if [ "\${FORGE_GITOPS_FOREGROUND:-0}" = "1" ]; then
  exec "$@" gitops hook --repo "$top"
fi
exec "$@" gitops hook --repo "$top" --background
`;
}

/** The log the background run of the hook appends to, relative to the repo. */
export const HOOK_LOG = `${LOCAL_STATE_DIR}/gitops/hook.log`;

/**
 * Installs the post-commit hook in `repo` (respecting core.hooksPath). An existing hook that
 * is not ours is left alone and reported, never overwritten.
 *
 * @example
 * installPostCommitHook(repo) // "/repo/.git/hooks/post-commit"
 */
export function installPostCommitHook(repo: string): string {
  const hooksDir = git(repo, ["rev-parse", "--git-path", "hooks"]).trim();
  const dir = hooksDir.startsWith("/") ? hooksDir : join(repo, hooksDir);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "post-commit");
  if (existsSync(path) && !readFileSync(path, "utf8").includes(MARKER)) {
    throw new Error(`${path} already exists and is not OpenForge's; add \`forge gitops hook --repo "$(git rev-parse --show-toplevel)" --background\` to it by hand`);
  }
  writeFileSync(path, postCommitHookScript());
  chmodSync(path, 0o755);
  return path;
}
