#!/usr/bin/env bun
/**
 * Entry point of the workflow's pods: `bun workflows/argo/step.ts STEP [flags]`, with STEP one
 * of plan | register | harness | verify | finish (the rollout pod: rollout-steps.ts) | report |
 * admit | sync | verl-config | exit (pod.ts). Not a `forge` subcommand because only the rendered
 * pods call it. Exit codes: 0 done, 1 failed, 2 bad usage, 75 infrastructure error (the rollout
 * template retries it as a new try).
 */
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { parseExperimentFile } from "../../schemas/index.ts";
import { listTaskIds, planRollouts, rolloutIdentity } from "./plan.ts";
import { admitStep, exitStep, InfraError, reportStep, syncStep, verlConfigStep } from "./pod.ts";
import { finishStep, harnessStep, POD_PATHS, registerStep, verifyStep } from "./rollout-steps.ts";
import { INFRA_EXIT_CODE, overrideValue } from "./workflow.ts";

const USAGE = `usage: bun workflows/argo/step.ts plan|register|harness|verify|finish|report|admit|sync|verl-config|exit [flags]`;

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
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>["values"];

function need(values: Values, name: keyof Values): string {
  const value = values[name];
  if (typeof value !== "string" || value === "") throw new UsageErrorLocal(`--${name} is required`);
  return value;
}

class UsageErrorLocal extends Error {}

function ids(values: Values) {
  const taskId = need(values, "task");
  const iteration = Number(need(values, "iteration"));
  const attempt = Number(values.attempt ?? 0);
  const retry = Number(values.retry ?? 0);
  if (!Number.isInteger(retry) || retry < 0) throw new UsageErrorLocal(`--retry must be an integer ≥ 0 (Argo's {{retries}}), got "${values.retry}"`);
  return { taskId, iteration, attempt, retry, ...rolloutIdentity({ run: need(values, "run"), iteration, taskId, attempt, retry }) };
}

/** Runs one step; returns the exit code. */
export async function runStep(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  const step = positionals[0];
  try {
    switch (step) {
      case "plan": {
        const file = need(values, "experiment");
        const experiment = parseExperimentFile(file);
        const plan = planRollouts({ taskIds: listTaskIds(experiment, dirname(file)), k: experiment.spec.rollouts.k });
        process.stdout.write(JSON.stringify(plan));
        return 0;
      }
      case "register":
      case "finish": {
        const file = need(values, "experiment");
        const common = { experiment: parseExperimentFile(file), experimentDir: dirname(file), proxy: need(values, "proxy"), controlDir: values.control!, ...ids(values) };
        if (step === "register") await registerStep({ ...common, workspace: values.workspace!, state: values.state! });
        else await finishStep({ ...common, harnessOut: values["harness-out"]!, verdict: values.verdict! });
        return 0;
      }
      case "harness":
        await harnessStep({ state: values.state!, workspace: values.workspace!, harnessOut: values["harness-out"]!, timeoutSeconds: Number(need(values, "timeout-seconds")) });
        return 0;
      case "verify": {
        const file = need(values, "experiment");
        await verifyStep({ experiment: parseExperimentFile(file), experimentDir: dirname(file), workspace: values.workspace!, harnessOut: values["harness-out"]!, verdict: values.verdict!, scratch: values.scratch!, taskId: need(values, "task") });
        return 0;
      }
      case "admit": {
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
      case "report":
        await reportStep({ results: need(values, "results"), iteration: Number(need(values, "iteration")), workflow: need(values, "workflow"), namespace: need(values, "namespace"), out: need(values, "out") });
        return 0;
      case "sync":
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
      case "verl-config":
        verlConfigStep({
          source: join(import.meta.dir, "..", "..", "integrations", "verl"),
          out: need(values, "out"),
          batch: need(values, "batch"),
          experimentName: need(values, "experiment-name"),
          ...(values["train-batch-size"] !== undefined ? { trainBatchSize: Number(values["train-batch-size"]) } : {}),
        });
        return 0;
      case "exit":
        await exitStep({ workflow: need(values, "workflow"), namespace: need(values, "namespace"), status: need(values, "status"), duration: values.duration ?? "0" });
        return 0;
      default:
        console.error(`unknown step "${step ?? ""}"\n${USAGE}`);
        return 2;
    }
  } catch (error) {
    if (error instanceof UsageErrorLocal) {
      console.error(`step ${step}: ${error.message}\n${USAGE}`);
      return 2;
    }
    console.error(`step ${step}: ${(error as Error).message}`);
    return error instanceof InfraError ? INFRA_EXIT_CODE : 1;
  }
}

if (import.meta.main) process.exitCode = await runStep(process.argv.slice(2));
