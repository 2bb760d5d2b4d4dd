/** Starts a server process that prints a JSON line with its `url`, and waits for that line. */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";

/**
 * The child and the url it announced; rejects when it exits first.
 *
 * @example
 * const { child, url } = await spawnWithUrl("bun", ["bin/forge.ts", "policy-sim", "--json"], { cwd: root }, "policy-sim");
 */
export async function spawnWithUrl(command: string, args: string[], options: SpawnOptions, what: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (b) => {
      out += b;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve(JSON.parse(line).url);
    });
    child.once("exit", (code) => reject(new Error(`${what} exited ${code} on start`)));
  });
  return { child, url };
}
