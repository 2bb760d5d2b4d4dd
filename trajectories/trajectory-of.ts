/**
 * One rollout's assembled trajectory from its records: what `GET /control/rollouts/:id/trajectory` serves.
 */
import type { Record } from "../schemas/index.ts";
import { assembleTrajectory } from "./assemble.ts";
import { callImageRefs } from "./images.ts";
import { collectRollouts } from "./resolve.ts";
import { withThinkDefaults, type AssembleOptions, type RolloutTrajectory } from "./types.ts";

/**
 * Assembles the rollout `rolloutId` from a record stream (other rollouts' records are skipped).
 * Returns undefined when the stream holds nothing about it. Without reasoning ids, Qwen3's are assumed (QWEN3_THINK).
 *
 * @example
 * const t = await trajectoryOf(readRecords("data"), "r-42", { thinkOpen: 151667, thinkClose: 151668 });
 */
export async function trajectoryOf(
  records: AsyncIterable<Record | { record: Record }> | Iterable<Record | { record: Record }>,
  rolloutId: string,
  options: AssembleOptions = {},
): Promise<RolloutTrajectory | undefined> {
  async function* only() {
    for await (const item of records as AsyncIterable<Record | { record: Record }>) {
      const record = "kind" in item ? item : item.record;
      const v = record.kind.value as { rolloutId?: string } | undefined;
      if (v && "rolloutId" in v && v.rolloutId === rolloutId) yield record;
    }
  }
  for await (const c of collectRollouts(only())) return assembleTrajectory(c.calls, c.rollout, c.result, withThinkDefaults(options));
  return undefined;
}

/** A trajectory whose samples name their images (`image_refs`, in order of occurrence) and the Blobs' bytes (base64, by sha256). */
export type TrajectoryWithImages = Omit<RolloutTrajectory, "samples"> & {
  samples: (RolloutTrajectory["samples"][number] & { image_refs: string[] })[];
  blobs: { [sha256: string]: { media_type: string; data: string } };
};

/**
 * `trajectoryOf` plus the images of each sample (its last call's request, one ref per
 * occurrence) and those Blobs' bytes: what the veRL loop hands veRL as `multi_modal_data` in
 * online mode. `records` is called twice (a Blob may precede the rollout in the log).
 *
 * @example
 * const t = await trajectoryWithImages(() => readRecords("data"), "r-42");
 * t?.samples[0]!.image_refs; // ["3f…", "3f…"]
 */
export async function trajectoryWithImages(
  records: () => AsyncIterable<Record | { record: Record }> | Iterable<Record | { record: Record }>,
  rolloutId: string,
  options: AssembleOptions = {},
): Promise<TrajectoryWithImages | undefined> {
  let found: TrajectoryWithImages | undefined;
  async function* only() {
    for await (const item of records() as AsyncIterable<Record | { record: Record }>) {
      const record = "kind" in item ? item : item.record;
      const v = record.kind.value as { rolloutId?: string } | undefined;
      if (v && "rolloutId" in v && v.rolloutId === rolloutId) yield record;
    }
  }
  for await (const c of collectRollouts(only())) {
    const t = assembleTrajectory(c.calls, c.rollout, c.result, withThinkDefaults(options));
    const byId = new Map(c.calls.map((r) => [r.call.callId, r.call]));
    const samples = t.samples.map((s) => ({ ...s, image_refs: callImageRefs(byId.get(s.call_ids.at(-1)!)!).refs }));
    found = { ...t, samples, blobs: {} };
    break;
  }
  if (!found) return undefined;
  const wanted = new Set(found.samples.flatMap((s) => s.image_refs));
  if (wanted.size > 0) {
    for await (const item of records() as AsyncIterable<Record | { record: Record }>) {
      const record = "kind" in item ? item : item.record;
      if (record.kind.case === "blob" && wanted.has(record.kind.value.sha256)) {
        found.blobs[record.kind.value.sha256] = { media_type: record.kind.value.mediaType, data: Buffer.from(record.kind.value.data).toString("base64") };
      }
    }
  }
  return found;
}
