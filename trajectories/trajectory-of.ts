/**
 * One rollout's assembled trajectory from its records: what `GET /control/rollouts/:id/trajectory` serves.
 */
import type { Record } from "../schemas/index.ts";
import { assembleTrajectory } from "./assemble.ts";
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
