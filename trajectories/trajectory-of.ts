/**
 * One rollout's assembled trajectory from its records: what `GET /control/rollouts/:id/trajectory` serves.
 */
import type { Record } from "../schemas/index.ts";
import { assembleTrajectory } from "./assemble.ts";
import { RequestBodies } from "./request-bodies.ts";
import { collectRollouts } from "./resolve.ts";
import { withThinkDefaults, type AssembleOptions, type RolloutTrajectory } from "./types.ts";

type Records = AsyncIterable<Record | { record: Record }> | Iterable<Record | { record: Record }>;

/** The records of one rollout (the others' are skipped). */
async function* onlyRollout(records: Records, rolloutId: string): AsyncGenerator<Record> {
  for await (const item of records as AsyncIterable<Record | { record: Record }>) {
    const record = "kind" in item ? item : item.record;
    const v = record.kind.value as { rolloutId?: string } | undefined;
    if (v && "rolloutId" in v && v.rolloutId === rolloutId) yield record;
  }
}

/**
 * Assembles the rollout `rolloutId` from a record stream (other rollouts' records are skipped).
 * Returns undefined when the stream holds nothing about it. Without reasoning ids, Qwen3's are assumed (QWEN3_THINK).
 *
 * @example
 * const t = await trajectoryOf(readRecords("data"), "r-42", { thinkOpen: 151667, thinkClose: 151668 });
 */
export async function trajectoryOf(
  records: Records,
  rolloutId: string,
  options: AssembleOptions = {},
): Promise<RolloutTrajectory | undefined> {
  for await (const c of collectRollouts(onlyRollout(records, rolloutId))) return assembleTrajectory(c.calls, c.rollout, c.result, withThinkDefaults(options), c.content);
  return undefined;
}

/** A trajectory whose samples name their images (`image_refs`, in order of occurrence) and the Blobs' bytes (base64, by sha256). */
export type TrajectoryWithImages = Omit<RolloutTrajectory, "samples"> & {
  samples: (RolloutTrajectory["samples"][number] & { image_refs: string[] })[];
  blobs: { [sha256: string]: { media_type: string; data: string } };
};

/**
 * `trajectoryOf` plus the images of each sample (its last call's request, rebuilt through the
 * rollout's content store: one ref per occurrence, in order) and their bytes: what the veRL loop
 * hands veRL as `multi_modal_data` in online mode.
 *
 * @example
 * const t = await trajectoryWithImages(readRecords("data"), "r-42");
 * t?.samples[0]!.image_refs; // ["3f…", "3f…"]
 */
export async function trajectoryWithImages(
  records: Records,
  rolloutId: string,
  options: AssembleOptions = {},
): Promise<TrajectoryWithImages | undefined> {
  for await (const c of collectRollouts(onlyRollout(records, rolloutId))) {
    // One parse per request body, shared by the fingerprints and the images (as at export).
    const bodies = new RequestBodies(c.content);
    const t = assembleTrajectory(c.calls, c.rollout, c.result, withThinkDefaults(options), bodies);
    const byId = new Map(c.calls.map((r) => [r.call.callId, r.call]));
    const blobs: TrajectoryWithImages["blobs"] = {};
    const samples = t.samples.map((s) => {
      const { refs, bytes } = bodies.images(byId.get(s.call_ids.at(-1)!)!);
      for (const [sha, data] of bytes) blobs[sha] ??= { media_type: mediaType(data), data: Buffer.from(data).toString("base64") };
      return { ...s, image_refs: refs };
    });
    return { ...t, samples, blobs };
  }
  return undefined;
}

/** The image type its first bytes say (PNG, JPEG, GIF, WebP), else octet-stream. */
function mediaType(data: Uint8Array): string {
  const starts = (...b: number[]) => b.every((x, i) => data[i] === x);
  if (starts(0x89, 0x50, 0x4e, 0x47)) return "image/png";
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46)) return "image/gif";
  if (starts(0x52, 0x49, 0x46, 0x46) && data[8] === 0x57 && data[9] === 0x45) return "image/webp";
  return "application/octet-stream";
}
