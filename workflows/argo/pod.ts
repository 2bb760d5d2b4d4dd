/**
 * The steps that run inside the workflow's pods (`bun workflows/argo/step.ts STEP …`) besides
 * the rollout's own (rollout-steps.ts): report, admit, veRL config, weight sync, exit. They talk
 * to the proxy's control API over HTTP (docs/contracts.md) and to the Kubernetes API with the
 * pod's service account. Exit code 75 (EX_TEMPFAIL) marks an infrastructure error.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { ANNOTATION_DESCRIPTION, ANNOTATION_PASS_RATE } from "./names.ts";
import { INFRA_EXIT_CODE } from "./workflow.ts";
import { syncWeights, type SyncStepOptions } from "./weight-sync.ts";

/** An error the step cannot fix by itself and a retry of the pod may: exits 75. */
export class InfraError extends Error {
  override name = "InfraError";
}

function adminToken(): string {
  const token = process.env.FORGE_ADMIN_TOKEN;
  if (!token) throw new Error("FORGE_ADMIN_TOKEN is not set (the experiment's admin Secret; forge submit creates it)");
  return token;
}

/** The control API refused a request (4xx); `code` and `param` are from its error body. */
export class ControlRefusal extends Error {
  override name = "ControlRefusal";
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | null,
    readonly param: string | null,
  ) {
    super(message);
  }
}

/**
 * A call to the proxy's control API (POST with a body, GET without); network errors and 5xx are
 * infrastructure errors, 4xx a ControlRefusal.
 */
export async function control(proxy: string, path: string, body: unknown, method: "POST" | "GET" = "POST"): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(`${proxy}${path}`, {
      method,
      headers: { ...(method === "POST" ? { "content-type": "application/json" } : {}), authorization: `Bearer ${adminToken()}` },
      ...(method === "POST" ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(60_000),
    });
  } catch (error) {
    throw new InfraError(`proxy ${proxy}${path} unreachable: ${(error as Error).message}`);
  }
  const text = await response.text();
  if (response.status >= 500) throw new InfraError(`proxy ${path}: HTTP ${response.status}: ${text}`);
  if (!response.ok) {
    let detail: { code?: string | null; param?: string | null } = {};
    try {
      detail = (JSON.parse(text) as { error?: typeof detail }).error ?? {};
    } catch {}
    throw new ControlRefusal(`proxy ${path}: HTTP ${response.status}: ${text}`, response.status, detail.code ?? null, detail.param ?? null);
  }
  return text ? JSON.parse(text) : {};
}

export type IterationReport = { iteration: number; rollouts: number; scored: number; passed: number; infraErrors: number; passRate: number; meanReward: number };

/**
 * Aggregates the rollouts' results. Argo hands the fanned-out output parameters over as a JSON
 * list whose items may be JSON strings or objects. Infra errors are left out of the pass rate.
 *
 * @example
 * summarizeResults('[{"reward":1,"status":"ok","passed":true}]', 0).passRate // 1
 */
export function summarizeResults(raw: string, iteration: number): IterationReport {
  const list = JSON.parse(raw || "[]") as unknown[];
  const results = list.map((item) => (typeof item === "string" ? JSON.parse(item) : item) as { reward?: number; status?: string; passed?: boolean });
  const scored = results.filter((r) => r.status !== "infra_error");
  const passed = scored.filter((r) => r.passed).length;
  const meanReward = scored.length ? scored.reduce((sum, r) => sum + (r.reward ?? 0), 0) / scored.length : 0;
  return {
    iteration,
    rollouts: results.length,
    scored: scored.length,
    passed,
    infraErrors: results.length - scored.length,
    passRate: scored.length ? passed / scored.length : 0,
    meanReward,
  };
}

/**
 * In-cluster config for the steps that annotate the workflow; null outside a cluster.
 * client-node is loaded only here: most steps never need it, and it is slow to import.
 */
async function inClusterConfig(): Promise<KubeConfig | null> {
  const { KubeConfig } = await import("@kubernetes/client-node");
  try {
    const kc = new KubeConfig();
    kc.loadFromDefault();
    return kc.getCurrentCluster() ? kc : null;
  } catch {
    return null;
  }
}

/** The report step: pass rate of the iteration (`results`: the JSON list of results), onto the workflow's annotations (for the Argo UI). */
export async function reportStep(options: { results: string; iteration: number; workflow: string; namespace: string; out: string }) {
  const report = summarizeResults(options.results, options.iteration);
  const rate = report.passRate.toFixed(3);
  writeFileSync(options.out, rate);
  console.log(JSON.stringify(report));
  const kc = await inClusterConfig();
  if (!kc) return;
  try {
    const { annotateWorkflow } = await import("./kube.ts");
    await annotateWorkflow(kc, options.namespace, options.workflow, {
      [ANNOTATION_PASS_RATE]: rate,
      [`${ANNOTATION_PASS_RATE}.iteration-${options.iteration}`]: rate,
      [ANNOTATION_DESCRIPTION]: `iteration ${options.iteration}: pass rate ${rate} (${report.passed}/${report.scored} passed, ${report.infraErrors} infra errors), mean reward ${report.meanReward.toFixed(3)}`,
    });
  } catch (error) {
    // The numbers are in the step's output parameter either way; the annotation is for the UI.
    console.error(`could not annotate workflow ${options.workflow}: ${(error as Error).message}`);
  }
}

/**
 * The weight-sync step (workflows/argo/weight-sync.ts): the proxy paused, the checkpoint loaded
 * into every inference server through its engine's API (or the Deployment restarted onto it),
 * the proxy resumed at the new version only when every server confirmed.
 */
export async function syncStep(options: Omit<SyncStepOptions, "control" | "kubeConfig">) {
  await syncWeights({ ...options, control, kubeConfig: inClusterConfig });
}

/**
 * The veRL step's init container: copies the ForgeAgentLoop package (integrations/verl) to
 * `out` (on the trainer's PYTHONPATH) and writes the agent-loop config that replays this
 * iteration's exported batch (`actor_rollout_ref.rollout.agent.agent_loop_config_path`).
 * With `trainBatchSize`, first checks the export's manifest: the group dataset veRL trains on
 * must hold at least that many rows, or veRL (drop_last) stops with "Train dataloader is empty!"
 * after minutes of start-up; this says which groups went missing instead.
 */
export async function verlConfigStep(options: { source: string; out: string; batch: string; experimentName: string; trainBatchSize?: number }) {
  if (options.trainBatchSize !== undefined) checkGroupDataset(options.batch, options.trainBatchSize);
  mkdirSync(options.out, { recursive: true });
  cpSync(options.source, options.out, { recursive: true });
  // Exactly one batch of rows (VERL_DATASET): veRL's steps_per_epoch is then 1 and the
  // dataloader state it saves ends an epoch, so the next iteration reads its whole dataset.
  const { firstGroupRows, groupDatasetPath } = await import("../../trajectories/index.ts");
  const rows = await firstGroupRows(groupDatasetPath(options.batch), options.trainBatchSize, join(options.out, "dataset.parquet"));
  console.log(`veRL dataset: ${rows} group rows`);
  const config = [{ name: "forge_agent", _target_: "forge_verl.agent_loop.ForgeAgentLoop", mode: "replay", batch_path: options.batch, experiment: options.experimentName }];
  writeFileSync(join(options.out, "agent_loop.yaml"), stringify(config));
  console.log(`veRL agent loop: replay ${options.batch}`);
}

/** The manifest `forge export` writes beside a batch (trajectories/ manifestPath). */
const exportManifestPath = (batch: string) => `${batch.replace(/\.(parquet|jsonl)$/, "")}.manifest.json`;

/** Throws unless the batch's group dataset (`--group-rows`) has at least `rows` rows. */
function checkGroupDataset(batch: string, rows: number) {
  const path = exportManifestPath(batch);
  if (!existsSync(path)) throw new Error(`${path}: no export manifest (did the export step of this iteration run?)`);
  const manifest = JSON.parse(readFileSync(path, "utf8")) as {
    group_dataset?: { path: string; rows: number; samples_per_row: number; short_groups: number } | null;
    groups?: { seen: number; kept: number };
  };
  const groups = manifest.group_dataset;
  if (!groups) throw new Error(`${path}: the export wrote no group dataset (run forge export with --group-rows k; veRL trains on it)`);
  if (groups.rows < rows) {
    throw new Error(
      `${groups.path}: ${groups.rows} group rows, fewer than data.train_batch_size=${rows} (veRL would stop with "Train dataloader is empty!"): ` +
        `${groups.short_groups} groups had fewer than ${groups.samples_per_row} samples and ${(manifest.groups?.seen ?? 0) - (manifest.groups?.kept ?? 0)} were dropped below --min-group-size ` +
        `(infrastructure errors are left out, not scored 0; see the manifest). Lower it with training.overrides: data.train_batch_size=${Math.max(groups.rows, 1)}.`,
    );
  }
}

export type AdmitReport = {
  iteration: number;
  /** Groups the iteration was to produce (one per task). */
  groups: number;
  /** Groups with all k samples (the group dataset's rows). */
  complete: number;
  /** Groups with some samples but fewer than k (their rollouts were lost or infra errors). */
  short: number;
  /** Groups with no usable sample at all. */
  lost: number;
  /** Groups the training step uses (`data.train_batch_size`). */
  train_batch_size: number;
  /** Complete groups left out so the batch divides over the GPUs (veRL's check). */
  left_out_for_gpus: number;
};

/**
 * Decides whether an iteration trains on what survived, and on how many groups: groups short of
 * k samples (lost rollouts, infrastructure errors) were dropped by the export; training goes on
 * when at least `minGroupFraction` of the iteration's groups are complete (`min` groups), with
 * `data.train_batch_size` = the complete groups (rounded down so batch × k divides by the GPUs),
 * or the experiment's own `data.train_batch_size` override, which then must be met.
 *
 * @example
 * admitGroups({ iteration: 0, groups: 10, complete: 9, short: 1, k: 4, gpus: 2, minGroupFraction: 0.5 }).train_batch_size // 9
 */
export function admitGroups(options: { iteration: number; groups: number; complete: number; short: number; k: number; gpus: number; minGroupFraction: number; trainBatchSize?: number }): AdmitReport {
  const { groups, complete, short, k, gpus } = options;
  const needed = Math.max(1, Math.ceil(options.minGroupFraction * groups), options.trainBatchSize ?? 0);
  const lost = Math.max(0, groups - complete - short);
  const counts = `${complete} of ${groups} groups complete (${short} short of k=${k}, ${lost} with no sample; their rollouts were lost or infrastructure errors)`;
  if (complete < needed) {
    const why = options.trainBatchSize !== undefined && options.trainBatchSize > Math.ceil(options.minGroupFraction * groups) ? `training.overrides sets data.train_batch_size=${options.trainBatchSize}` : `training.minGroupFraction is ${options.minGroupFraction}`;
    throw new Error(`iteration ${options.iteration}: ${counts}; at least ${needed} are needed (${why}). Look at the rollouts' infra errors, or lower the threshold.`);
  }
  let batch = options.trainBatchSize ?? complete;
  // veRL splits batch × k samples over the GPUs: keep the largest batch for which that divides.
  if (options.trainBatchSize === undefined) while (batch > 0 && (batch * k) % gpus !== 0) batch--;
  if (batch < 1 || batch < needed) throw new Error(`iteration ${options.iteration}: ${counts}; no batch of at least ${needed} groups × k=${k} samples divides over ${gpus} GPUs`);
  return { iteration: options.iteration, groups, complete, short, lost, train_batch_size: batch, left_out_for_gpus: complete - batch };
}

/**
 * The admit step (between export and train): reads the export manifest, applies admitGroups,
 * writes the batch size for the train step's `train-batch-size` parameter, and notes the
 * counts on the workflow. Exits 1 when too few groups survived.
 */
export async function admitStep(options: { batch: string; groups: number; k: number; gpus: number; minGroupFraction: number; trainBatchSize?: number; iteration: number; out: string; workflow: string; namespace: string }) {
  const path = exportManifestPath(options.batch);
  if (!existsSync(path)) throw new Error(`${path}: no export manifest (did the export step of this iteration run?)`);
  const manifest = JSON.parse(readFileSync(path, "utf8")) as { group_dataset?: { rows: number; short_groups: number } | null; groups?: { seen: number; kept: number } };
  if (!manifest.group_dataset) throw new Error(`${path}: the export wrote no group dataset (run forge export with --group-rows k; veRL trains on it)`);
  // Short: dropped below --min-group-size by the export, or kept but with fewer than k samples.
  const dropped = (manifest.groups?.seen ?? 0) - (manifest.groups?.kept ?? 0);
  const report = admitGroups({ ...options, complete: manifest.group_dataset.rows, short: dropped + manifest.group_dataset.short_groups });
  writeFileSync(options.out, String(report.train_batch_size));
  console.log(JSON.stringify(report));
  const kc = await inClusterConfig();
  if (!kc) return;
  try {
    const { annotateWorkflow } = await import("./kube.ts");
    await annotateWorkflow(kc, options.namespace, options.workflow, {
      [`openforge.dev/groups.iteration-${options.iteration}`]: `${report.train_batch_size} trained, ${report.complete}/${report.groups} complete, ${report.short} short, ${report.lost} lost`,
    });
  } catch (error) {
    console.error(`could not annotate workflow ${options.workflow}: ${(error as Error).message}`);
  }
}

/** The exit handler: the final state onto the workflow's description. */
export async function exitStep(options: { workflow: string; namespace: string; status: string; duration: string }) {
  const kc = await inClusterConfig();
  const line = `${options.status} after ${Math.round(Number(options.duration) || 0)} s`;
  console.log(`workflow ${options.workflow}: ${line}`);
  if (!kc) return;
  try {
    const { annotateWorkflow } = await import("./kube.ts");
    await annotateWorkflow(kc, options.namespace, options.workflow, { "openforge.dev/final-status": line });
  } catch (error) {
    console.error(`could not annotate workflow ${options.workflow}: ${(error as Error).message}`);
  }
}

export { INFRA_EXIT_CODE };
