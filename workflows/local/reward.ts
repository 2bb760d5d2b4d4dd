/**
 * Reading a verifier's reward, from nowhere but the verifier's own output directory (a fresh
 * directory made after the harness exited, which the harness could never reach; never the
 * workspace). The task declares the source: `file` (default for task directories): the verifier
 * writes `reward.json` (`{"reward": n}` or a number) or `reward.txt` (a number) into
 * `$FORGE_LOGS`; `exit-code`: 0 → 1.0, anything else → 0.0. A missing, malformed or
 * out-of-range reward is a verifier error (the rollout is an infra_error), never a reward.
 */
import { existsSync, lstatSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { RewardRange, RewardSource } from "../tasks/index.ts";

export type RewardReading = { ok: true; reward: number; source: string } | { ok: false; error: string };

/** More than any reward file needs; a bigger one is not read into memory. */
const MAX_REWARD_FILE_BYTES = 64 * 1024;

function readSmallFile(path: string): { text: string } | { error: string } {
  const stat = lstatSync(path);
  // The verifier's directory is its own, but a link could still point the reader elsewhere.
  if (!stat.isFile()) return { error: `${path}: not a regular file` };
  if (stat.size > MAX_REWARD_FILE_BYTES) return { error: `${path}: ${stat.size} bytes, more than a reward file holds (limit ${MAX_REWARD_FILE_BYTES})` };
  return { text: readFileSync(path, "utf8") };
}

function fromFiles(dir: string): { reward: number; source: string } | { error: string } {
  const json = join(dir, "reward.json");
  if (existsSync(json)) {
    const read = readSmallFile(json);
    if ("error" in read) return read;
    let value: unknown;
    try {
      value = JSON.parse(read.text);
    } catch (error) {
      return { error: `${json}: not JSON: ${(error as Error).message}` };
    }
    const reward = typeof value === "number" ? value : (value as { reward?: unknown } | null)?.reward;
    if (typeof reward === "number" && Number.isFinite(reward)) return { reward, source: json };
    return { error: `${json}: expected a finite number or {"reward": number}, got ${JSON.stringify(read.text.slice(0, 80))}` };
  }
  const txt = join(dir, "reward.txt");
  if (existsSync(txt)) {
    const read = readSmallFile(txt);
    if ("error" in read) return read;
    const text = read.text.trim();
    const reward = Number(text);
    if (text !== "" && Number.isFinite(reward)) return { reward, source: txt };
    return { error: `${txt}: expected a finite number, got ${JSON.stringify(text.slice(0, 80))}` };
  }
  return { error: `the verifier wrote no reward: ${join(dir, "reward.txt")} or reward.json is missing (a task whose test decides by its exit code declares [verifier] reward = "exit-code")` };
}

/**
 * @example
 * readReward({ outputDir, exitCode: 1, source: "file", range: { min: 0, max: 1 } });
 * // { ok: true, reward: 0.5, source: "<outputDir>/reward.txt" } when the verifier wrote 0.5
 * readReward({ outputDir, exitCode: 0, source: "exit-code", range: { min: 0, max: 1 } }); // { ok: true, reward: 1, source: "exit code 0" }
 */
export function readReward(options: { outputDir: string; exitCode: number | null; source: RewardSource; range: RewardRange }): RewardReading {
  const { range } = options;
  let found: { reward: number; source: string } | { error: string };
  if (options.source === "exit-code") {
    found =
      options.exitCode === null
        ? { error: "the verifier was killed by a signal: no exit code to score" }
        : { reward: options.exitCode === 0 ? 1 : 0, source: `exit code ${options.exitCode}` };
  } else {
    found = fromFiles(options.outputDir);
  }
  if ("error" in found) return { ok: false, error: `verifier error: ${found.error}` };
  if (found.reward < range.min || found.reward > range.max) {
    return { ok: false, error: `verifier error: reward ${found.reward} (${found.source}) is outside the task's reward range [${range.min}, ${range.max}] (task.toml [verifier] reward_range)` };
  }
  return { ok: true, ...found };
}
