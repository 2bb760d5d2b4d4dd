/**
 * `forge gitops init DIR`: lays out an experiments repo (or completes a clone of one) and
 * installs the local hook. Nothing written into the repo names this machine's paths: the
 * forge CLI's location is kept per clone in git config (`openforge.cli`), never committed.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { git } from "./git.ts";
import { installPostCommitHook } from "./hook.ts";
import { ARGOCD_DIR, CLI_CONFIG_KEY, EXPERIMENTS_DIR, LOCAL_STATE_DIR, MANIFESTS_DIR, POLICIES_DIR, SETTINGS_FILE, TASKS_DIR } from "./layout.ts";
import { GitopsSettingsSchema } from "./settings.ts";

/**
 * The example: one task in Harbor layout, played by the policy simulator with a script that
 * solves it three times in four (so the first commit shows real passes and failures, not the
 * simulator's echo of a prompt it has no script for).
 */
const EXAMPLE_EXPERIMENT = `apiVersion: openforge.dev/v1
kind: Experiment
metadata:
  name: example
spec:
  policy:
    model: forge-sim/qwen3-sim
    mode: train
    # No upstreams: the policy simulator stands in for the model, playing this script. Name
    # your inference servers under \`upstreams:\` (vLLM, SGLang, any OpenAI API) to use a model.
    simulator:
      seed: 1
      script: ../${POLICIES_DIR}/example.yaml
  harness:
    name: forge-react
  environment:
    # Every task directory under tasks/; editing a task re-runs this experiment.
    tasks: ../${TASKS_DIR}
  rollouts:
    k: 4
    parallelism: 2
    timeoutSeconds: 120
  metrics:
    k: [1, 2, 4]
`;

const EXAMPLE_POLICY = `# The policy simulator's script for experiments/example.yaml (a stand-in for the model: it
# matches a task by a phrase of its prompt and plays these steps; see OpenForge's
# examples/policies/quickstart.yaml for every field).
version: 1
tasks:
  - name: hello
    match: hello.txt
    failure_rate: 0.25
    steps:
      - say: I'll create the file.
        write: { path: hello.txt, content: "hello world\\n" }
      - finish: Created hello.txt containing "hello world".
    failing:
      - write: { path: hello.txt, content: "Hello World\\n" }
      - finish: Created hello.txt.
`;

const EXAMPLE_TASK: Record<string, string> = {
  "instruction.md": 'Create a file hello.txt containing exactly the line "hello world".\n',
  "task.toml": 'version = "1.0"\n\n[agent]\ntimeout_sec = 60.0\n\n[verifier]\ntimeout_sec = 30.0\n',
  "tests/test.sh": [
    "#!/bin/bash",
    '# The verifier: reward 1 when hello.txt holds exactly the line "hello world", else 0, written',
    "# where OpenForge (and Harbor) read it: $FORGE_LOGS/reward.txt (/logs/verifier in a sandbox).",
    'logs="${FORGE_LOGS:-/logs/verifier}"',
    'if grep -qx "hello world" hello.txt 2>/dev/null; then echo 1 > "$logs/reward.txt"; else echo 0 > "$logs/reward.txt"; fi',
    "",
  ].join("\n"),
};

const REPO_README = `# Experiments

Managed with OpenForge GitOps (OpenForge's docs/gitops.md). Below, \`forge\` stands for
\`bun <your OpenForge checkout>/bin/forge.ts\` (or \`bun run forge\` inside that checkout).

| folder | what |
|---|---|
| \`${EXPERIMENTS_DIR}/\` | one file per experiment |
| \`${TASKS_DIR}/\` | tasks in Harbor layout (\`instruction.md\`, \`task.toml\`, \`environment/\`, \`tests/test.sh\`) |
| \`${POLICIES_DIR}/\` | policy-simulator scripts, for experiments that name no model server |
| \`${MANIFESTS_DIR}/\`, \`${ARGOCD_DIR}/\` | rendered Kubernetes manifests (\`forge gitops render\`; never edit by hand) |
| \`${SETTINGS_FILE}\` | repo URL, branch, namespaces, executor |

After cloning, run \`forge gitops init .\` once in the clone: it installs the post-commit hook and
records where \`forge\` is for this clone (git config \`${CLI_CONFIG_KEY}\`); it overwrites nothing.

**On this machine (local executor).** A commit that adds or changes an experiment, or changes a
task or policy script an experiment uses, is checked by the post-commit hook at once (problems
are printed by \`git commit\`); the valid experiments then run in the background (log
\`${LOCAL_STATE_DIR}/gitops/hook.log\`, data \`${LOCAL_STATE_DIR}/runs/<experiment>-<commit>/\`): every
task k times with the policy, each rollout verified by its task's test and labelled with the
commit, then the veRL batch is exported and pass@k is computed. No training step runs here.

**On a cluster (Argo).** \`forge gitops render\` and commit \`deploy/\`; apply
\`${ARGOCD_DIR}/application.yaml\` once. Argo CD keeps the manifests in sync, and each
experiment's Argo Events Sensor submits its Workflow when a push changes the experiment or its
tasks. There, an experiment in train mode with \`upstreams\` (real inference servers) also
trains: export, a veRL step and a weight sync per iteration (\`training:\`). CI:
\`forge gitops render --check\` fails when \`deploy/\` is stale.
`;

/** Writes a file unless it exists (init never overwrites the user's work). */
function writeNew(path: string, content: string, created: string[], mode?: number): void {
  if (existsSync(path)) return;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content, mode === undefined ? undefined : { mode });
  created.push(path);
}

/**
 * Creates the layout in `dir` (a git repo is initialised when there is none), writes the
 * example experiment (a task, its policy script) unless the repo has experiments already,
 * records where the forge CLI is in the clone's git config and installs the post-commit hook.
 * Returns the paths created.
 *
 * @example
 * initGitopsRepo("/tmp/exp", "/opt/openforge/bin/forge.ts")
 */
export function initGitopsRepo(dir: string, forgeCli: string): { created: string[]; hook: string } {
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(dir, ".git"))) git(dir, ["init", "--quiet", "--initial-branch=main"]);
  const created: string[] = [];
  const fresh = !existsSync(join(dir, EXPERIMENTS_DIR));
  for (const sub of [EXPERIMENTS_DIR, TASKS_DIR, POLICIES_DIR, MANIFESTS_DIR, ARGOCD_DIR]) mkdirSync(join(dir, sub), { recursive: true });
  if (fresh) {
    writeNew(join(dir, EXPERIMENTS_DIR, "example.yaml"), EXAMPLE_EXPERIMENT, created);
    writeNew(join(dir, POLICIES_DIR, "example.yaml"), EXAMPLE_POLICY, created);
    for (const [file, content] of Object.entries(EXAMPLE_TASK)) writeNew(join(dir, TASKS_DIR, "hello", file), content, created, file.endsWith(".sh") ? 0o755 : undefined);
  }
  writeNew(join(dir, MANIFESTS_DIR, ".gitkeep"), "", created);
  writeNew(join(dir, "README.md"), REPO_README, created);
  writeNew(join(dir, ".gitignore"), `${LOCAL_STATE_DIR}/\n`, created);
  writeNew(join(dir, SETTINGS_FILE), JSON.stringify(GitopsSettingsSchema.parse({}), null, 2) + "\n", created);
  git(dir, ["config", "--local", CLI_CONFIG_KEY, forgeCli]);
  const hook = installPostCommitHook(dir);
  return { created, hook };
}
