/** The task model shared by the local executor: one task, whatever file it came from. */

/** How a rollout of the task is scored once the harness has finished. */
export type TaskVerifier =
  /** A Harbor / Terminal-Bench `tests/` directory whose `test.sh` is run in the workspace. */
  | { kind: "script"; testsDir: string; script: string }
  /** An inline bash script (a JSONL line's `verify` / `test`, an inline task's `test`). */
  | { kind: "inline"; script: string }
  /** A prompt task: reward 1 when the harness's output contains this text. */
  | { kind: "expected"; text: string }
  /** No verifier: the harness's exit code decides (0 → 1.0). */
  | { kind: "none" };

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
  /** task.toml `[agent] timeout_sec`, `[verifier] timeout_sec`. */
  agentTimeoutSeconds?: number;
  verifierTimeoutSeconds?: number;
  /** task.toml `[environment]` (cpus, memory_mb, …), kept as written. */
  resources: Record<string, unknown>;
  /** task.toml `[metadata]` or the JSONL line's `metadata`. */
  metadata: Record<string, unknown>;
};

/** A task that cannot be loaded; the message names the file and what to fix. */
export class TaskError extends Error {
  override name = "TaskError";
}
