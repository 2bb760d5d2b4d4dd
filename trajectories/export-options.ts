/**
 * What `forge export` is asked for (docs/trajectories.md, "Export"): the format and output, and
 * the selection options the passes apply.
 */
import type { AssembleOptions } from "./types.ts";

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
