/**
 * A rollout's disk limits (`spec.rollouts.resources.disk` and `.tmp`): the sandbox's /tmp is a
 * tmpfs of `tmp` bytes (a hard cap: the write fails with ENOSPC, and it is gone with the
 * sandbox), and the workspace plus HOME, which stay on disk for the verifier, are measured while
 * the harness runs; past `disk` its process group is killed and the rollout ends `failed` with a
 * `disk limit` error (docs/local-executor.md, "Limits").
 */

/** Defaults where the experiment sets none: room for a repository and its build, and a /tmp. */
export const DEFAULT_DISK_LIMITS = { disk: "10Gi", tmp: "1Gi" } as const;

/**
 * How often the workspace and HOME are measured while the harness runs: every DISK_CHECK_MS, or
 * ten times as long as the last measure took when that is longer (a workspace of 100,000 files
 * takes du a while), so measuring costs a rollout at most a tenth of a core.
 */
export const DISK_CHECK_MS = 500;

const UNITS: Record<string, number> = { "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };

/**
 * Bytes of a Kubernetes quantity (the schema has checked its form).
 *
 * @example
 * quantityBytes("10Gi"); // 10737418240
 * quantityBytes("500M"); // 500000000
 */
export function quantityBytes(quantity: string): number {
  const match = /^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/.exec(quantity);
  if (!match) throw new Error(`"${quantity}" is not a quantity of bytes (e.g. "10Gi", "500Mi")`);
  if (match[2] === "m") throw new Error(`"${quantity}" is in thousandths (m): a disk size is in bytes (e.g. "10Gi", "500Mi")`);
  return Math.floor(Number(match[1]) * UNITS[match[2] ?? ""]!);
}

/**
 * Bytes allocated under `paths` (du: sparse files count what they use, hard links once).
 *
 * @example
 * await diskUsage(["/data/rollouts/r1/workspace", "/data/rollouts/r1/home"]); // 40960
 */
export async function diskUsage(paths: string[]): Promise<number> {
  const du = Bun.spawn(["du", "-s", "-c", "-B1", "--", ...paths], { stdout: "pipe", stderr: "ignore" });
  const text = await new Response(du.stdout).text();
  await du.exited;
  const total = /^(\d+)\s+total$/m.exec(text);
  return total ? Number(total[1]) : 0;
}

/**
 * Measures `paths` every DISK_CHECK_MS (or 10× the last measure's time) until stopped; the first time they hold more than
 * `limitBytes`, `over` fires with what was seen.
 *
 * @example
 * const watch = watchDisk([workspace, home], 10 * 2 ** 30);
 * watch.over.addEventListener("abort", () => console.log(watch.seenBytes));
 * watch.stop();
 */
export function watchDisk(paths: string[], limitBytes: number): { over: AbortSignal; seenBytes(): number; stop(): void } {
  const over = new AbortController();
  let seen = 0;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const check = async () => {
    if (stopped) return;
    const started = performance.now();
    seen = await diskUsage(paths);
    if (stopped) return;
    if (seen > limitBytes) return over.abort(new Error(`disk limit: ${seen} bytes`));
    timer = setTimeout(check, Math.max(DISK_CHECK_MS, 10 * (performance.now() - started)));
  };
  timer = setTimeout(check, DISK_CHECK_MS);
  return {
    over: over.signal,
    seenBytes: () => seen,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
