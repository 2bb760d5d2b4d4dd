/**
 * Runs a command as its own process group (via setsid) so a timeout or Ctrl-C can kill
 * everything it started, background children included: SIGTERM to the group, SIGKILL after a
 * grace period.
 */
import { openSync, closeSync } from "node:fs";

export type GroupResult = {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** Killed because the run was aborted (Ctrl-C). */
  aborted: boolean;
  /** Killed because the caller's `stop` fired (a disk limit). */
  stopped?: boolean;
  durationMs: number;
  /** The spawn itself failed (binary missing, …). */
  spawnError?: string;
};

export type GroupOptions = {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  stdoutPath: string;
  stderrPath: string;
  timeoutMs: number;
  /** Between SIGTERM and SIGKILL. */
  graceMs?: number;
  signal?: AbortSignal;
  /** Kills the group at once (SIGKILL, no grace) when it fires: the caller's own reason (a disk limit). */
  stop?: AbortSignal;
};

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Live groups, so a last-resort exit handler can kill them if the executor itself dies. */
export const liveGroups = new Set<number>();

/**
 * @example
 * const result = await runProcessGroup({ argv: ["bash", "-c", "sleep 100"], cwd: "/tmp", env: {}, stdoutPath: "/tmp/o", stderrPath: "/tmp/e", timeoutMs: 1000 });
 * result.timedOut; // true
 */
export async function runProcessGroup(options: GroupOptions): Promise<GroupResult> {
  const started = performance.now();
  const graceMs = options.graceMs ?? 2000;
  const out = openSync(options.stdoutPath, "a");
  const err = openSync(options.stderrPath, "a");
  let child: ReturnType<typeof Bun.spawn>;
  try {
    // setsid: the child becomes a session and process-group leader (pgid = pid), so -pid
    // reaches every process it starts unless one deliberately leaves the group.
    child = Bun.spawn(["setsid", ...options.argv], { cwd: options.cwd, env: options.env, stdin: "ignore", stdout: out, stderr: err });
  } catch (error) {
    closeSync(out);
    closeSync(err);
    return { exitCode: null, signal: null, timedOut: false, aborted: false, durationMs: performance.now() - started, spawnError: (error as Error).message };
  }
  const pid = child.pid;
  liveGroups.add(pid);
  let timedOut = false;
  let aborted = false;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  const terminate = () => {
    killGroup(pid, "SIGTERM");
    killTimer ??= setTimeout(() => killGroup(pid, "SIGKILL"), graceMs);
  };
  const timer = setTimeout(() => {
    timedOut = true;
    terminate();
  }, options.timeoutMs);
  const onAbort = () => {
    aborted = true;
    terminate();
  };
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener("abort", onAbort);
  let stopped = false;
  const onStop = () => {
    stopped = true;
    killGroup(pid, "SIGKILL");
  };
  if (options.stop?.aborted) onStop();
  options.stop?.addEventListener("abort", onStop);
  const exitCode = await child.exited;
  options.stop?.removeEventListener("abort", onStop);
  clearTimeout(timer);
  if (killTimer) clearTimeout(killTimer);
  options.signal?.removeEventListener("abort", onAbort);
  // The leader is gone; whatever it left running in its group goes too.
  killGroup(pid, "SIGKILL");
  liveGroups.delete(pid);
  closeSync(out);
  closeSync(err);
  return { exitCode: child.signalCode ? null : exitCode, signal: child.signalCode ? String(child.signalCode) : null, timedOut, aborted, ...(stopped ? { stopped } : {}), durationMs: performance.now() - started };
}
