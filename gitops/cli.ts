/**
 * `forge gitops init | render | hook | watch`.
 */
import { resolve } from "node:path";
import { intFlag, parseCommand, UsageError } from "../lib/index.ts";
import { repoRoot } from "./git.ts";
import { initGitopsRepo } from "./init.ts";
import { readGitopsSettings } from "./settings.ts";
import { FORGE_CLI, triggerCommit } from "./trigger.ts";
import { watchRepo } from "./watch.ts";


const USAGE = `
usage: forge gitops SUBCOMMAND [--help]

  init DIR                       lay out an experiments repo (experiments/, tasks/, deploy/) and install the post-commit hook
  render [--repo DIR] [--check]  render every experiment to deploy/ (Argo CD Application, Argo Events Sensors, WorkflowTemplates);
                                 --check fails when deploy/ is stale
  hook [--repo DIR] [--commit SHA] [--executor local|argo]
                                 run the experiments a commit added or changed (what the post-commit hook calls)
  watch [--repo DIR] [--branch B] [--interval-seconds N] [--once] [--executor local|argo]
                                 run the experiments of each new commit on a branch of a repo that is pushed to
`;

function executorFlag(value: string | undefined, repo: string): "local" | "argo" {
  const executor = value ?? readGitopsSettings(repo).executor;
  if (executor !== "local" && executor !== "argo") throw new UsageError(`--executor must be local or argo, got "${executor}"`);
  return executor;
}

async function init(argv: string[]): Promise<number> {
  const args = parseCommand({ name: "gitops init", usage: USAGE, options: {}, allowPositionals: true }, argv);
  if (!args) return 0;
  const [dir] = args.positionals;
  if (!dir) throw new UsageError(`forge gitops init: missing DIR\n${USAGE}`);
  const { created, hook } = initGitopsRepo(resolve(dir), FORGE_CLI);
  for (const path of created) console.log(`created ${path}`);
  console.log(`installed ${hook}`);
  return 0;
}

async function hook(argv: string[]): Promise<number> {
  const args = parseCommand(
    { name: "gitops hook", usage: USAGE, options: { repo: { type: "string" }, commit: { type: "string" }, executor: { type: "string" }, json: { type: "boolean" } } },
    argv,
  );
  if (!args) return 0;
  const repo = repoRoot(resolve(args.values.repo ?? "."));
  const outcomes = await triggerCommit({ repo, commit: args.values.commit, executor: executorFlag(args.values.executor, repo) });
  if (args.values.json) console.log(JSON.stringify(outcomes, null, 2));
  return outcomes.some((o) => o.outcome === "invalid" || (o.outcome === "ran" && o.exitCode !== 0)) ? 1 : 0;
}

async function watch(argv: string[]): Promise<number> {
  const args = parseCommand(
    {
      name: "gitops watch",
      usage: USAGE,
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
  const args = parseCommand({ name: "gitops render", usage: USAGE, options: { repo: { type: "string" }, check: { type: "boolean" } } }, argv);
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

/** `forge gitops SUBCOMMAND ...` */
export async function gitopsCommand(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h") {
    console.log(USAGE.trim());
    return name ? 0 : 2;
  }
  const sub = SUBCOMMANDS[name];
  if (!sub) throw new UsageError(`forge gitops: unknown subcommand "${name}"\n${USAGE}`);
  return sub(rest);
}
