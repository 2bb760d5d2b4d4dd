/**
 * `forge export`: records → assembled samples → veRL / SFT parquet or JSONL, streaming.
 *
 * Memory bound: the records of open rollouts (prompts as deltas, as on disk), one assembled
 * rollout at a time, and a counter per group. Samples go to a temporary JSONL file; groups left
 * with fewer than `minGroupSize` valid rollouts are only known at the end, so a second pass over
 * that file drops them and numbers the rows, and DuckDB streams the result into parquet.
 */
import { createReadStream, createWriteStream, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { once } from "node:events";
import { DuckDBInstance } from "@duckdb/node-api";
import { sqlString } from "../lib/index.ts";
import { VALIDATION_LABEL, type ModelCall, type Record } from "../schemas/index.ts";
import { callImageRefs } from "./images.ts";
import { assembleTrajectory } from "./assemble.ts";
import { columnsSql, groupColumns, sftColumns, verlColumns } from "./columns.ts";
import { requestMessages, responseMessage, type ChatMessage } from "./messages.ts";
import { collectRollouts, type CollectStats, type CollectedRollout } from "./resolve.ts";
import { samplingInfo } from "./sampling.ts";
import { withThinkDefaults, type AssembleOptions, type BrokenCall, type RolloutTrajectory, type TrajectorySample } from "./types.ts";

export type ExportFormat = "verl" | "sft" | "jsonl";

export type ExportOptions = AssembleOptions & {
  format: ExportFormat;
  /** Output file: .parquet for verl/sft (a .jsonl sidecar with the same rows is written beside it), .jsonl for jsonl. */
  out: string;
  /** Groups with fewer valid rollouts are dropped and reported (default 2: GRPO needs two to compare). */
  minGroupSize?: number;
  /** veRL's `data_source` column (default: the rollout's experiment, else "forge"). */
  dataSource?: string;
  /** SFT keeps rollouts with status ok and reward ≥ this (default 1). */
  sftMinReward?: number;
  /**
   * Also write a GRPO dataset of one row per group naming `groupRows` of its samples
   * (`groupDatasetPath(out)`), for veRL runs with `rollout.n = groupRows`: veRL gives each
   * dataset row a fresh uid and repeats it n times, so groups survive only as rows. Groups with
   * fewer samples are left out of it and reported; extra samples are left out and counted.
   */
  groupRows?: number;
  /**
   * At most this many rows in the group dataset (veRL's `data.train_batch_size`: one iteration
   * trains on exactly one batch); further groups are left out and counted.
   */
  maxGroupRows?: number;
  /**
   * veRL's `rollout.prompt_length` / `rollout.response_length`: a sample longer than either is
   * left out (cutting would train on a context or an ending the policy never produced), and a
   * rollout whose final sample (the one holding the reward) is too long is left out whole
   * (excluded `overlong`). Counted in the manifest's `length_filter`.
   */
  maxPromptLength?: number;
  maxResponseLength?: number;
  /**
   * Auxiliary samples (titles, compaction summaries, classifiers: docs/trajectories.md): `drop`
   * (default) leaves them out of the rows and counts them in the manifest's `auxiliary`; `keep`
   * writes them as rows of their own, labelled `extra_info.auxiliary`, with reward 0.
   */
  auxiliary?: "drop" | "keep";
  /**
   * Asynchronous training (docs/scale.md, "Async iterations"): the policy version the step
   * trains from, and how many versions behind it a sample may have been served. A rollout with
   * a call older than `trainVersion - maxStaleness` is left out whole (excluded `stale`) and
   * counted in the manifest's `staleness`; every row carries its calls' versions
   * (`extra_info.policy_versions`) and `response_logprobs`, what veRL's rollout correction reads.
   */
  trainVersion?: number;
  maxStaleness?: number;
  /** Only rollouts registered under this experiment (Rollout.experiment). */
  experiment?: string;
  /** Only rollouts of this iteration (Rollout.iteration). */
  iteration?: number;
  /** Called about once a second with the progress so far. */
  onProgress?: (p: { records: number; rollouts: number; samples: number }) => void;
};

export type ExportManifest = {
  format: ExportFormat;
  out: string;
  sidecar_jsonl: string | null;
  options: { min_group_size: number; reward_policy: string; gamma: number; timeouts: string; sft_min_reward: number | null };
  records: number;
  /** `validation_rollouts`: rollouts labelled as a trainer's validation (VALIDATION_LABEL), never trained on. */
  filter: { experiment: string | null; iteration: number | null; skipped_rollouts: number; validation_rollouts: number };
  rollouts: { seen: number; valid: number; excluded: { [reason: string]: number }; late_calls: number; max_open: number };
  groups: { seen: number; kept: number; dropped: { group: string; valid_rollouts: number }[] };
  samples: number;
  rows: number;
  tokens: { prompt: number; response: number; sampled: number };
  calls: { total: number; clean: number; realign: number; fork: number; broken: number; auxiliary: number };
  /** Auxiliary samples of the valid rollouts: by kind, and how many `drop` left out of the rows. */
  auxiliary: { policy: "drop" | "keep"; samples: number; dropped: number; kinds: { [kind: string]: number } };
  drift_tokens: number;
  rollouts_with_drift: number;
  rollouts_with_forks: number;
  broken_calls: (BrokenCall & { rollout_id: string })[];
  group_dataset: {
    path: string;
    rows: number;
    samples_per_row: number;
    short_groups: number;
    samples_left_out: number;
    /** Groups past `maxGroupRows` (left out of the dataset). */
    groups_over_limit?: number;
  } | null;
  /** Samples / rollouts left out for their length (`maxPromptLength`, `maxResponseLength`). */
  length_filter: { max_prompt_length: number | null; max_response_length: number | null; samples_dropped: number; rollouts_dropped: number };
  /** Versions behind `train_version` of the rollouts read (`histogram[d]`: rollouts whose oldest call is d behind), and those left out past the bound. */
  staleness: { train_version: number | null; max_staleness: number | null; histogram: { [versionsBehind: string]: number }; rollouts_dropped: number };
  /** Image occurrences the rows refer to, Blob files written beside the batch (`<batch>.blobs/`), and remote images (not stored, not replayable). */
  images: { refs: number; blobs_written: number; blobs_missing: number; remote_urls: number; dir: string | null };
  message_errors: number;
  seconds: number;
  peak_rss_bytes: number;
};

type Row = { uid: string; extra_info: { index: number } } & { [key: string]: unknown };

function sampleRow(s: TrajectorySample, t: RolloutTrajectory, dataSource: string, prompt: ChatMessage[], calls: Map<string, ModelCall>, imageRefs: string[]): Row {
  return {
    uid: s.group,
    data_source: dataSource,
    agent_name: "forge_agent",
    prompt: prompt.map((m) => ({ role: m.role, content: m.content })),
    prompt_ids: s.prompt_ids,
    response_ids: s.response_ids,
    response_mask: s.response_mask,
    response_logprobs: s.response_logprobs,
    reward: s.reward,
    num_turns: s.num_turns,
    rollout_id: s.rollout_id,
    task_id: s.task_id,
    group_id: s.group,
    policy_version: s.policy_version,
    sample_id: s.sample_id,
    image_refs: imageRefs,
    extra_info: extraInfo(s, t, calls),
  };
}

function extraInfo(s: TrajectorySample, t: RolloutTrajectory, calls: Map<string, ModelCall>) {
  return {
    index: -1,
    sample_id: s.sample_id,
    rollout_id: s.rollout_id,
    task_id: s.task_id,
    group: s.group,
    experiment: s.experiment,
    iteration: s.iteration,
    policy_version: s.policy_version,
    policy_versions: s.policy_versions,
    sample_index: s.sample_index,
    is_final: s.is_final,
    auxiliary: s.auxiliary,
    call_ids: s.call_ids,
    blob_refs: s.blob_refs,
    realigns: s.realigns,
    drift_tokens: s.drift_tokens,
    status: t.status,
    rollout_reward: t.reward,
    // What the sample was sampled with (docs/engines.md): veRL recomputes logprobs at its own temperature.
    ...samplingInfo(s.call_ids.flatMap((id) => calls.get(id) ?? [])),
  };
}

/** The manifest path beside an output file: `batch.parquet` → `batch.manifest.json`. */
export function manifestPath(out: string): string {
  return `${out.replace(/\.(parquet|jsonl)$/, "")}.manifest.json`;
}

/** Where an export writes the images its rows refer to: `<batch>.blobs/<sha256>` (what veRL's loop loads). */
export function blobDirPath(out: string): string {
  return `${out.replace(/\.(parquet|jsonl)$/, "")}.blobs`;
}

/** The JSONL file holding the same rows as a parquet export, for stdlib-only readers. */
export function sidecarPath(out: string): string {
  return `${out.replace(/\.parquet$/, "")}.jsonl`;
}

async function writeLine(stream: ReturnType<typeof createWriteStream>, line: string): Promise<void> {
  if (!stream.write(line)) await once(stream, "drain");
}

async function closeStream(stream: ReturnType<typeof createWriteStream>): Promise<void> {
  await new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
}

/**
 * Exports the rollouts in a record stream. Returns the manifest (also written beside `out`).
 * Without reasoning ids, Qwen3's are assumed (QWEN3_THINK).
 *
 * @example
 * const manifest = await exportTrajectories(readRecords("data"), { format: "verl", out: "data/exports/batch.parquet" });
 * manifest.samples; // rows written
 */
export async function exportTrajectories(
  records: AsyncIterable<Record | { record: Record }>,
  options: ExportOptions,
): Promise<ExportManifest> {
  const started = performance.now();
  options = withThinkDefaults(options);
  const minGroupSize = options.minGroupSize ?? 2;
  const sftMinReward = options.sftMinReward ?? 1;
  const format = options.format;
  if (format !== "jsonl" && !options.out.endsWith(".parquet")) throw new Error(`--out ${options.out}: a ${format} export is parquet; name it *.parquet`);
  if (format === "jsonl" && !options.out.endsWith(".jsonl")) throw new Error(`--out ${options.out}: a jsonl export is named *.jsonl`);
  mkdirSync(dirname(options.out), { recursive: true });
  const tmp = `${options.out}.samples.tmp`;
  const manifest: ExportManifest = {
    format,
    out: options.out,
    sidecar_jsonl: format === "jsonl" ? null : sidecarPath(options.out),
    options: {
      min_group_size: minGroupSize,
      reward_policy: options.rewardPolicy ?? "final",
      gamma: options.gamma ?? 0.9,
      timeouts: options.timeouts ?? "score",
      sft_min_reward: format === "sft" ? sftMinReward : null,
    },
    filter: { experiment: options.experiment ?? null, iteration: options.iteration ?? null, skipped_rollouts: 0, validation_rollouts: 0 },
    records: 0,
    rollouts: { seen: 0, valid: 0, excluded: {}, late_calls: 0, max_open: 0 },
    groups: { seen: 0, kept: 0, dropped: [] },
    samples: 0,
    rows: 0,
    tokens: { prompt: 0, response: 0, sampled: 0 },
    calls: { total: 0, clean: 0, realign: 0, fork: 0, broken: 0, auxiliary: 0 },
    auxiliary: { policy: options.auxiliary ?? "drop", samples: 0, dropped: 0, kinds: {} },
    drift_tokens: 0,
    rollouts_with_drift: 0,
    rollouts_with_forks: 0,
    broken_calls: [],
    group_dataset: null,
    length_filter: { max_prompt_length: options.maxPromptLength ?? null, max_response_length: options.maxResponseLength ?? null, samples_dropped: 0, rollouts_dropped: 0 },
    staleness: { train_version: options.trainVersion ?? null, max_staleness: options.maxStaleness ?? null, histogram: {}, rollouts_dropped: 0 },
    images: { refs: 0, blobs_written: 0, blobs_missing: 0, remote_urls: 0, dir: null },
    message_errors: 0,
    seconds: 0,
    peak_rss_bytes: 0,
  };
  const validPerGroup = new Map<string, number>();
  const collect: CollectStats = { records: 0, maxOpenRollouts: 0, lateCalls: 0, blobs: 0 };
  const pass1 = createWriteStream(tmp);
  let lastProgress = performance.now();
  const rss = () => (manifest.peak_rss_bytes = Math.max(manifest.peak_rss_bytes, process.memoryUsage.rss()));

  const messagesOr = (f: () => ChatMessage[]): ChatMessage[] | undefined => {
    try {
      return f();
    } catch {
      manifest.message_errors++;
      return undefined;
    }
  };

  // The images of the samples, by sha256, gathered in a scratch folder as their rollouts are
  // read; at the end the ones the kept rows refer to move beside the batch.
  const blobScratch = `${options.out}.blobs.tmp`;
  rmSync(blobScratch, { recursive: true, force: true });
  const referenced = new Set<string>();
  const writeImage = (sha: string, data: Uint8Array) => {
    const file = join(blobScratch, sha);
    if (existsSync(file)) return;
    mkdirSync(blobScratch, { recursive: true });
    writeFileSync(file, data);
  };
  try {
    for await (const collected of collectRollouts(records, collect)) {
      const r = collected.rollout;
      if ((options.experiment !== undefined && r?.experiment !== options.experiment) || (options.iteration !== undefined && r?.iteration !== options.iteration)) {
        manifest.filter.skipped_rollouts++;
        continue;
      }
      if (r?.labels[VALIDATION_LABEL] === "true") {
        // A trainer's validation pass (its own sampling, the trained weights): measured, not trained on.
        manifest.filter.validation_rollouts++;
        continue;
      }
      const t = assembleTrajectory(collected.calls, collected.rollout, collected.result, options, collected.content);
      manifest.rollouts.seen++;
      manifest.calls.total += t.stats.calls;
      manifest.calls.clean += t.stats.clean;
      manifest.calls.realign += t.stats.realign;
      manifest.calls.fork += t.stats.fork;
      manifest.calls.broken += t.stats.broken;
      manifest.calls.auxiliary += t.stats.auxiliary;
      manifest.drift_tokens += t.stats.drift_tokens;
      if (t.stats.drift_tokens > 0) manifest.rollouts_with_drift++;
      if (t.stats.fork > 0) manifest.rollouts_with_forks++;
      for (const b of t.broken) if (manifest.broken_calls.length < 100) manifest.broken_calls.push({ ...b, rollout_id: t.rollout_id });
      if (!validPerGroup.has(t.group)) validPerGroup.set(t.group, 0);
      if (t.valid && format !== "sft") fitLengths(t, options, manifest.length_filter);
      if (t.valid && options.trainVersion !== undefined) checkStaleness(t, options.trainVersion, options.maxStaleness, manifest.staleness);
      if (!t.valid) {
        const reason = t.excluded ?? "invalid";
        manifest.rollouts.excluded[reason] = (manifest.rollouts.excluded[reason] ?? 0) + 1;
        continue;
      }
      manifest.rollouts.valid++;
      validPerGroup.set(t.group, validPerGroup.get(t.group)! + 1);
      const dataSource = options.dataSource ?? (collected.rollout?.experiment || "forge");
      for (const s of t.samples) {
        if (!s.auxiliary) continue;
        manifest.auxiliary.samples++;
        manifest.auxiliary.kinds[s.auxiliary] = (manifest.auxiliary.kinds[s.auxiliary] ?? 0) + 1;
      }
      if (manifest.auxiliary.policy === "drop") {
        const agent = t.samples.filter((s) => !s.auxiliary);
        manifest.auxiliary.dropped += t.samples.length - agent.length;
        t.samples = agent;
      }
      for (const row of rowsOf(t, collected, format, dataSource, sftMinReward, messagesOr, manifest.images, writeImage)) {
        await writeLine(pass1, `${JSON.stringify(row)}\n`);
        manifest.samples++;
      }
      if (performance.now() - lastProgress > 1000) {
        lastProgress = performance.now();
        rss();
        options.onProgress?.({ records: collect.records, rollouts: manifest.rollouts.seen, samples: manifest.samples });
      }
    }
  } finally {
    await closeStream(pass1);
  }
  manifest.records = collect.records;
  manifest.rollouts.late_calls = collect.lateCalls;
  manifest.rollouts.max_open = collect.maxOpenRollouts;
  manifest.groups.seen = validPerGroup.size;
  const dropped = new Set<string>();
  for (const [group, valid] of validPerGroup) {
    if (valid < minGroupSize) {
      dropped.add(group);
      if (manifest.groups.dropped.length < 1000) manifest.groups.dropped.push({ group, valid_rollouts: valid });
    }
  }
  manifest.groups.kept = validPerGroup.size - dropped.size;

  // Pass 2: drop the small groups, number the rows (extra_info.index: what replay looks rows up by).
  const jsonlOut = format === "jsonl" ? options.out : sidecarPath(options.out);
  const final = createWriteStream(jsonlOut);
  // For the group dataset: per kept group its rollouts (in row order) and its first prompt.
  const groupSamples = new Map<string, GroupRollouts>();
  try {
    const lines = createInterface({ input: createReadStream(tmp), crlfDelay: Infinity });
    for await (const line of lines) {
      if (!line) continue;
      const row = JSON.parse(line) as Row;
      if (dropped.has(row.uid)) continue;
      row.extra_info.index = manifest.rows++;
      for (const ref of (row.image_refs as string[] | undefined) ?? []) referenced.add(ref);
      if (format !== "sft") {
        const r = row as unknown as { prompt_ids: number[]; response_ids: number[]; response_mask: number[] };
        manifest.tokens.prompt += r.prompt_ids.length;
        manifest.tokens.response += r.response_ids.length;
        for (const m of r.response_mask) manifest.tokens.sampled += m;
      }
      await writeLine(final, `${JSON.stringify(row)}\n`);
      if (options.groupRows && format === "verl") {
        let g = groupSamples.get(row.uid);
        if (!g) {
          g = { rollouts: new Map(), first: { uid: row.uid, data_source: row.data_source, agent_name: row.agent_name, prompt: row.prompt, task_id: row.task_id, extra_info: { index: -1 } } };
          groupSamples.set(row.uid, g);
        }
        const id = row.rollout_id as string;
        const r = g.rollouts.get(id) ?? { final: "", samples: 0 };
        r.samples++;
        if ((row.extra_info as { is_final?: boolean }).is_final) r.final = row.sample_id as string;
        g.rollouts.set(id, r);
      }
    }
  } finally {
    await closeStream(final);
    rmSync(tmp, { force: true });
  }
  rss();

  if (format !== "jsonl") await jsonlToParquet(jsonlOut, options.out, format === "sft" ? sftColumns : verlColumns);
  if (options.groupRows && format === "verl") manifest.group_dataset = await writeGroupDataset(options.out, groupSamples, options.groupRows, options.maxGroupRows);
  if (format !== "sft") moveReferencedBlobs(blobScratch, blobDirPath(options.out), referenced, manifest.images);
  rmSync(blobScratch, { recursive: true, force: true });
  rss();
  manifest.seconds = Math.round((performance.now() - started) / 10) / 100;
  writeFileSync(manifestPath(options.out), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/** SFT keeps whole conversations: the final call's request plus its answer, per sample. */
function* rowsOf(
  t: RolloutTrajectory,
  collected: CollectedRollout,
  format: ExportFormat,
  dataSource: string,
  sftMinReward: number,
  messagesOr: (f: () => ChatMessage[]) => ChatMessage[] | undefined,
  images: ExportManifest["images"],
  writeImage: (sha: string, data: Uint8Array) => void,
): Generator<Row> {
  const byId = new Map(collected.calls.map((c) => [c.call.callId, c.call]));
  if (format === "sft") {
    if (t.status !== "ok" || t.reward < sftMinReward) return;
    for (const s of t.samples) {
      const last = byId.get(s.call_ids.at(-1)!)!;
      const messages = messagesOr(() => [...requestMessages(last, collected.content), responseMessage(last)]);
      if (!messages) continue;
      yield {
        messages,
        uid: s.group,
        data_source: dataSource,
        rollout_id: s.rollout_id,
        task_id: s.task_id,
        group_id: s.group,
        policy_version: s.policy_version,
        sample_id: s.sample_id,
        reward: s.reward,
        extra_info: extraInfo(s, t, byId),
      };
    }
    return;
  }
  for (const s of t.samples) {
    const first = byId.get(s.call_ids[0]!)!;
    // The sample's tokens end with its last call: that request holds every image they show.
    const { refs, urls, bytes } = callImageRefs(byId.get(s.call_ids.at(-1)!)!, collected.content);
    images.refs += refs.length;
    images.remote_urls += urls;
    for (const [sha, data] of bytes) writeImage(sha, data);
    yield sampleRow(s, t, dataSource, messagesOr(() => requestMessages(first, collected.content)) ?? [], byId, refs);
  }
}

/** Where `groupRows` puts the GRPO dataset: a folder beside the batch (outside `exports/*.parquet`, which analytics reads as samples). */
export function groupDatasetPath(out: string): string {
  return join(`${out.replace(/\.parquet$/, "")}.groups`, "dataset.parquet");
}

/** A group's rollouts (in row order: their final sample and sample count) and its first row's prompt. */
type GroupRollouts = { rollouts: Map<string, { final: string; samples: number }>; first: Row };

/**
 * One row per group naming `n` of its rollouts (`extra_info.rollout_ids`, and their final
 * samples as `sample_ids`): veRL runs the row `rollout.n = n` times and the loop replays
 * rollout i, all of its samples, in run i. Groups with fewer rollouts, and groups past
 * `maxRows`, are left out and counted.
 */
async function writeGroupDataset(out: string, groups: Map<string, GroupRollouts>, n: number, maxRows?: number): Promise<NonNullable<ExportManifest["group_dataset"]>> {
  const path = groupDatasetPath(out);
  mkdirSync(dirname(path), { recursive: true });
  const jsonl = path.replace(/\.parquet$/, ".jsonl");
  const stream = createWriteStream(jsonl);
  const summary = { path, rows: 0, samples_per_row: n, short_groups: 0, samples_left_out: 0, groups_over_limit: 0 };
  const samplesOf = (rollouts: [string, { samples: number }][]) => rollouts.reduce((sum, [, r]) => sum + r.samples, 0);
  try {
    for (const [group, { rollouts, first }] of groups) {
      const complete = [...rollouts].filter(([, r]) => r.final !== "");
      if (complete.length < n) {
        summary.short_groups++;
        summary.samples_left_out += samplesOf([...rollouts]);
        continue;
      }
      if (maxRows !== undefined && summary.rows >= maxRows) {
        summary.groups_over_limit++;
        summary.samples_left_out += samplesOf([...rollouts]);
        continue;
      }
      const chosen = complete.slice(0, n);
      summary.samples_left_out += samplesOf([...rollouts]) - samplesOf(chosen);
      const extra_info = { index: summary.rows++, group, task_id: first.task_id, sample_ids: chosen.map(([, r]) => r.final), rollout_ids: chosen.map(([id]) => id) };
      await writeLine(stream, `${JSON.stringify({ ...first, extra_info })}\n`);
    }
  } finally {
    await closeStream(stream);
  }
  await jsonlToParquet(jsonl, path, groupColumns);
  return summary;
}

/**
 * How many versions behind `trainVersion` the oldest call of a valid trajectory was served;
 * past `maxStaleness` the rollout is left out whole (its reward is on its final sample, and a
 * rollout half trained on is a different one).
 */
function checkStaleness(t: RolloutTrajectory, trainVersion: number, maxStaleness: number | undefined, counts: ExportManifest["staleness"]): void {
  const versions = t.samples.flatMap((s) => (s.policy_versions.length > 0 ? s.policy_versions : [s.policy_version]));
  if (versions.length === 0) return;
  const behind = trainVersion - Math.min(...versions);
  counts.histogram[String(behind)] = (counts.histogram[String(behind)] ?? 0) + 1;
  if (maxStaleness !== undefined && behind > maxStaleness) {
    counts.rollouts_dropped++;
    t.valid = false;
    t.excluded = "stale";
  }
}

/**
 * Applies `maxPromptLength` / `maxResponseLength` to a valid trajectory: drops its overlong
 * samples, or marks it invalid (`overlong`) when its final sample is one.
 */
function fitLengths(t: RolloutTrajectory, options: ExportOptions, counts: ExportManifest["length_filter"]): void {
  const { maxPromptLength: p, maxResponseLength: r } = options;
  if (p === undefined && r === undefined) return;
  const fits = (s: TrajectorySample) => (p === undefined || s.prompt_ids.length <= p) && (r === undefined || s.response_ids.length <= r);
  const final = t.samples.find((s) => s.is_final);
  if (final && !fits(final)) {
    counts.rollouts_dropped++;
    counts.samples_dropped += t.samples.length;
    t.valid = false;
    t.excluded = "overlong";
    return;
  }
  const kept = t.samples.filter(fits);
  counts.samples_dropped += t.samples.length - kept.length;
  t.samples = kept;
}

/** Moves the referenced Blobs from the scratch folder to `dir` (content-addressed: an existing file is the same bytes). */
function moveReferencedBlobs(scratch: string, dir: string, referenced: Set<string>, counts: ExportManifest["images"]): void {
  if (referenced.size === 0) return;
  mkdirSync(dir, { recursive: true });
  counts.dir = dir;
  for (const sha of referenced) {
    const from = join(scratch, sha);
    if (existsSync(join(dir, sha))) counts.blobs_written++;
    else if (existsSync(from)) {
      renameSync(from, join(dir, sha));
      counts.blobs_written++;
    } else counts.blobs_missing++;
  }
}

/**
 * The first `rows` rows of a group dataset (by `extra_info.index`) as a parquet file: what one
 * veRL step trains on, exactly `data.train_batch_size` rows (see docs/verl.md, "Argo").
 * Returns the rows written; fewer than `rows` when the dataset is shorter.
 *
 * @example
 * await firstGroupRows("exports/batch.groups/dataset.parquet", 16, "/forge/verl/dataset.parquet") // 16
 */
export async function firstGroupRows(groupDataset: string, rows: number | undefined, out: string): Promise<number> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    const limit = rows === undefined ? "" : ` LIMIT ${Math.max(0, Math.floor(rows))}`;
    const select = `SELECT * FROM read_parquet(${sqlString(groupDataset)}) ORDER BY extra_info."index"${limit}`;
    await connection.run(`COPY (${select}) TO ${sqlString(out)} (FORMAT parquet, COMPRESSION zstd)`);
    const count = await connection.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM read_parquet(${sqlString(out)})`);
    return Number(count.getRowObjects()[0]!.n);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

async function jsonlToParquet(jsonl: string, out: string, columns: readonly (readonly [string, string])[]): Promise<void> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    const partial = `${out}.tmp`;
    if (existsSync(partial)) rmSync(partial);
    // Lists stay unpadded (veRL pads in its agent loop); insertion order is kept, so row i has extra_info.index i.
    await connection.run(
      `COPY (SELECT * FROM read_json(${sqlString(jsonl)}, format = 'newline_delimited', columns = ${columnsSql(columns)},
         maximum_object_size = 1073741824)) TO ${sqlString(partial)} (FORMAT parquet, COMPRESSION zstd)`,
    );
    renameSync(partial, out);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
