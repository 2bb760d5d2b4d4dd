/**
 * Forge's figures of one iteration for the trainer's trackers (docs/metrics.md, "Training
 * curves"): while `training.localCommand` starts, the iteration's pass@k / pass^k, mean reward,
 * infrastructure errors, rollouts and samples per rollout are written to
 * `DIR/train/iteration-i.figures.json` (`$FORGE_FIGURES`; a trainer that wants them waits for the
 * file, one that does not is not held up by the analysis), tagged as TensorBoard scalars
 * (`forge/pass@1`, …) at the step veRL logs that iteration's training step at (i + 1: it resumes
 * from global_step_i). `python -m forge_verl.figures` (integrations/verl) writes them with
 * veRL's own TensorBoard writer into `$TENSORBOARD_DIR`, one directory for the whole run, so
 * reward and pass@k sit beside loss and KL as one run across iterations.
 */
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Experiment } from "../../schemas/index.ts";

export type IterationFigures = { iteration: number; global_step: number; run: string; figures: Record<string, number | null> };

const finite = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);

/**
 * Scores `run`'s iteration `iteration` in `dataDir` with the experiment's metric settings and
 * writes the figures file; returns it and its path.
 *
 * @example
 * await writeIterationFigures({ experiment, dataDir, run: "quickstart-abc", iteration: 0, samples: 24 })
 * // { path: ".../train/iteration-0.figures.json", figures: { global_step: 1, figures: { "forge/pass@1": 0.75, … } } }
 */
export async function writeIterationFigures(options: { experiment: Experiment; dataDir: string; run: string; iteration: number; samples?: number }): Promise<{ path: string; figures: IterationFigures }> {
  const { analyze, openAnalytics } = await import("../../analytics/index.ts");
  const { metrics } = options.experiment.spec;
  const session = await openAnalytics(options.dataDir);
  let analysis;
  try {
    analysis = await analyze(session.connection, {
      scope: { run: options.run, iteration: options.iteration },
      ks: metrics.k,
      threshold: metrics.passThreshold,
      missingTrials: metrics.missingTrials,
    });
  } finally {
    session.close();
  }
  const pass = analysis.pass.length === 1 ? analysis.pass[0]! : undefined;
  const rollouts = Number(pass?.rollouts ?? 0);
  const figures: Record<string, number | null> = {};
  for (const k of metrics.k) {
    figures[`forge/pass@${k}`] = finite(pass?.[`pass@${k}`]);
    figures[`forge/pass^${k}`] = finite(pass?.[`pass^${k}`]);
  }
  figures["forge/mean_reward"] = finite(pass?.mean_reward);
  figures["forge/infra_errors"] = finite(pass?.infra_errors ?? 0);
  figures["forge/rollouts"] = rollouts;
  figures["forge/samples_per_rollout"] = options.samples !== undefined && rollouts > 0 ? options.samples / rollouts : null;
  const out: IterationFigures = { iteration: options.iteration, global_step: options.iteration + 1, run: options.run, figures };
  const path = figuresPath(options.dataDir, options.iteration);
  mkdirSync(join(options.dataDir, "train"), { recursive: true });
  // Whole or absent: the trainer may be polling for it (forge_verl.figures).
  writeFileSync(`${path}.tmp`, `${JSON.stringify(out, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
  return { path, figures: out };
}

/** Where iteration `iteration`'s figures go. */
export function figuresPath(dataDir: string, iteration: number): string {
  return join(dataDir, "train", `iteration-${iteration}.figures.json`);
}

/**
 * The trackers' environment for a local training step: the figures, one TensorBoard directory
 * and one W&B run id for the whole run (what the user's environment already sets wins).
 *
 * @example
 * trackerEnv({ dataDir: "/d", run: "q-1", figures: "/d/train/iteration-0.figures.json", iteration: 0 }, {})
 * // { FORGE_FIGURES: "/d/train/iteration-0.figures.json", FORGE_GLOBAL_STEP: "1", TENSORBOARD_DIR: "/d/tensorboard", WANDB_RUN_ID: "q-1", WANDB_RESUME: "allow" }
 */
export function trackerEnv(options: { dataDir: string; run: string; figures: string; iteration: number }, env: Record<string, string | undefined>): Record<string, string> {
  return {
    FORGE_FIGURES: options.figures,
    FORGE_GLOBAL_STEP: String(options.iteration + 1),
    TENSORBOARD_DIR: env.TENSORBOARD_DIR ?? join(options.dataDir, "tensorboard"),
    WANDB_RUN_ID: env.WANDB_RUN_ID ?? options.run,
    WANDB_RESUME: env.WANDB_RESUME ?? "allow",
  };
}
