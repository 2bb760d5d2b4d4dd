/**
 * `forge gitops init | render | hook | watch` (docs/gitops.md).
 */
import { spawn } from "node:child_process";
import { mkdirSync, openSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { intFlag, parseCommand, UsageError } from "../lib/index.ts";
import { repoRoot } from "./git.ts";
import { HOOK_LOG } from "./hook.ts";
import { initGitopsRepo } from "./init.ts";
import { readGitopsSettings } from "./settings.ts";
import { FORGE_CLI, planCommit, triggerCommit } from "./trigger.ts";
import { watchRepo } from "./watch.ts";

const INIT_USAGE = `
usage: forge gitops init DIR

Lays out an experiments repo in DIR (git init when needed): experiments/ with a working
example, tasks/ (one example task), policies/ (its policy-simulator script), deploy/, a
README and openforge.gitops.json; records where this forge CLI is (git config openforge.cli,
per clone) and installs the post-commit hook. Existing files are never overwritten, so run it
again in a fresh clone, or after moving the OpenForge checkout.
`;

const RENDER_USAGE = `
usage: forge gitops render [--repo DIR] [--check]

Renders every experiment of the repo to deploy/: per experiment its Kubernetes objects and
WorkflowTemplate (deploy/manifests/<file>.yaml) and the Argo Events Sensor that submits it when a
push changes the experiment or its tasks (<file>.sensor.yaml); the EventSource and the Argo CD
Application. Same repo content, byte-identical files.

  --repo DIR    the experiments repo (default .)
  --check       write nothing; exit 1 when deploy/ is stale (for CI)
`;

const HOOK_USAGE = `
usage: forge gitops hook [--repo DIR] [--commit SHA] [--executor local|argo] [--background] [--json]

Runs the experiments a commit added or changed, and those whose tasks or policy script it
changed, each from a clean export of that commit, every rollout labelled openforge.dev/commit.
What the post-commit hook calls.

  --repo DIR            the experiments repo (default .)
  --commit SHA          the commit (default HEAD)
  --executor E          local: forge run (rollouts, verification, veRL batch export, pass@k; no
                        training); argo: forge submit (training runs there). Default: the repo's
                        openforge.gitops.json
  --background          check the experiments now (problems printed, exit 1), then run the valid
                        ones in a detached process appending to ${HOOK_LOG}
  --json                print the outcomes as JSON
`;

const WATCH_USAGE = `
usage: forge gitops watch [--repo DIR] [--branch B] [--interval-seconds N] [--once] [--executor local|argo]

Follows a branch of a repo that is pushed to (a bare repo on a server, or a clone that pulls):
runs the experiments of each new commit, oldest first, as the hook does; remembers the last
commit handled (.forge/gitops/watch.json), so a restart neither skips nor repeats one.

  --repo DIR              the repo (default .)
  --branch B              the branch (default: the repo's openforge.gitops.json, else main)
  --interval-seconds N    poll interval (default 10)
  --once                  one pass, then exit
  --executor E            local | argo (as for hook)
`;

const USAGE = `
usage: forge gitops SUBCOMMAND [--help]

  init DIR                       lay out an experiments repo and install the post-commit hook
  render [--repo DIR] [--check]  render every experiment to deploy/ (Argo CD, Argo Events, WorkflowTemplates)
  hook [--repo DIR] [--commit SHA] [--executor local|argo] [--background]
                                 run the experiments a commit changed (what the post-commit hook calls)
  watch [--repo DIR] [--branch B] [--interval-seconds N] [--once] [--executor local|argo]
                                 run the experiments of each new commit on a branch of a repo that is pushed to

forge gitops SUBCOMMAND --help prints that subcommand's flags; docs/gitops.md is the guide.
`;

function executorFlag(value: string | undefined, repo: string): "local" | "argo" {
  const executor = value ?? readGitopsSettings(repo).executor;
  if (executor !== "local" && executor !== "argo") throw new UsageError(`forge gitops: --executor must be local or argo, got "${executor}"`);
  return executor;
}

async function init(argv: string[]): Promise<number> {
  const args = parseCommand({ name: "gitops init", usage: INIT_USAGE, options: {}, allowPositionals: true }, argv);
  if (!args) return 0;
  const [dir, ...more] = args.positionals;
  if (!dir || more.length > 0) throw new UsageError(`forge gitops init: expected one DIR\n\n${INIT_USAGE.trim()}`);
  const { created, hook } = initGitopsRepo(resolve(dir), FORGE_CLI);
  for (const path of created) console.log(`created ${path}`);
  console.log(`installed ${hook}`);
  return 0;
}

/**
 * `hook --background`: the checks in the foreground, so `git commit` prints a broken
 * experiment at once; the runs in a detached `hook --commit SHA` (the exact commit, even when
 * another commit follows before it starts).
 */
async function hookInBackground(repo: string, commit: string | undefined, executor: "local" | "argo"): Promise<number> {
  const log = (line: string) => console.error(`openforge: ${line.replace(/^gitops: /, "")}`);
  const plan = await planCommit({ repo, commit, executor, log });
  if (plan.tree) rmSync(plan.tree, { recursive: true, force: true });
  const invalid = plan.outcomes.some((outcome) => outcome.outcome === "invalid");
  if (invalid) console.error("openforge: fix the experiment(s) above and commit again; the others still run");
  if (plan.ready.length === 0) return invalid ? 1 : 0;
  const logFile = join(repo, HOOK_LOG);
  mkdirSync(dirname(logFile), { recursive: true });
  const out = openSync(logFile, "a");
  const child = spawn("bun", [FORGE_CLI, "gitops", "hook", "--repo", repo, "--commit", plan.commit, "--executor", executor], {
    cwd: repo,
    detached: true,
    stdio: ["ignore", out, out],
  });
  child.unref();
  const names = plan.ready.map((experiment) => experiment.path + (experiment.because ? ` (${experiment.because} changed)` : "")).join(", ");
  console.error(`openforge: running ${names} @ ${plan.commit.slice(0, 7)} in the background (log: ${HOOK_LOG}; data: .forge/runs/)`);
  return invalid ? 1 : 0;
}

async function hook(argv: string[]): Promise<number> {
  const args = parseCommand(
    {
      name: "gitops hook",
      usage: HOOK_USAGE,
      options: { repo: { type: "string" }, commit: { type: "string" }, executor: { type: "string" }, background: { type: "boolean" }, json: { type: "boolean" } },
    },
    argv,
  );
  if (!args) return 0;
  const repo = repoRoot(resolve(args.values.repo ?? "."));
  const executor = executorFlag(args.values.executor, repo);
  if (args.values.background) return hookInBackground(repo, args.values.commit, executor);
  const outcomes = await triggerCommit({ repo, commit: args.values.commit, executor });
  if (args.values.json) console.log(JSON.stringify(outcomes, null, 2));
  return outcomes.some((o) => o.outcome === "invalid" || (o.outcome === "ran" && o.exitCode !== 0)) ? 1 : 0;
}

async function watch(argv: string[]): Promise<number> {
  const args = parseCommand(
    {
      name: "gitops watch",
      usage: WATCH_USAGE,
      options: {
        repo: { type: "string" },
        branch: { type: "string" },
        "interval-seconds": { type: "string" },
        once: { type: "boolean" },
        executor: { type: "string" },
      },
    },
    argv,
  );
  if (!args) return 0;
  const repo = resolve(args.values.repo ?? ".");
  const settings = readGitopsSettings(repo);
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort());
  process.once("SIGTERM", () => controller.abort());
  await watchRepo({
    repo,
    branch: args.values.branch ?? settings.branch,
    intervalMs: intFlag("interval-seconds", args.values["interval-seconds"], 10) * 1000,
    once: args.values.once,
    executor: executorFlag(args.values.executor, repo),
    signal: controller.signal,
  });
  return 0;
}

async function render(argv: string[]): Promise<number> {
  const args = parseCommand({ name: "gitops render", usage: RENDER_USAGE, options: { repo: { type: "string" }, check: { type: "boolean" } } }, argv);
  if (!args) return 0;
  const { renderGitopsRepo } = await import("./render.ts");
  const repo = resolve(args.values.repo ?? ".");
  const report = renderGitopsRepo(repo, { check: args.values.check ?? false });
  for (const problem of report.invalid) console.error(`gitops render: ${problem}`);
  if (args.values.check && report.stale.length > 0) {
    console.error(`gitops render --check: deploy/ is stale; run \`forge gitops render\` and commit:\n  ${report.stale.join("\n  ")}`);
    return 1;
  }
  if (!args.values.check) for (const path of report.written) console.log(`wrote ${path}`);
  return report.invalid.length > 0 ? 1 : 0;
}

const SUBCOMMANDS: Record<string, (argv: string[]) => Promise<number>> = { init, render, hook, watch };

/**
 * `forge gitops SUBCOMMAND ...`
 *
 * @example
 * await gitopsCommand(["init", "experiments-repo"]); // 0
 */
export async function gitopsCommand(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h") {
    console.log(USAGE.trim());
    return name ? 0 : 2;
  }
  const sub = SUBCOMMANDS[name];
  if (!sub) throw new UsageError(`forge gitops: unknown subcommand "${name}"\n\n${USAGE.trim()}`);
  return sub(rest);
}
