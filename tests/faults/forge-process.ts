/**
 * `bun bin/forge.ts proxy` as a child process, for the faults that need a real process:
 * SIGKILL under load, and what the CLI prints (warnings, secrets) at start.
 */
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";

const ROOT = resolve(import.meta.dir, "..", "..");

export interface ForgeProcess {
  url: string;
  child: Subprocess<"ignore", "pipe", "pipe">;
  /** stdout + stderr so far. */
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<number>;
}

/**
 * Starts the CLI proxy and resolves once its `--json` line gives the URL.
 *
 * @example
 * const p = await startForgeProcess(["--upstream", up.url + "/v1", "--data", dir, "--admin-token", "t"]);
 */
export async function startForgeProcess(args: string[], env: Record<string, string> = {}): Promise<ForgeProcess> {
  const child = Bun.spawn(["bun", join(ROOT, "bin", "forge.ts"), "proxy", "--json", ...args], {
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096", ...env },
  });
  let out = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) out += decoder.decode(chunk, { stream: true });
  };
  void pump(child.stdout);
  void pump(child.stderr);
  const deadline = Date.now() + 20_000;
  let url = "";
  while (!url) {
    const line = out.split("\n").find((l) => l.startsWith("{") && l.includes('"url"'));
    if (line) url = JSON.parse(line).url;
    else if (child.exitCode !== null) throw new Error(`forge proxy exited ${child.exitCode}:\n${out}`);
    else if (Date.now() > deadline) throw new Error(`forge proxy printed no URL within 20 s:\n${out}`);
    else await Bun.sleep(25);
  }
  return {
    url,
    child,
    output: () => out,
    async kill(signal = "SIGTERM") {
      child.kill(signal);
      return await child.exited;
    },
  };
}
