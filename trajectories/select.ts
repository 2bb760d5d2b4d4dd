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

/** What a trainer does with a sample longer than its limits (docs/verl.md, "Overlong and empty samples"). */
export const OVERLONG_POLICIES = ["truncate", "penalize", "drop"] as const;
export type OverlongPolicy = (typeof OVERLONG_POLICIES)[number];

/**
 * A trainer's selection settings: the veRL loop's (`rollout.prompt_length` / `response_length`,
 * its `overlong` and `overlong_reward`, its processor's vision ids), which it hands the
 * trajectory route as query parameters.
 */
export interface TrainingLimits {
  /** `drop` (default): auxiliary samples are never trained on; `keep` trains them too. */
  auxiliary: "drop" | "keep";
  overlong: OverlongPolicy;
  /** The reward of a trajectory whose final sample was cut under `penalize`. */
  overlongReward: number;
  maxPromptLength?: number;
  maxResponseLength?: number;
  /** A vision model's `<|vision_start|>`, `<|image_pad|>`, `<|vision_end|>` ids: a cut never splits an image. */
  vision?: readonly [number, number, number];
  /** Only the final sample is trained on (veRL's legacy trainer takes one output per row); the others are counted as left out. */
  finalOnly: boolean;
}

/** What one trajectory yields for a trainer, and what was left out of it or cut, and why. */
export interface TrainingSelection<S extends TrajectorySample = TrajectorySample> {
  /** The kept samples, the final one last (cut to fit under `truncate` / `penalize`). */
  samples: S[];
  /** The reward the final kept sample carries (`overlongReward` when penalised). */
  reward: number;
  /** Samples the trajectory had before selection. */
  of: number;
  overlong: number;
  left_out: number;
  auxiliary: number;
  truncated: number;
  final_overlong: boolean;
  penalized: boolean;
  /** Why the whole trajectory is left out, or null. */
  dropped: string | null;
}

type Cuttable = TrajectorySample & { image_refs?: string[] };

/**
 * The samples of one trajectory a trainer gets, by one rule for the export's replay batches and
 * the online loop (which asks the trajectory route for it). Auxiliary samples are left out and
 * counted (`auxiliary: "drop"`). A sample with an empty response (an aborted call) carries no
 * token to put a reward on (veRL puts it on every output's last response token): it is left
 * out, and an empty final sample hands the reward to the last non-empty one (`drop`: the
 * trajectory is left out). An overlong sample is cut as veRL 0.9.1's own agent loops cut
 * (`truncate`, `penalize`: the response to its limit, the prompt from the left; `penalize` also
 * gives a trajectory whose final sample was cut `overlongReward`) or left out (`drop`: the
 * trajectory whole when its final sample is overlong).
 *
 * @example
 * selectForTraining(t.samples, t.reward, { auxiliary: "drop", overlong: "truncate", overlongReward: 0, maxResponseLength: 4096, finalOnly: false }).samples
 */
export function selectForTraining<S extends Cuttable>(samples: readonly S[], reward: number, limits: TrainingLimits): TrainingSelection<S> {
  const ordered = [...samples].sort((a, b) => Number(a.is_final) - Number(b.is_final) || a.sample_index - b.sample_index);
  const agent = limits.auxiliary === "drop" ? ordered.filter((s) => !s.auxiliary) : ordered;
  const base: TrainingSelection<S> = { samples: [], reward, of: samples.length, overlong: 0, left_out: 0, auxiliary: samples.length - agent.length, truncated: 0, final_overlong: false, penalized: false, dropped: null };
  if (agent.length === 0) return { ...base, dropped: "the trajectory has no agent sample" };
  return limits.overlong === "drop" ? selectDropping(agent, limits, base) : selectCutting(agent, limits, base);
}

/** Why a sample does not fit, or null. */
function problemOf(s: TrajectorySample, limits: TrainingLimits): string | null {
  const p = s.prompt_ids.length;
  const r = s.response_ids.length;
  if (r === 0) return "the response is empty";
  if (limits.maxPromptLength !== undefined && p > limits.maxPromptLength) return `prompt has ${p} tokens > rollout.prompt_length=${limits.maxPromptLength}`;
  if (limits.maxResponseLength !== undefined && r > limits.maxResponseLength) return `response has ${r} tokens > rollout.response_length=${limits.maxResponseLength}`;
  return null;
}

function selectDropping<S extends Cuttable>(agent: S[], limits: TrainingLimits, base: TrainingSelection<S>): TrainingSelection<S> {
  const final = agent.at(-1)!;
  const several = !limits.finalOnly;
  const problem = problemOf(final, limits);
  if (problem !== null) return { ...base, overlong: several ? agent.length : 1, left_out: several ? 0 : agent.length - 1, dropped: `final sample ${final.sample_id}: ${problem}` };
  if (!several) return { ...base, samples: [final], left_out: agent.length - 1 };
  const kept = agent.slice(0, -1).filter((s) => problemOf(s, limits) === null);
  return { ...base, samples: [...kept, final], overlong: agent.length - 1 - kept.length };
}

function selectCutting<S extends Cuttable>(agent: S[], limits: TrainingLimits, base: TrainingSelection<S>): TrainingSelection<S> {
  const nonempty = agent.filter((s) => s.response_ids.length > 0);
  const empty = agent.length - nonempty.length;
  if (nonempty.length === 0) return { ...base, overlong: agent.length, dropped: `final sample ${agent.at(-1)!.sample_id}: the response is empty (and no earlier sample has one)` };
  const cut = nonempty.filter((s) => problemOf(s, limits) !== null).length;
  const final = nonempty.at(-1)!;
  const finalOverlong = problemOf(final, limits) !== null;
  const chosen = limits.finalOnly ? [final] : nonempty;
  const penalized = finalOverlong && limits.overlong === "penalize";
  return {
    ...base,
    samples: chosen.map((s) => (problemOf(s, limits) !== null ? cutToFit(s, limits) : s)),
    reward: penalized ? limits.overlongReward : base.reward,
    overlong: empty + cut,
    left_out: limits.finalOnly ? agent.length - 1 : 0,
    truncated: cut,
    final_overlong: finalOverlong,
    penalized,
  };
}

/**
 * A sample cut to fit, as veRL's agent loops cut: the prompt from the left
 * (`_cap_text_prompt_length`), the response with its mask and logprobs from the right
 * (`response_ids[:response_length]`). With `vision` ids, a cut that would fall inside an image
 * (its `<|vision_start|>`, pads, `<|vision_end|>`) moves out of it, leaving the image out whole,
 * and `image_refs` keeps the images that remain: veRL pairs the k-th pad run with the k-th
 * image, and half a run pairs with nothing.
 */
export function cutToFit<S extends Cuttable>(sample: S, limits: Pick<TrainingLimits, "maxPromptLength" | "maxResponseLength" | "vision">): S {
  const prompt = sample.prompt_ids;
  let responseCut = sample.response_ids.length;
  let promptCut = 0;
  if (limits.maxResponseLength !== undefined && responseCut > limits.maxResponseLength) responseCut = limits.maxResponseLength;
  if (limits.maxPromptLength !== undefined && prompt.length > limits.maxPromptLength) promptCut = prompt.length - limits.maxPromptLength;
  const spans = limits.vision ? imageSpans([...prompt, ...sample.response_ids], limits.vision) : [];
  let keep = spans.map((_, k) => k);
  if (spans.length > 0) {
    let end = prompt.length + responseCut;
    for (const [start, last] of spans) if (start < end && end <= last && start >= prompt.length) end = start; // the image the cut falls in goes whole
    responseCut = end - prompt.length;
    for (const [start, last] of spans) if (start < promptCut && promptCut <= last) promptCut = last + 1;
    keep = spans.flatMap(([start, last], k) => (start >= promptCut && last < end ? [k] : []));
  }
  const out: S = { ...sample };
  if (promptCut > 0) out.prompt_ids = prompt.slice(promptCut);
  if (responseCut < sample.response_ids.length) {
    out.response_ids = sample.response_ids.slice(0, responseCut);
    out.response_mask = sample.response_mask.slice(0, responseCut);
    out.response_logprobs = sample.response_logprobs.slice(0, responseCut);
  }
  const refs = sample.image_refs;
  if (spans.length > 0 && refs !== undefined && refs.length === spans.length && keep.length < spans.length) out.image_refs = keep.map((k) => refs[k]!);
  return out;
}

/** Each image of a Qwen-VL sample as [first, last] token index: its `<|vision_start|>` (where one is right before the run), the pads, its `<|vision_end|>`. */
export function imageSpans(ids: readonly number[], vision: readonly [number, number, number]): [number, number][] {
  const [startId, padId, endId] = vision;
  const spans: [number, number][] = [];
  for (let i = 0; i < ids.length; ) {
    if (ids[i] !== padId) {
      i++;
      continue;
    }
    let j = i;
    while (j + 1 < ids.length && ids[j + 1] === padId) j++;
    const first = i > 0 && ids[i - 1] === startId ? i - 1 : i;
    const last = j + 1 < ids.length && ids[j + 1] === endId ? j + 1 : j;
    spans.push([first, last]);
    i = j + 1;
  }
  return spans;
}
