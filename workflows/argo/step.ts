#!/usr/bin/env bun
/**
 * Entry point of the workflow's pods: `bun workflows/argo/step.ts STEP [flags]`, with STEP one
 * of plan | register | harness | verify | finish (the rollout pod: rollout-steps.ts) | site (a
 * browser task's site sidecar: site-step.ts) | report | analyze (analyze.ts) |
 * admit | sync | verl-config | exit (pod.ts). Not a `forge` subcommand because only the rendered
 * pods call it. Exit codes: 0 done, 1 failed, 2 bad usage, 75 infrastructure error (the rollout
 * template retries it as a new try).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { parseExperimentFile } from "../../schemas/index.ts";
import { listTaskIds, planRollouts, rolloutIdentity, type PlannedRollout } from "./plan.ts";
import { planOutputs, readPlanItem, readPlanManifest, readRolloutResults, writeFileAtomic, writePlan, writeRolloutResult } from "./plan-files.ts";
import { admitStep, exitStep, InfraError, reportStep, syncStep, verlConfigStep } from "./pod.ts";
import { finishStep, harnessStep, POD_PATHS, registerStep, verifyStep } from "./rollout-steps.ts";
import { INFRA_EXIT_CODE, overrideValue } from "./workflow.ts";
import { pruneCheckpoints } from "./checkpoints.ts";
import { startSiteSidecar } from "./site-step.ts";
import { analyzeStep } from "./analyze.ts";
import { reportRolloutProgress } from "./progress.ts";

const USAGE = `usage: bun workflows/argo/step.ts plan|register|harness|verify|finish|site|report|analyze|admit|sync|verl-config|prune-checkpoints|exit [flags]`;

const options = {
  experiment: { type: "string" },
  run: { type: "string" },
  iteration: { type: "string" },
  proxy: { type: "string" },
  workspace: { type: "string", default: POD_PATHS.workspace },
  state: { type: "string", default: POD_PATHS.state },
  "harness-out": { type: "string", default: POD_PATHS.harnessOut },
  verdict: { type: "string", default: POD_PATHS.verdict },
  scratch: { type: "string", default: POD_PATHS.scratch },
  control: { type: "string", default: POD_PATHS.control },
  task: { type: "string" },
  attempt: { type: "string", default: "0" },
  retry: { type: "string", default: "0" },
  "timeout-seconds": { type: "string" },
  sandbox: { type: "string" },
  results: { type: "string" },
  "pass-threshold": { type: "string" },
  workflow: { type: "string" },
  namespace: { type: "string" },
  out: { type: "string" },
  strategy: { type: "string" },
  checkpoint: { type: "string" },
  "policy-version": { type: "string" },
  server: { type: "string", multiple: true },
  deployment: { type: "string" },
  "deployment-namespace": { type: "string" },
  container: { type: "string" },
  engine: { type: "string" },
  "checkpoint-claim": { type: "string" },
  "checkpoint-mount": { type: "string" },
  status: { type: "string" },
  duration: { type: "string" },
  batch: { type: "string" },
  "experiment-name": { type: "string" },
  "train-batch-size": { type: "string" },
  "plan-dir": { type: "string" },
  index: { type: "string" },
  item: { type: "string" },
  "results-dir": { type: "string" },
  outputs: { type: "string" },
  dir: { type: "string" },
  keep: { type: "string" },
  "site-log": { type: "string" },
  "site-url": { type: "string" },
  "playwright-mcp-cli": { type: "string" },
  port: { type: "string" },
  "ready-file": { type: "string" },
  data: { type: "string" },
  k: { type: "string" },
  "missing-trials": { type: "string" },
  figures: { type: "string" },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>["values"];

function need(values: Values, name: keyof Values): string {
  const value = values[name];
  if (typeof value !== "string" || value === "") throw new UsageErrorLocal(`--${name} is required`);
  return value;
}

class UsageErrorLocal extends Error {}

/**
 * This pod's rollout: `--task` / `--attempt` when given, else the item the register container
 * resolved (`--item`, a file on a volume only the forge containers write), else rollout `--index`
 * of the plan in `--plan-dir` (register only: it writes the item for the others). A plan that
 * cannot be read is an infrastructure error (the volume may be back on a retry).
 */
function planItem(values: Values): PlannedRollout {
  if (values.task !== undefined) return { task_id: need(values, "task"), attempt: values.attempt ?? "0" };
  if (values.item && existsSync(values.item)) return JSON.parse(readFileSync(values.item, "utf8")) as PlannedRollout;
  if (values["plan-dir"] !== undefined) {
    const index = Number(need(values, "index"));
    try {
      const item = readPlanItem(values["plan-dir"], index);
      if (values.item) writeFileAtomic(values.item, JSON.stringify(item));
      return item;
    } catch (error) {
      throw new InfraError(`rollout ${index} of the plan: ${(error as Error).message}`);
    }
  }
  if (values.item) throw new InfraError(`${values.item}: the register container left no plan item (it was killed or could not read the plan)`);
  throw new UsageErrorLocal("--task (or --item, or --plan-dir with --index) is required");
}

function ids(values: Values) {
  const item = planItem(values);
  const taskId = item.task_id;
  const iteration = Number(need(values, "iteration"));
  const attempt = Number(item.attempt ?? 0);
  const retry = Number(values.retry ?? 0);
  if (!Number.isInteger(retry) || retry < 0) throw new UsageErrorLocal(`--retry must be an integer ≥ 0 (Argo's {{retries}}), got "${values.retry}"`);
  return { taskId, iteration, attempt, retry, ...rolloutIdentity({ run: need(values, "run"), iteration, taskId, attempt, retry }) };
}

/** The result onto the data volume; a volume that fails the write is an infrastructure error (a retry reports it again). */
function writeResultOrRetry(dir: string, index: number, result: unknown): void {
  try {
    writeRolloutResult(dir, index, result);
  } catch (error) {
    throw new InfraError(`cannot write the result of rollout ${index} to ${dir}: ${(error as Error).message}`);
  }
}

/** The steps by name; each returns the exit code. */
const STEPS: { [step: string]: (values: Values) => Promise<number> } = {
  plan: planStep,
  register: registerPodStep,
  finish: finishPodStep,
  harness: harnessPodStep,
  verify: verifyPodStep,
  site: sitePodStep,
  admit: admitPodStep,
  report: reportPodStep,
  analyze: analyzePodStep,
  sync: syncPodStep,
  "verl-config": verlConfigPodStep,
  "prune-checkpoints": pruneCheckpointsStep,
  exit: exitPodStep,
};

/** Runs one step; returns the exit code. */
export async function runStep(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  const step = positionals[0];
  const run = step !== undefined && Object.hasOwn(STEPS, step) ? STEPS[step] : undefined;
  if (!run) {
    console.error(`unknown step "${step ?? ""}"\n${USAGE}`);
    return 2;
  }
  try {
    return await run(values);
  } catch (error) {
    if (error instanceof UsageErrorLocal) {
      console.error(`step ${step}: ${error.message}\n${USAGE}`);
      return 2;
    }
    console.error(`step ${step}: ${(error as Error).message}`);
    return error instanceof InfraError ? INFRA_EXIT_CODE : 1;
  }
}

async function planStep(values: Values): Promise<number> {
  // The plan goes to the data volume (plan-files.ts); only its counts become parameters.
  const file = need(values, "experiment");
  const experiment = parseExperimentFile(file);
  const plan = planRollouts({ taskIds: listTaskIds(experiment, dirname(file)), k: experiment.spec.rollouts.k });
  const { maxPerWorkflow, parallelism } = experiment.spec.rollouts;
  const manifest = writePlan(need(values, "plan-dir"), plan, { iteration: Number(need(values, "iteration")), maxPerWorkflow, parallelism });
  const outputs = need(values, "outputs");
  mkdirSync(outputs, { recursive: true });
  for (const [name, value] of Object.entries(planOutputs(manifest))) writeFileSync(join(outputs, name), value);
  // The results directory exists before any rollout pod mounts or writes it.
  if (values["results-dir"] !== undefined) mkdirSync(values["results-dir"], { recursive: true });
  console.log(JSON.stringify(manifest));
  return 0;
}

async function registerPodStep(values: Values): Promise<number> {
  const file = need(values, "experiment");
  let rollout;
  try {
    rollout = ids(values);
  } catch (error) {
    // register never fails the pod: main reads the outcome and exits 75 for a retry.
    if (!(error instanceof InfraError)) throw error;
    writeFileSync(join(values.control!, "register.json"), JSON.stringify({ error: error.message, infra: true }));
    console.error(`register: ${error.message}`);
    return 0;
  }
  await registerStep({
    experiment: parseExperimentFile(file),
    experimentDir: dirname(file),
    proxy: need(values, "proxy"),
    controlDir: values.control!,
    ...rollout,
    workspace: values.workspace!,
    state: values.state!,
    ...(values["site-url"] ? { siteUrl: values["site-url"] } : {}),
    ...(values["playwright-mcp-cli"] ? { playwrightMcpCli: values["playwright-mcp-cli"] } : {}),
  });
  return 0;
}

async function finishPodStep(values: Values): Promise<number> {
  const file = need(values, "experiment");
  const common = { experiment: parseExperimentFile(file), experimentDir: dirname(file), proxy: need(values, "proxy"), controlDir: values.control!, ...ids(values) };
  const results = values["results-dir"] !== undefined ? { dir: values["results-dir"], index: Number(need(values, "index")) } : undefined;
  await finishStep({ ...common, harnessOut: values["harness-out"]!, verdict: values.verdict!, ...(results ? { onResult: (result: unknown) => writeResultOrRetry(results.dir, results.index, result) } : {}) });
  return 0;
}

async function harnessPodStep(values: Values): Promise<number> {
  await harnessStep({ state: values.state!, workspace: values.workspace!, harnessOut: values["harness-out"]!, timeoutSeconds: Number(need(values, "timeout-seconds")) });
  return 0;
}

async function verifyPodStep(values: Values): Promise<number> {
  const file = need(values, "experiment");
  let taskId: string;
  try {
    taskId = planItem(values).task_id;
  } catch (error) {
    if (!(error instanceof InfraError)) throw error;
    // Nothing to verify: finish sees no verdict and reports the infrastructure error.
    writeFileSync(join(values.verdict!, "verifier.json"), JSON.stringify({ exit_code: null, signal: null, timed_out: false, duration_ms: 0, output: "", error: error.message }));
    return 0;
  }
  await verifyStep({
    experiment: parseExperimentFile(file),
    experimentDir: dirname(file),
    workspace: values.workspace!,
    harnessOut: values["harness-out"]!,
    verdict: values.verdict!,
    scratch: values.scratch!,
    taskId,
    ...(values["site-log"] ? { siteLog: values["site-log"] } : {}),
  });
  return 0;
}

async function sitePodStep(values: Values): Promise<number> {
  // The site sidecar: serves until the kubelet's SIGTERM (after the pod's containers exited), then exits 0.
  const file = need(values, "experiment");
  const port = Number(need(values, "port"));
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UsageErrorLocal(`--port must be a port 1–65535, got "${values.port}"`);
  const stopped = new Promise<string>((resolve) => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => resolve(signal));
  });
  const site = await startSiteSidecar({
    experiment: parseExperimentFile(file),
    experimentDir: dirname(file),
    taskId: () => planItem(values).task_id,
    stateDir: need(values, "site-log"),
    port,
    readyFile: need(values, "ready-file"),
  });
  console.log(site.note);
  const signal = await stopped;
  await site.close();
  console.log(`site: stopped (${signal})`);
  return 0;
}

async function admitPodStep(values: Values): Promise<number> {
  const file = need(values, "experiment");
  const experiment = parseExperimentFile(file);
  const override = overrideValue(experiment.spec.training.overrides, "data.train_batch_size");
  await admitStep({
    batch: need(values, "batch"),
    groups: listTaskIds(experiment, dirname(file)).length,
    k: experiment.spec.rollouts.k,
    gpus: experiment.spec.training.gpus,
    minGroupFraction: experiment.spec.training.minGroupFraction,
    ...(override !== undefined ? { trainBatchSize: Number(override) } : {}),
    iteration: Number(need(values, "iteration")),
    out: need(values, "out"),
    workflow: need(values, "workflow"),
    namespace: need(values, "namespace"),
  });
  return 0;
}

async function reportPodStep(values: Values): Promise<number> {
  // The results of the iteration's rollouts, from the data volume (one file per rollout;
  // a missing one is a lost rollout), or a JSON list in a file.
  const results =
    values["results-dir"] !== undefined
      ? JSON.stringify(readRolloutResults(values["results-dir"], readPlanManifest(need(values, "plan-dir")).count))
      : readFileSync(need(values, "results"), "utf8");
  await reportStep({ results, iteration: Number(need(values, "iteration")), workflow: need(values, "workflow"), namespace: need(values, "namespace"), out: need(values, "out") });
  return 0;
}

async function analyzePodStep(values: Values): Promise<number> {
  const ks = need(values, "k").split(",").map(Number);
  if (ks.some((k) => !Number.isInteger(k) || k < 1)) throw new UsageErrorLocal(`--k must be positive integers separated by commas, got "${values.k}"`);
  const missingTrials = need(values, "missing-trials");
  if (missingTrials !== "exclude" && missingTrials !== "fail") throw new UsageErrorLocal(`--missing-trials must be exclude or fail, got "${missingTrials}"`);
  await analyzeStep({
    data: need(values, "data"),
    run: need(values, "run"),
    iteration: Number(need(values, "iteration")),
    out: need(values, "out"),
    ks,
    threshold: Number(need(values, "pass-threshold")),
    missingTrials,
    ...(values.figures !== undefined ? { figures: values.figures } : {}),
  });
  return 0;
}

async function syncPodStep(values: Values): Promise<number> {
  await syncStep({
    proxy: need(values, "proxy"),
    strategy: need(values, "strategy"),
    checkpoint: need(values, "checkpoint"),
    policyVersion: Number(need(values, "policy-version")),
    servers: values.server ?? [],
    engine: values.engine,
    deployment: values.deployment,
    deploymentNamespace: values["deployment-namespace"],
    container: values.container,
    checkpointClaim: values["checkpoint-claim"],
    checkpointMount: values["checkpoint-mount"],
    namespace: need(values, "namespace"),
    ...(values["timeout-seconds"] !== undefined ? { timeoutSeconds: Number(values["timeout-seconds"]) } : {}),
  });
  return 0;
}

async function verlConfigPodStep(values: Values): Promise<number> {
  await verlConfigStep({
    source: join(import.meta.dir, "..", "..", "integrations", "verl"),
    out: need(values, "out"),
    batch: need(values, "batch"),
    experimentName: need(values, "experiment-name"),
    ...(values["train-batch-size"] !== undefined ? { trainBatchSize: Number(values["train-batch-size"]) } : {}),
  });
  return 0;
}

async function pruneCheckpointsStep(values: Values): Promise<number> {
  const deleted = pruneCheckpoints(need(values, "dir"), Number(need(values, "keep")));
  console.log(`pruned ${deleted.length} checkpoint(s)${deleted.length ? `: ${deleted.map((s) => `global_step_${s}`).join(", ")}` : ""}`);
  return 0;
}

async function exitPodStep(values: Values): Promise<number> {
  await exitStep({ workflow: need(values, "workflow"), namespace: need(values, "namespace"), status: need(values, "status"), duration: values.duration ?? "0" });
  return 0;
}

if (import.meta.main) {
  const argv = process.argv.slice(2);
  process.exitCode = await runStep(argv);
  // A rollout pod's stage done: its progress in the Argo UI (progress.ts).
  if (process.exitCode === 0) reportRolloutProgress(argv[0]);
}
