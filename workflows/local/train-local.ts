/**
 * One training step on this machine (workflows/local/iterations.ts): the iteration's export
 * (its rollouts only, at most `maxStaleness` versions behind the step when async), the
 * experiment's `training.localCommand`, then the weight sync that makes the proxy serve the
 * step's version: the inference servers load the checkpoint through their engine's API
 * (`weightSync.strategy: update-from-disk`, with upstreams), or, with the policy simulator (no
 * weights) or `strategy: none`, the proxy is paused and resumed at the new version.
 */
import { spawn } from "node:child_process";
import { createWriteStream, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Experiment } from "../../schemas/index.ts";
import type { ControlClient } from "./control.ts";

export type LocalStepOptions = {
  experiment: Experiment;
  experimentPath: string;
  dataDir: string;
  proxyUrl: string;
  adminToken: string;
  control: ControlClient;
  iteration: number;
  /** The run (forge run's id), which the iteration's figures are scored over (figures.ts). */
  run?: string;
  log?: (line: string) => void;
};

/** Where iteration i's export and checkpoint go. */
export function localStepPaths(dataDir: string, iteration: number) {
  return {
    batch: join(dataDir, "exports", `iteration-${iteration}`, "batch.parquet"),
    checkpoint: join(dataDir, "checkpoints", `global_step_${iteration + 1}`),
    log: join(dataDir, "train", `iteration-${iteration}.log`),
  };
}

/**
 * Exports, trains and syncs iteration `iteration`; the proxy serves version iteration + 1 after.
 *
 * @example
 * await trainLocally({ experiment, experimentPath, dataDir, proxyUrl, adminToken, control, iteration: 0 });
 */
export async function trainLocally(options: LocalStepOptions): Promise<void> {
  const { experiment, iteration } = options;
  const { training, rollouts, policy } = experiment.spec;
  const paths = localStepPaths(options.dataDir, iteration);
  const [{ readRecords }, { exportTrajectories, groupDatasetPath }] = await Promise.all([import("../../records/index.ts"), import("../../trajectories/index.ts")]);
  const manifest = await exportTrajectories(readRecords(options.dataDir), {
    format: "verl",
    out: paths.batch,
    groupRows: rollouts.k,
    minGroupSize: Math.min(2, rollouts.k),
    experiment: experiment.metadata.name,
    iteration,
    // The step starts from version `iteration` (the previous steps are synced by now).
    trainVersion: iteration,
    ...(training.async ? { maxStaleness: training.maxStaleness } : {}),
  });
  options.log?.(`iteration ${iteration}: exported ${manifest.samples} samples of ${manifest.rollouts.valid} rollouts (${manifest.staleness.rollouts_dropped} past the staleness bound) to ${paths.batch}`);
  if (!training.localCommand) throw new Error(`${options.experimentPath}: spec.training.localCommand is not set: iterations after the first need a local trainer (or run on Argo)`);
  mkdirSync(dirname(paths.log), { recursive: true });
  mkdirSync(dirname(paths.checkpoint), { recursive: true });
  // Forge's figures of the iteration for the trainer's trackers (figures.ts), computed while the
  // trainer starts: it waits for the file only if it asks for the figures. Never fails the step.
  let trackers: Record<string, string> = {};
  let figuresDone: Promise<unknown> = Promise.resolve();
  if (options.run !== undefined) {
    const run = options.run;
    const { figuresPath, writeIterationFigures, trackerEnv } = await import("./figures.ts");
    trackers = trackerEnv({ dataDir: options.dataDir, run, figures: figuresPath(options.dataDir, iteration), iteration }, process.env);
    figuresDone = writeIterationFigures({ experiment, dataDir: options.dataDir, run, iteration, samples: manifest.samples }).catch((error: Error) =>
      options.log?.(`iteration ${iteration}: forge's figures for the trackers were not written: ${error.message}`),
    );
  }
  const env = {
    ...process.env,
    ...trackers,
    FORGE_BATCH: paths.batch,
    FORGE_GROUPS: groupDatasetPath(paths.batch),
    FORGE_ITERATION: String(iteration),
    FORGE_POLICY_VERSION: String(iteration + 1),
    FORGE_CHECKPOINT: paths.checkpoint,
    FORGE_DATA: options.dataDir,
  };
  const code = await new Promise<number | null>((done, fail) => {
    const out = createWriteStream(paths.log);
    const child = spawn(training.localCommand![0]!, training.localCommand!.slice(1), { cwd: dirname(resolve(options.experimentPath)), env, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    child.once("error", (error) => fail(new Error(`spec.training.localCommand ${JSON.stringify(training.localCommand)}: ${error.message}`)));
    child.once("close", (exit) => out.end(() => done(exit)));
  });
  await figuresDone;
  if (code !== 0) throw new Error(`iteration ${iteration}: spec.training.localCommand exited ${code}; its output is in ${paths.log}`);
  const version = iteration + 1;
  if (policy.upstreams.length > 0 && training.weightSync.strategy === "update-from-disk") {
    const { syncWeights } = await import("../argo/weight-sync.ts");
    await syncWeights({
      proxy: options.proxyUrl,
      strategy: "update-from-disk",
      checkpoint: paths.checkpoint,
      policyVersion: version,
      servers: training.weightSync.servers ?? policy.upstreams,
      engine: policy.engine,
      namespace: "",
      timeoutSeconds: training.weightSync.timeoutSeconds,
      control: (_proxy, path, body) => options.control.post(path, body),
      log: options.log,
    });
    return;
  }
  if (training.weightSync.strategy === "restart") throw new Error(`${options.experimentPath}: spec.training.weightSync.strategy restart rolls a Kubernetes Deployment; on this machine use update-from-disk or none`);
  // No weights to load (the simulator, or strategy none): the proxy only moves to the new version.
  await options.control.post("/control/pause", {});
  await options.control.post("/control/resume", { policy_version: version });
}
