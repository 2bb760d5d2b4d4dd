/**
 * The plan and the results of an iteration as files on the data volume, instead of Argo
 * parameters: Argo keeps only the last 256 KiB of a step's stdout (the plan of 10,000 rollouts
 * is ~370 KB) and an aggregated output parameter of 10,000 results (~1.1 MB) no longer fits the
 * ConfigMap its template is offloaded to (docs/argo.md, "Scale"). The plan step writes
 *
 *   /data/plans/RUN/iteration-I/plan.json            the manifest: count, chunks, shards
 *   /data/plans/RUN/iteration-I/items-000000.json    rollouts 0–999, a JSON list of {task_id, attempt}
 *   …
 *
 * and a rollout pod reads the one chunk holding its index. Each rollout's `main` container
 * writes /data/results/RUN/iteration-I/INDEX.json, which the report step reads. Every file is
 * written to a temporary name and renamed, so a reader never sees half of one.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DATA_DIR } from "./names.ts";
import type { PlannedRollout } from "./plan.ts";

/** Rollouts per plan chunk: a pod reads ~40 KB, not the whole plan. */
export const PLAN_CHUNK = 1000;

export type PlanManifest = {
  iteration: number;
  /** Rollouts in the iteration. */
  count: number;
  /** Rollouts per chunk file. */
  chunk: number;
  chunks: number;
  /** `rollouts.maxPerWorkflow`: rollouts per child Workflow when the iteration is split. */
  max_per_workflow: number;
  /** Child Workflows the rollouts run in; 1 when they run in the iteration's own Workflow. */
  shards: number;
  /** `parallelism` of each child Workflow, so all of them together stay within `rollouts.parallelism`. */
  shard_parallelism: number;
};

/**
 * The iteration's plan directory on the data volume (the run is the top Workflow's name).
 *
 * @example
 * planDir("{{inputs.parameters.run}}", "{{inputs.parameters.iteration}}") // "/data/plans/{{inputs.parameters.run}}/iteration-{{inputs.parameters.iteration}}"
 */
export function planDir(run: string, iteration: number | string, dataDir = DATA_DIR): string {
  return `${dataDir}/plans/${run}/iteration-${iteration}`;
}

/**
 * The iteration's results directory on the data volume: one `INDEX.json` per rollout.
 *
 * @example
 * resultsDir("quick-1a2b3c4d", 0) // "/data/results/quick-1a2b3c4d/iteration-0"
 */
export function resultsDir(run: string, iteration: number | string, dataDir = DATA_DIR): string {
  return `${dataDir}/results/${run}/iteration-${iteration}`;
}

const chunkFile = (dir: string, chunk: number) => join(dir, `items-${String(chunk).padStart(6, "0")}.json`);

/** Writes `content` to `path` through a temporary file and a rename. */
export function writeFileAtomic(path: string, content: string): void {
  const temp = `${path}.tmp-${process.pid}`;
  writeFileSync(temp, content);
  renameSync(temp, path);
}

/**
 * How an iteration of `count` rollouts is split: into ceil(count / maxPerWorkflow) child
 * Workflows when it has more than `maxPerWorkflow`, each child allowed ceil(parallelism /
 * shards) pods at once (so the children together run about `parallelism`).
 *
 * @example
 * splitPlan(10_000, { maxPerWorkflow: 1000, parallelism: 400 }) // { shards: 10, shard_parallelism: 40 }
 */
export function splitPlan(count: number, options: { maxPerWorkflow: number; parallelism: number }): { shards: number; shard_parallelism: number } {
  const shards = count > options.maxPerWorkflow ? Math.ceil(count / options.maxPerWorkflow) : 1;
  return { shards, shard_parallelism: Math.max(1, Math.ceil(options.parallelism / shards)) };
}

/**
 * The index range [start, end] (inclusive, as Argo's `withSequence`) of child Workflow `shard`.
 *
 * @example
 * shardRange({ count: 2500, max_per_workflow: 1000 }, 2) // { start: 2000, end: 2499 }
 */
export function shardRange(manifest: Pick<PlanManifest, "count" | "max_per_workflow">, shard: number): { start: number; end: number } {
  const start = shard * manifest.max_per_workflow;
  return { start, end: Math.min(manifest.count, start + manifest.max_per_workflow) - 1 };
}

/**
 * Writes the plan (chunks first, the manifest last: a manifest on disk means its chunks are
 * there) and returns the manifest. Re-running it (a retried plan step) writes the same files.
 *
 * @example
 * writePlan("/data/plans/quick-1/iteration-0", plan, { iteration: 0, maxPerWorkflow: 1000, parallelism: 64 }).count
 */
export function writePlan(dir: string, plan: PlannedRollout[], options: { iteration: number; maxPerWorkflow: number; parallelism: number }): PlanManifest {
  mkdirSync(dir, { recursive: true });
  const chunks = Math.ceil(plan.length / PLAN_CHUNK);
  for (let chunk = 0; chunk < chunks; chunk++) writeFileAtomic(chunkFile(dir, chunk), JSON.stringify(plan.slice(chunk * PLAN_CHUNK, (chunk + 1) * PLAN_CHUNK)));
  const manifest: PlanManifest = {
    iteration: options.iteration,
    count: plan.length,
    chunk: PLAN_CHUNK,
    chunks,
    max_per_workflow: options.maxPerWorkflow,
    ...splitPlan(plan.length, options),
  };
  writeFileAtomic(join(dir, "plan.json"), `${JSON.stringify(manifest)}\n`);
  return manifest;
}

/**
 * The plan step's output parameters (fanout.ts): the count, the count to fan out in this
 * Workflow (0 when split), the child Workflows' index ranges (`[]` when not split) and
 * parallelism. Sizes: digits, and one ~40-byte item per child Workflow.
 *
 * @example
 * planOutputs(manifest).shards // '[{"shard":"0","start":"0","end":"999"},…]'
 */
export function planOutputs(manifest: PlanManifest): Record<"count" | "rollout-count" | "shards" | "shard-parallelism", string> {
  const split = manifest.shards > 1;
  const shards = split ? Array.from({ length: manifest.shards }, (_, shard) => ({ shard: String(shard), ...mapValues(shardRange(manifest, shard), String) })) : [];
  return {
    count: String(manifest.count),
    "rollout-count": String(split ? 0 : manifest.count),
    shards: JSON.stringify(shards),
    "shard-parallelism": String(manifest.shard_parallelism),
  };
}

const mapValues = <T extends Record<string, number>>(o: T, f: (n: number) => string) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)])) as { [K in keyof T]: string };

/** The plan's manifest; throws naming the file when it is missing or not a manifest. */
export function readPlanManifest(dir: string): PlanManifest {
  const path = join(dir, "plan.json");
  let manifest: PlanManifest;
  try {
    manifest = JSON.parse(readFileSync(path, "utf8")) as PlanManifest;
  } catch (error) {
    throw new Error(`${path}: cannot read the iteration's plan (${(error as Error).message}); the plan step writes it before any rollout starts`);
  }
  if (!Number.isInteger(manifest.count) || !Number.isInteger(manifest.chunk) || manifest.chunk < 1) throw new Error(`${path}: not a plan manifest (count and chunk must be integers)`);
  return manifest;
}

/**
 * Rollout `index` of the plan in `dir`: reads only the chunk that holds it.
 *
 * @example
 * readPlanItem("/data/plans/quick-1/iteration-0", 4321) // { task_id: "fix-typo", attempt: "1" }
 */
export function readPlanItem(dir: string, index: number): PlannedRollout {
  const manifest = readPlanManifest(dir);
  if (!Number.isInteger(index) || index < 0 || index >= manifest.count) throw new Error(`${dir}: rollout index ${index} is outside the plan (0–${manifest.count - 1})`);
  const path = chunkFile(dir, Math.floor(index / manifest.chunk));
  const items = JSON.parse(readFileSync(path, "utf8")) as PlannedRollout[];
  const item = items[index % manifest.chunk];
  if (!item || typeof item.task_id !== "string") throw new Error(`${path}: no rollout ${index} in this chunk`);
  return item;
}

/**
 * Writes rollout `index`'s result into the iteration's results directory.
 *
 * @example
 * writeRolloutResult("/data/results/quick-1/iteration-0", 17, { rollout_id: "…", reward: 1, status: "ok", passed: true })
 */
export function writeRolloutResult(dir: string, index: number, result: unknown): void {
  mkdirSync(dir, { recursive: true });
  writeFileAtomic(join(dir, `${index}.json`), JSON.stringify(result));
}

/**
 * The results of rollouts 0 … count-1, in index order; a rollout that left none (its pod was
 * lost for good) is an infra_error result saying so.
 *
 * @example
 * readRolloutResults("/data/results/quick-1/iteration-0", 2) // [{…}, { status: "infra_error", lost: true, … }]
 */
export function readRolloutResults(dir: string, count: number): { reward?: number; status?: string; passed?: boolean; lost?: boolean }[] {
  const present = new Set(existsSync(dir) ? readdirSync(dir) : []);
  const results = [];
  for (let index = 0; index < count; index++) {
    const name = `${index}.json`;
    if (!present.has(name)) {
      results.push({ reward: 0, status: "infra_error", passed: false, lost: true });
      continue;
    }
    try {
      results.push(JSON.parse(readFileSync(join(dir, name), "utf8")));
    } catch (error) {
      results.push({ reward: 0, status: "infra_error", passed: false, lost: true, error: `${name}: ${(error as Error).message}` });
    }
  }
  return results;
}
