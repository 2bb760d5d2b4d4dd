/** Starts bench/lib/bun-floor-proxy.ts as a child process (its CPU measured apart). */
import { spawn } from "node:child_process";
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
  const child = spawn("bun", [join(import.meta.dir, "bun-floor-proxy.ts"), upstream, mode], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (b) => {
      out += b;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve(JSON.parse(line).url);
    });
    child.once("exit", (code) => reject(new Error(`bun floor proxy (${mode}) exited ${code} on start`)));
  });
  return { url, pid: child.pid!, stop: () => child.kill() };
}
