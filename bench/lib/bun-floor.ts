/** Starts bench/lib/bun-floor-proxy.ts as a child process (its CPU measured apart). */
import { spawnWithUrl } from "./spawn-url.ts";
import { join } from "node:path";

export interface RunningFloorProxy {
  url: string;
  pid: number;
  stop(): void;
}

/**
 * A Bun floor proxy in `mode` in front of `upstream`.
 *
 * @example
 * const floor = await startFloorProxy(sim.url, "touch", { BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" });
 */
export async function startFloorProxy(upstream: string, mode: "pipe" | "touch", env: Record<string, string>): Promise<RunningFloorProxy> {
  const { child, url } = await spawnWithUrl("bun", [join(import.meta.dir, "bun-floor-proxy.ts"), upstream, mode], { env: { ...process.env, ...env } }, `bun floor proxy (${mode})`);
  return { url, pid: child.pid!, stop: () => child.kill() };
}
