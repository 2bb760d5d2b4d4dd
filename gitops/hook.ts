/**
 * The `post-commit` hook that makes a local commit start a run: the embedded default.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git } from "./git.ts";

const MARKER = "# openforge post-commit hook";

/**
 * The hook script. It runs in the background by default so `git commit` returns at
 * once (output in `.forge/gitops/hook.log`); FORGE_GITOPS_FOREGROUND=1 runs it in the
 * foreground, which scripts and tests use to wait for the run.
 */
export function postCommitHookScript(forgeCli: string): string {
  return `#!/bin/sh
${MARKER}: runs the experiments this commit added or changed (forge gitops hook).
top=$(git rev-parse --show-toplevel) || exit 0
if [ "\${FORGE_GITOPS_FOREGROUND:-0}" = "1" ]; then
  exec bun "${forgeCli}" gitops hook --repo "$top"
fi
mkdir -p "$top/.forge/gitops"
nohup bun "${forgeCli}" gitops hook --repo "$top" >>"$top/.forge/gitops/hook.log" 2>&1 &
echo "openforge: running changed experiments in the background (log: .forge/gitops/hook.log)"
`;
}

/**
 * Installs the post-commit hook in `repo` (respecting core.hooksPath). An existing
 * hook that is not ours is left alone and reported, never overwritten.
 *
 * @example
 * installPostCommitHook(repo, "/opt/openforge/bin/forge.ts") // "/repo/.git/hooks/post-commit"
 */
export function installPostCommitHook(repo: string, forgeCli: string): string {
  const hooksDir = git(repo, ["rev-parse", "--git-path", "hooks"]).trim();
  const dir = hooksDir.startsWith("/") ? hooksDir : join(repo, hooksDir);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "post-commit");
  if (existsSync(path) && !readFileSync(path, "utf8").includes(MARKER)) {
    throw new Error(`${path} already exists and is not OpenForge's; add \`bun ${forgeCli} gitops hook\` to it by hand`);
  }
  writeFileSync(path, postCommitHookScript(forgeCli));
  chmodSync(path, 0o755);
  return path;
}
