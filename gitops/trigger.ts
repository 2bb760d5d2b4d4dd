/**
 * The local trigger: given a commit, check and run (or submit) every experiment it added or
 * changed, or whose tasks or policy script it changed, each from a clean export of exactly that
 * commit, with the commit SHA recorded on every rollout. A failing experiment blocks nothing
 * else. What runs where: the local executor does rollouts, verification, the veRL batch export
 * and pass@k; training (veRL) runs only on Argo (`executor: argo`, docs/gitops.md).
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { parseExperimentFile, parsePolicyScriptFile, PolicyScriptError } from "../schemas/index.ts";
import { commitExperimentChanges } from "./changes.ts";
import { GitError, resolveCommit } from "./git.ts";
import { LOCAL_STATE_DIR } from "./layout.ts";

/** The rollout label that ties every rollout to the commit that started it. */
export const COMMIT_LABEL = "openforge.dev/commit";

export type ExperimentOutcome =
  | { path: string; outcome: "ran"; exitCode: number; dataDir: string; logFile: string; because?: string }
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

/** The forge CLI of this checkout: what the trigger runs. */
export const FORGE_CLI = join(import.meta.dir, "..", "bin", "forge.ts");

/** An experiment of the commit that passed the checks, ready to run. */
type ReadyExperiment = { path: string; file: string; because?: string };

/** What a commit asks for: the experiments to run (in `tree`), and those invalid or removed. */
export type CommitPlan = { commit: string; tree?: string; ready: ReadyExperiment[]; outcomes: ExperimentOutcome[] };

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
 * Checks one experiment of the exported tree as `forge run` would load it: the file, its tasks
 * (folder, task.toml keys, JSONL lines) and the simulator's policy script. Throws the problem,
 * naming files relative to the repo.
 */
async function checkExperiment(tree: string, path: string): Promise<void> {
  const file = join(tree, path);
  const inRepo = (message: string) => message.split(`${tree}/`).join("");
  try {
    const experiment = parseExperimentFile(file);
    const { loadExperimentTasks } = await import("../workflows/index.ts");
    loadExperimentTasks(experiment, dirname(file), path);
    const { script } = experiment.spec.policy.simulator;
    if (script !== undefined && experiment.spec.policy.upstreams.length === 0) {
      try {
        parsePolicyScriptFile(resolve(dirname(file), script));
      } catch (error) {
        if (error instanceof PolicyScriptError) throw new Error(`${path}: spec.policy.simulator.script: ${error.message}`);
        throw error;
      }
    }
  } catch (error) {
    // Report against the repo path the user edits, not the temp export.
    throw new Error(inRepo((error as Error).message.split(file).join(path)));
  }
}

/**
 * Which experiments `commit` asks to run, each checked. The caller removes `tree`.
 *
 * @example
 * const plan = await planCommit({ repo, executor: "local" }); plan.ready.map((e) => e.path)
 */
export async function planCommit(options: TriggerOptions): Promise<CommitPlan> {
  const log = options.log ?? ((line: string) => console.error(line));
  const commit = resolveCommit(options.repo, options.commit ?? "HEAD");
  const changes = commitExperimentChanges(options.repo, commit);
  const plan: CommitPlan = { commit, ready: [], outcomes: [] };
  if (changes.length === 0) {
    log(`gitops: commit ${commit.slice(0, 7)} changes no experiment (nor the tasks or policy script of one)`);
    return plan;
  }
  if (changes.some((change) => change.kind === "run")) plan.tree = exportCommit(options.repo, commit);
  for (const change of changes) {
    if (change.kind === "deleted") {
      log(`gitops: ${change.path} was deleted at ${commit.slice(0, 7)}: no longer scheduled`);
      plan.outcomes.push({ path: change.path, outcome: "unscheduled" });
      continue;
    }
    try {
      await checkExperiment(plan.tree!, change.path);
    } catch (error) {
      const message = (error as Error).message;
      log(`gitops: ${message}`);
      plan.outcomes.push({ path: change.path, outcome: "invalid", error: message });
      continue;
    }
    plan.ready.push({ path: change.path, file: join(plan.tree!, change.path), because: change.because });
  }
  return plan;
}

/**
 * Runs the experiments `commit` changed. Returns one outcome per changed experiment.
 *
 * @example
 * await triggerCommit({ repo, executor: "local" }) // [{ path: "experiments/a.yaml", outcome: "ran", exitCode: 0, ... }]
 */
export async function triggerCommit(options: TriggerOptions): Promise<ExperimentOutcome[]> {
  const log = options.log ?? ((line: string) => console.error(line));
  const plan = await planCommit(options);
  const { commit } = plan;
  const outcomes = [...plan.outcomes];
  try {
    if (plan.ready.length === 0) return outcomes;
    const runsDir = options.runsDir ?? join(options.repo, LOCAL_STATE_DIR, "runs");
    mkdirSync(runsDir, { recursive: true });
    for (const { path, file, because } of plan.ready) {
      const name = basename(path).replace(/\.ya?ml$/, "");
      const dataDir = join(runsDir, `${name}-${commit.slice(0, 12)}`);
      mkdirSync(dataDir, { recursive: true });
      const logFile = join(dataDir, "gitops-run.log");
      const argv =
        options.executor === "local"
          ? ["run", file, "--data", dataDir, "--label", `${COMMIT_LABEL}=${commit}`]
          : ["submit", file, "--commit", commit];
      log(`gitops: ${path} @ ${commit.slice(0, 7)}${because ? ` (${because} changed)` : ""} → forge ${argv[0]} (log: ${logFile})`);
      const child = Bun.spawn(["bun", FORGE_CLI, ...argv, ...(options.extraArgs ?? [])], {
        cwd: plan.tree,
        stdout: Bun.file(logFile),
        stderr: Bun.file(`${logFile}.err`),
        // `bun run forge` sets the upstream request limit in its script line; a direct `bun` does not.
        env: { ...process.env, FORGE_GITOPS_COMMIT: commit, BUN_CONFIG_MAX_HTTP_REQUESTS: process.env.BUN_CONFIG_MAX_HTTP_REQUESTS ?? "4096" },
      });
      const exitCode = await child.exited;
      log(`gitops: ${path}: forge ${argv[0]} exited ${exitCode}`);
      outcomes.push({ path, outcome: "ran", exitCode, dataDir, logFile, ...(because ? { because } : {}) });
    }
    return outcomes;
  } finally {
    if (plan.tree) rmSync(plan.tree, { recursive: true, force: true });
  }
}
