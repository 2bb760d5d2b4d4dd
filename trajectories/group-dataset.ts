/**
 * The GRPO dataset of `forge export --group-rows n` (docs/verl.md): one row per group naming n of
 * its rollouts (`extra_info.rollout_ids`), which veRL runs `rollout.n = n` times; the loop
 * replays rollout i, all of its samples, in run i.
 */
import { createWriteStream, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { ExportManifest } from "./export-manifest.ts";
import { closeStream, groupDatasetPath, jsonlToParquet, writeLine } from "./export-files.ts";
import { groupRowColumns } from "./row.ts";

type Row = { [column: string]: unknown };

/** Per group, in row order: its rollouts (whether each has a final sample, and its sample count) and its first row. */
export class GroupRollouts {
  private readonly groups = new Map<string, { rollouts: Map<string, { complete: boolean; samples: number }>; first: Row }>();

  /** Notes a kept veRL row of the batch. */
  add(row: Row & { uid: string; rollout_id: string; extra_info: { is_final?: boolean } }): void {
    let g = this.groups.get(row.uid);
    if (!g) {
      const first = Object.fromEntries(groupRowColumns.filter(([column]) => column !== "extra_info").map(([column]) => [column, row[column]]));
      g = { rollouts: new Map(), first };
      this.groups.set(row.uid, g);
    }
    const r = g.rollouts.get(row.rollout_id) ?? { complete: false, samples: 0 };
    r.samples++;
    if (row.extra_info.is_final) r.complete = true;
    g.rollouts.set(row.rollout_id, r);
  }

  /**
   * Writes the dataset beside `out`: per group with at least `n` rollouts that have a final
   * sample, a row naming the first n; groups with fewer, and groups past `maxRows`, are left out
   * and counted with their samples.
   */
  async write(out: string, n: number, maxRows?: number): Promise<NonNullable<ExportManifest["group_dataset"]>> {
    const path = groupDatasetPath(out);
    mkdirSync(dirname(path), { recursive: true });
    const jsonl = path.replace(/\.parquet$/, ".jsonl");
    const stream = createWriteStream(jsonl);
    const summary = { path, rows: 0, samples_per_row: n, short_groups: 0, samples_left_out: 0, groups_over_limit: 0 };
    const samplesOf = (rollouts: [string, { samples: number }][]) => rollouts.reduce((sum, [, r]) => sum + r.samples, 0);
    try {
      for (const [group, { rollouts, first }] of this.groups) {
        const complete = [...rollouts].filter(([, r]) => r.complete);
        if (complete.length < n || (maxRows !== undefined && summary.rows >= maxRows)) {
          if (complete.length < n) summary.short_groups++;
          else summary.groups_over_limit++;
          summary.samples_left_out += samplesOf([...rollouts]);
          continue;
        }
        const chosen = complete.slice(0, n);
        summary.samples_left_out += samplesOf([...rollouts]) - samplesOf(chosen);
        const extra_info = { index: summary.rows++, group, rollout_ids: chosen.map(([id]) => id) };
        await writeLine(stream, `${JSON.stringify({ ...first, extra_info })}\n`);
      }
    } finally {
      await closeStream(stream);
    }
    await jsonlToParquet(jsonl, path, groupRowColumns);
    return summary;
  }
}
