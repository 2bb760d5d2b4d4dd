/**
 * The manifest `forge export` writes beside a batch (`<batch>.manifest.json`): what was read,
 * kept, left out and why (docs/trajectories.md, "Export").
 */
import type { ExportFormat, ExportOptions } from "./export-options.ts";
import type { BrokenCall, RolloutTrajectory } from "./types.ts";

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

/** An empty manifest for an export run with `options` (thinking defaults applied). */
export function newManifest(options: ExportOptions, sidecar: string | null): ExportManifest {
  return {
    format: options.format,
    out: options.out,
    sidecar_jsonl: sidecar,
    options: {
      min_group_size: options.minGroupSize ?? 2,
      reward_policy: options.rewardPolicy ?? "final",
      gamma: options.gamma ?? 0.9,
      timeouts: options.timeouts ?? "score",
      sft_min_reward: options.format === "sft" ? (options.sftMinReward ?? 1) : null,
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
}

/** Counts an assembled rollout's calls, drift, forks and broken calls (the first 100 kept). */
export function countAssembled(manifest: ExportManifest, t: RolloutTrajectory): void {
  manifest.rollouts.seen++;
  for (const key of ["clean", "realign", "fork", "broken", "auxiliary"] as const) manifest.calls[key] += t.stats[key];
  manifest.calls.total += t.stats.calls;
  manifest.drift_tokens += t.stats.drift_tokens;
  if (t.stats.drift_tokens > 0) manifest.rollouts_with_drift++;
  if (t.stats.fork > 0) manifest.rollouts_with_forks++;
  for (const b of t.broken) if (manifest.broken_calls.length < 100) manifest.broken_calls.push({ ...b, rollout_id: t.rollout_id });
}
