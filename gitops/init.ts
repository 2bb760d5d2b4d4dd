/**
 * `forge gitops init DIR`: lays out an experiments repo and installs the local hook.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git } from "./git.ts";
import { installPostCommitHook } from "./hook.ts";
import { ARGOCD_DIR, EXPERIMENTS_DIR, LOCAL_STATE_DIR, MANIFESTS_DIR, SETTINGS_FILE, TASKS_DIR } from "./layout.ts";
import { GitopsSettingsSchema } from "./settings.ts";

const EXAMPLE_EXPERIMENT = `apiVersion: openforge.dev/v1
kind: Experiment
metadata:
  name: example
spec:
  policy:
    model: forge-sim/qwen3-sim
    mode: train
  harness:
    name: forge-react
  environment:
    tasks:
      - id: hello
        instruction: Create a file hello.txt containing exactly the line "hello world".
        test: grep -qx "hello world" hello.txt
  rollouts:
    k: 2
    parallelism: 2
    timeoutSeconds: 120
  metrics:
    k: [1, 2]
`;

function repoReadme(forgeCli: string): string {
  return `# Experiments

Managed with OpenForge GitOps. Every experiment is one file in \`${EXPERIMENTS_DIR}/\`; tasks live in
\`${TASKS_DIR}/\`; \`${MANIFESTS_DIR}/\` holds the rendered Kubernetes manifests (never edit them by hand).

- Commit a new or changed experiment: the \`post-commit\` hook runs it with the local executor
  (log in \`.forge/gitops/hook.log\`), every rollout labelled with the commit SHA.
- On a cluster: \`bun ${forgeCli} gitops render\` and commit \`deploy/\`; apply
  \`${ARGOCD_DIR}/application.yaml\` once. Argo CD keeps the manifests in sync and the Argo Events
  Sensor of each experiment submits its Workflow when a push changes the experiment's file.
- CI: \`bun ${forgeCli} gitops render --check\` fails when \`deploy/\` is stale.
- Settings (repo URL, branch, namespaces, executor): \`${SETTINGS_FILE}\`.
`;
}

/** Writes a file unless it exists (init never overwrites the user's work). */
function writeNew(path: string, content: string, created: string[]): void {
  if (existsSync(path)) return;
  writeFileSync(path, content);
  created.push(path);
}

/**
 * Creates the layout in `dir` (a git repo is initialised when there is none), writes
 * an example experiment and installs the post-commit hook. Returns the paths created.
 *
 * @example
 * initGitopsRepo("/tmp/exp", "/opt/openforge/bin/forge.ts")
 */
export function initGitopsRepo(dir: string, forgeCli: string): { created: string[]; hook: string } {
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(dir, ".git"))) git(dir, ["init", "--quiet", "--initial-branch=main"]);
  const created: string[] = [];
  for (const sub of [EXPERIMENTS_DIR, TASKS_DIR, MANIFESTS_DIR, ARGOCD_DIR]) mkdirSync(join(dir, sub), { recursive: true });
  writeNew(join(dir, EXPERIMENTS_DIR, "example.yaml"), EXAMPLE_EXPERIMENT, created);
  writeNew(join(dir, TASKS_DIR, ".gitkeep"), "", created);
  writeNew(join(dir, MANIFESTS_DIR, ".gitkeep"), "", created);
  writeNew(join(dir, "README.md"), repoReadme(forgeCli), created);
  writeNew(join(dir, ".gitignore"), `${LOCAL_STATE_DIR}/\n`, created);
  writeNew(join(dir, SETTINGS_FILE), JSON.stringify(GitopsSettingsSchema.parse({}), null, 2) + "\n", created);
  const hook = installPostCommitHook(dir, forgeCli);
  return { created, hook };
}
