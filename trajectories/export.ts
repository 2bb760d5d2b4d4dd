/**
 * `forge export`: records → assembled samples → veRL / SFT parquet or JSONL, streaming.
 *
 * Memory bound: the records of open rollouts (prompts as deltas, as on disk), one assembled
 * rollout at a time, and a counter per group. Samples go to a temporary JSONL file; groups left
 * with fewer than `minGroupSize` valid rollouts are only known at the end, so a second pass over
 * that file drops them and numbers the rows, and DuckDB streams the result into parquet.
 */
import { createReadStream, createWriteStream, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { VALIDATION_LABEL, type Record } from "../schemas/index.ts";
import { assembleTrajectory } from "./assemble.ts";
import { blobDirPath, closeStream, jsonlToParquet, manifestPath, moveReferencedBlobs, sidecarPath, writeLine } from "./export-files.ts";
import { countAssembled, newManifest, type ExportManifest } from "./export-manifest.ts";
import { GroupRollouts } from "./group-dataset.ts";
import { responseMessage, type ChatMessage } from "./messages.ts";
import { RequestBodies } from "./request-bodies.ts";
import { collectRollouts, type CollectStats, type CollectedRollout } from "./resolve.ts";
import { columnTypes, rowOf, sftRowFields, verlRowFields } from "./row.ts";
import { samplingInfo } from "./sampling.ts";
import { selectTrainable } from "./select.ts";
import type { ExportOptions } from "./export-options.ts";
import { withThinkDefaults, type RolloutTrajectory, type TrajectorySample } from "./types.ts";


/** A row as pass 2 reads it back: the fields it numbers, counts and groups by. */
type Row = {
  uid: string;
  rollout_id: string;
  extra_info: { index: number; is_final?: boolean };
  image_refs?: string[];
  prompt_ids?: number[];
  response_ids?: number[];
  response_mask?: number[];
} & { [column: string]: unknown };

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
  const format = options.format;
  if (format !== "jsonl" && !options.out.endsWith(".parquet")) throw new Error(`--out ${options.out}: a ${format} export is parquet; name it *.parquet`);
  if (format === "jsonl" && !options.out.endsWith(".jsonl")) throw new Error(`--out ${options.out}: a jsonl export is named *.jsonl`);
  mkdirSync(dirname(options.out), { recursive: true });
  const run = new ExportRun(options);
  try {
    await run.assembleAll(records);
    await run.keepGroupsAndNumberRows();
    await run.writeOutputs();
  } finally {
    run.cleanUp();
  }
  const manifest = run.manifest;
  manifest.seconds = Math.round((performance.now() - started) / 10) / 100;
  writeFileSync(manifestPath(options.out), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/**
 * One export's state across its passes. Pass 1 assembles each rollout as it completes and writes
 * its rows to a temporary JSONL file (groups left with fewer than `minGroupSize` valid rollouts
 * are only known at the end); pass 2 drops those groups and numbers the rows; then parquet, the
 * group dataset and the images the kept rows refer to.
 */
class ExportRun {
  readonly manifest: ExportManifest;
  private readonly tmp: string;
  private readonly jsonlOut: string;
  /** Valid rollouts per group seen. */
  private readonly validPerGroup = new Map<string, number>();
  /** The images of the samples, by sha256, gathered as their rollouts are read; the ones kept rows refer to move beside the batch. */
  private readonly blobScratch: string;
  private readonly referenced = new Set<string>();
  private readonly groups = new GroupRollouts();

  constructor(private readonly options: ExportOptions) {
    const format = options.format;
    this.manifest = newManifest(options, format === "jsonl" ? null : sidecarPath(options.out));
    this.tmp = `${options.out}.samples.tmp`;
    this.jsonlOut = format === "jsonl" ? options.out : sidecarPath(options.out);
    this.blobScratch = `${options.out}.blobs.tmp`;
    rmSync(this.blobScratch, { recursive: true, force: true });
  }

  private rss(): void {
    this.manifest.peak_rss_bytes = Math.max(this.manifest.peak_rss_bytes, process.memoryUsage.rss());
  }

  /** Pass 1: every rollout of the stream assembled, selected and written as rows to the temporary file. */
  async assembleAll(records: AsyncIterable<Record | { record: Record }>): Promise<void> {
    const { options, manifest } = this;
    const collect: CollectStats = { records: 0, maxOpenRollouts: 0, lateCalls: 0, blobs: 0 };
    const pass1 = createWriteStream(this.tmp);
    let lastProgress = performance.now();
    try {
      for await (const collected of collectRollouts(records, collect)) {
        for (const row of this.rowsOfRollout(collected)) {
          await writeLine(pass1, `${JSON.stringify(row)}\n`);
          manifest.samples++;
        }
        if (performance.now() - lastProgress > 1000) {
          lastProgress = performance.now();
          this.rss();
          options.onProgress?.({ records: collect.records, rollouts: manifest.rollouts.seen, samples: manifest.samples });
        }
      }
    } finally {
      await closeStream(pass1);
    }
    manifest.records = collect.records;
    manifest.rollouts.late_calls = collect.lateCalls;
    manifest.rollouts.max_open = collect.maxOpenRollouts;
  }

  /** The rows of one collected rollout: none when it is filtered out or not valid. */
  private rowsOfRollout(collected: CollectedRollout): { [column: string]: unknown }[] {
    const { options, manifest } = this;
    const r = collected.rollout;
    if ((options.experiment !== undefined && r?.experiment !== options.experiment) || (options.iteration !== undefined && r?.iteration !== options.iteration)) {
      manifest.filter.skipped_rollouts++;
      return [];
    }
    if (r?.labels[VALIDATION_LABEL] === "true") {
      // A trainer's validation pass (its own sampling, the trained weights): measured, not trained on.
      manifest.filter.validation_rollouts++;
      return [];
    }
    const bodies = new RequestBodies(collected.content);
    const t = assembleTrajectory(collected.calls, collected.rollout, collected.result, options, bodies);
    countAssembled(manifest, t);
    if (!this.validPerGroup.has(t.group)) this.validPerGroup.set(t.group, 0);
    selectTrainable(t, options, manifest);
    if (!t.valid) {
      const reason = t.excluded ?? "invalid";
      manifest.rollouts.excluded[reason] = (manifest.rollouts.excluded[reason] ?? 0) + 1;
      return [];
    }
    manifest.rollouts.valid++;
    this.validPerGroup.set(t.group, this.validPerGroup.get(t.group)! + 1);
    const dataSource = options.dataSource ?? (collected.rollout?.experiment || "forge");
    return this.rowsOf(t, collected, bodies, dataSource);
  }

  /** veRL / jsonl: a row per sample with its first call's messages and its last call's images; SFT: whole conversations of good rollouts. */
  private rowsOf(t: RolloutTrajectory, collected: CollectedRollout, bodies: RequestBodies, dataSource: string): { [column: string]: unknown }[] {
    const byId = new Map(collected.calls.map((c) => [c.call.callId, c.call]));
    // Only the calls the rows read keep their parsed bodies.
    bodies.keepOnly(new Set(t.samples.flatMap((s) => [byId.get(s.call_ids[0]!)!, byId.get(s.call_ids.at(-1)!)!])));
    const sourceOf = (s: TrajectorySample, messages: ChatMessage[], imageRefs: string[]) => ({
      sample: s,
      trajectory: t,
      dataSource,
      messages,
      imageRefs,
      // What the sample was sampled with (docs/engines.md): veRL recomputes logprobs at its own temperature.
      sampling: samplingInfo(s.call_ids.flatMap((id) => byId.get(id) ?? [])),
    });
    const rows: { [column: string]: unknown }[] = [];
    if (this.options.format === "sft") {
      if (t.status !== "ok" || t.reward < (this.options.sftMinReward ?? 1)) return rows;
      for (const s of t.samples) {
        // SFT keeps whole conversations: the final call's request plus its answer, per sample.
        const last = byId.get(s.call_ids.at(-1)!)!;
        const messages = this.messagesOr(() => [...bodies.messages(last), responseMessage(last)]);
        if (messages) rows.push(rowOf(sftRowFields, sourceOf(s, messages, [])));
      }
      return rows;
    }
    for (const s of t.samples) {
      // The sample's tokens end with its last call: that request holds every image they show.
      const { refs, urls, bytes } = bodies.images(byId.get(s.call_ids.at(-1)!)!);
      this.manifest.images.refs += refs.length;
      this.manifest.images.remote_urls += urls;
      for (const [sha, data] of bytes) this.writeImage(sha, data);
      const messages = this.messagesOr(() => bodies.messages(byId.get(s.call_ids[0]!)!)) ?? [];
      rows.push(rowOf(verlRowFields, sourceOf(s, messages, refs)));
    }
    return rows;
  }

  private messagesOr(f: () => ChatMessage[]): ChatMessage[] | undefined {
    try {
      return f();
    } catch {
      this.manifest.message_errors++;
      return undefined;
    }
  }

  private writeImage(sha: string, data: Uint8Array): void {
    const file = join(this.blobScratch, sha);
    if (existsSync(file)) return;
    mkdirSync(this.blobScratch, { recursive: true });
    writeFileSync(file, data);
  }

  /** The groups with fewer than `minGroupSize` valid rollouts (reported, the first 1000 by name). */
  private smallGroups(): Set<string> {
    const { manifest } = this;
    const minGroupSize = this.options.minGroupSize ?? 2;
    manifest.groups.seen = this.validPerGroup.size;
    const dropped = new Set<string>();
    for (const [group, valid] of this.validPerGroup) {
      if (valid >= minGroupSize) continue;
      dropped.add(group);
      if (manifest.groups.dropped.length < 1000) manifest.groups.dropped.push({ group, valid_rollouts: valid });
    }
    manifest.groups.kept = this.validPerGroup.size - dropped.size;
    return dropped;
  }

  /** Pass 2: drop the small groups, number the rows (extra_info.index: what replay looks rows up by). */
  async keepGroupsAndNumberRows(): Promise<void> {
    const { manifest, options } = this;
    const dropped = this.smallGroups();
    const final = createWriteStream(this.jsonlOut);
    try {
      const lines = createInterface({ input: createReadStream(this.tmp), crlfDelay: Infinity });
      for await (const line of lines) {
        if (!line) continue;
        const row = JSON.parse(line) as Row;
        if (dropped.has(row.uid)) continue;
        row.extra_info.index = manifest.rows++;
        for (const ref of row.image_refs ?? []) this.referenced.add(ref);
        if (options.format !== "sft") {
          manifest.tokens.prompt += row.prompt_ids!.length;
          manifest.tokens.response += row.response_ids!.length;
          for (const m of row.response_mask!) manifest.tokens.sampled += m;
        }
        await writeLine(final, `${JSON.stringify(row)}\n`);
        if (options.groupRows && options.format === "verl") this.groups.add(row);
      }
    } finally {
      await closeStream(final);
      rmSync(this.tmp, { force: true });
    }
    this.rss();
  }

  /** Parquet from the JSONL rows, the group dataset, and the images beside the batch. */
  async writeOutputs(): Promise<void> {
    const { options, manifest } = this;
    const format = options.format;
    if (format !== "jsonl") await jsonlToParquet(this.jsonlOut, options.out, columnTypes(format === "sft" ? sftRowFields : verlRowFields));
    if (options.groupRows && format === "verl") manifest.group_dataset = await this.groups.write(options.out, options.groupRows, options.maxGroupRows);
    if (format !== "sft") moveReferencedBlobs(this.blobScratch, blobDirPath(options.out), this.referenced, manifest.images);
    this.rss();
  }

  cleanUp(): void {
    rmSync(this.tmp, { force: true });
    rmSync(this.blobScratch, { recursive: true, force: true });
  }
}
