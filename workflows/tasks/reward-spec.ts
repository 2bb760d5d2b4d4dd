/** A task's declared reward: where it comes from and the range it must lie in. */
import { DEFAULT_REWARD_RANGE, TaskError, type RewardRange, type RewardSource } from "./types.ts";

const SOURCES: RewardSource[] = ["file", "exit-code"];

/**
 * Reads a declared reward source; `where` names the field in errors.
 *
 * @example
 * rewardSource("exit-code", "t/task.toml: verifier.reward", "file"); // "exit-code"
 */
export function rewardSource(value: unknown, where: string, fallback: RewardSource): RewardSource {
  if (value === undefined) return fallback;
  if (typeof value !== "string" || !SOURCES.includes(value as RewardSource)) {
    throw new TaskError(`${where} must be "file" (the verifier writes $FORGE_LOGS/reward.txt or reward.json) or "exit-code" (exit 0 → 1.0), got ${JSON.stringify(value)}`);
  }
  return value as RewardSource;
}

/**
 * Reads a declared reward range `[min, max]` (default [0, 1]); an exit-code reward (0 or 1)
 * must fit in it.
 *
 * @example
 * rewardRange([-1, 1], "t/task.toml: verifier.reward_range", "file"); // { min: -1, max: 1 }
 */
export function rewardRange(value: unknown, where: string, source: RewardSource | undefined): RewardRange {
  let range = DEFAULT_REWARD_RANGE;
  if (value !== undefined) {
    const ok = Array.isArray(value) && value.length === 2 && value.every((v) => typeof v === "number" && Number.isFinite(v)) && value[0] < value[1];
    if (!ok) throw new TaskError(`${where} must be [min, max] with finite numbers, min < max (e.g. [0, 1]), got ${JSON.stringify(value)}`);
    range = { min: value[0] as number, max: value[1] as number };
  }
  if (source === "exit-code" && !(range.min <= 0 && range.max >= 1)) {
    throw new TaskError(`${where} is [${range.min}, ${range.max}], but an exit-code reward is 0 or 1: widen the range or write a reward file`);
  }
  return range;
}
