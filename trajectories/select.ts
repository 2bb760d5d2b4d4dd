/**
 * Which samples of a valid trajectory an export trains on: the staleness bound, the length
 * filter and the auxiliary-sample drop, in that order and in this one place (the veRL loop's
 * online mode applies veRL's own lengths to what the trajectory route serves: docs/verl.md,
 * "Overlong and empty samples").
 */
import type { ExportManifest } from "./export-manifest.ts";
import type { ExportOptions } from "./export-options.ts";
import type { RolloutTrajectory, TrajectorySample } from "./types.ts";

/**
 * Applies the staleness bound and (veRL / jsonl) the length filter to a valid trajectory — either
 * may mark it invalid (`stale`, `overlong`) — and, once it is known valid, the auxiliary policy.
 * Counts in the manifest what each left out.
 */
export function selectTrainable(t: RolloutTrajectory, options: ExportOptions, manifest: ExportManifest): void {
  if (t.valid && options.format !== "sft") fitLengths(t, options, manifest.length_filter);
  if (t.valid && options.trainVersion !== undefined) checkStaleness(t, options.trainVersion, options.maxStaleness, manifest.staleness);
  if (!t.valid) return;
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
