/** The task model shared by the local executor and the Argo pods: one task, whatever file it came from. */

/**
 * Where a script verifier's reward comes from. `file`: the verifier writes `reward.txt` or
 * `reward.json` into `$FORGE_LOGS` (a directory only the verifier can write); `exit-code`: the
 * verifier's exit status decides (0 → 1.0, anything else → 0.0), only when the task says so.
 */
export type RewardSource = "file" | "exit-code";

/** How a rollout of the task is scored once the harness has exited. Every task has one. */
export type TaskVerifier =
  /** A Harbor / Terminal-Bench `tests/` directory whose `test.sh` is run on a copy of the workspace. */
  | { kind: "script"; testsDir: string; script: string; reward: RewardSource }
  /** An inline bash script (a JSONL line's `verify` / `test`, an inline task's `test`). */
  | { kind: "inline"; script: string; reward: RewardSource }
  /** A prompt task: reward 1 when the harness's output contains this text. */
  | { kind: "expected"; text: string };

/** The rewards a task may give: a verifier's reward outside it is a verifier error, not a reward. */
export type RewardRange = { min: number; max: number };

/** Rewards lie in [0, 1] unless the task declares otherwise. */
export const DEFAULT_REWARD_RANGE: RewardRange = { min: 0, max: 1 };

export type Task = {
  id: string;
  /** Where it was read from (`dir` or `file.jsonl:LINE`), for messages. */
  source: string;
  instruction: string;
  /** Directory copied into the workspace before the harness runs (task's `environment/`). */
  environmentDir?: string;
  /** Files written into the workspace (inline / JSONL tasks), path → content. */
  files: Record<string, string>;
  /** `environment/Dockerfile`, recorded for the Kubernetes image; not used locally. */
  dockerfile?: string;
  verifier: TaskVerifier;
  /** task.toml `[verifier] reward_range`, an inline task's `rewardRange`; default [0, 1]. */
  rewardRange: RewardRange;
  /** task.toml `[agent] timeout_sec`, `[verifier] timeout_sec`. */
  agentTimeoutSeconds?: number;
  verifierTimeoutSeconds?: number;
  /**
   * task.toml `[environment] browser = true`: the harness gets a headless browser to drive
   * (Playwright's MCP server, docs/gui.md).
   */
  browser: boolean;
  /**
   * The task's `site/` directory: a website served to the rollout at `{site_url}` by forge's site
   * server, which records every request where only the verifier reads it (docs/gui.md).
   */
  siteDir?: string;
  /** task.toml `[environment]` (cpus, memory_mb, …), kept as written. */
  resources: Record<string, unknown>;
  /** task.toml `[metadata]` or the JSONL line's `metadata`. */
  metadata: Record<string, unknown>;
};

/** A task that cannot be loaded; the message names the file and what to fix. */
export class TaskError extends Error {
  override name = "TaskError";
}
