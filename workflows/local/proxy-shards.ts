/**
 * `forge run` with several proxy shards (`spec.proxy.shards` or `--proxy-shards N`): N
 * `forge proxy` processes, each with its own data directory `DATA/shard-i` and its own core,
 * each owning the rollouts hashed to it (proxy/shards.ts). The executor talks to shard 0, which
 * passes registrations, finishes and pauses on to the owner; the base URLs it hands out point
 * at the owner. Readers of DATA (export, analytics) read every shard (records/shards.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";

export type ProxyShardsOptions = {
  shards: number;
  dataDir: string;
  upstreams: string[];
  mode: "train" | "eval";
  engine: string;
  /** More `forge proxy` flags (token-in mode: workflows/token-mode.ts). */
  extraArgs?: string[];
  adminToken: string;
  log?: (line: string) => void;
  /** `--max-body-bytes` of every shard (spec.proxy.maxBodyBytes); unset: the proxy's default. */
  maxBodyBytes?: number;
};

export type StartedShards = { urls: string[]; dataDirs: string[]; stop(): Promise<void> };

const ROOT = join(import.meta.dir, "..", "..");

/** A free loopback port (bound on port 0, then released): the shards must know each other's URLs before they start. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no free port"))));
    });
  });
}

/** Waits for the JSON line a `forge proxy --json` prints once it listens; rejects with its stderr if it exits first. */
function listening(child: ChildProcess, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      if (out.includes("\n")) resolve();
    });
    child.stderr!.on("data", (chunk) => {
      err += chunk;
      process.stderr.write(chunk);
    });
    child.once("exit", (code) => reject(new Error(`${what} exited with ${code} before it listened: ${err.trim().split("\n").slice(-3).join(" / ")}`)));
  });
}

/**
 * Starts the shards and waits until every one listens.
 *
 * @example
 * const shards = await startProxyShards({ shards: 2, dataDir, upstreams: [sim.url], mode: "train", engine: "auto", adminToken });
 * shards.urls[0] // where the executor registers
 */
export async function startProxyShards(options: ProxyShardsOptions): Promise<StartedShards> {
  const ports = await Promise.all(Array.from({ length: options.shards }, freePort));
  const urls = ports.map((port) => `http://127.0.0.1:${port}`);
  const dataDirs = urls.map((_, i) => join(options.dataDir, `shard-${i}`));
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once("exit", () => resolve());
            child.kill("SIGTERM");
          }),
      ),
    );
  };
  try {
    await Promise.all(
      urls.map((url, i) => {
        const args = ["bin/forge.ts", "proxy", "--listen", `127.0.0.1:${ports[i]}`, "--data", dataDirs[i]!, "--mode", options.mode, "--engine", options.engine, ...(options.extraArgs ?? []), "--shard", `${i}/${options.shards}`, ...urls.flatMap((u) => ["--shard-url", u]), ...options.upstreams.flatMap((u) => ["--upstream", u]), ...(options.maxBodyBytes ? ["--max-body-bytes", String(options.maxBodyBytes)] : []), "--json"];
        // The admin token goes by environment, not argv (other users can read a process's argv).
        const child = spawn("bun", args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, FORGE_ADMIN_TOKEN: options.adminToken, BUN_CONFIG_MAX_HTTP_REQUESTS: process.env.BUN_CONFIG_MAX_HTTP_REQUESTS ?? "4096" } });
        children.push(child);
        return listening(child, `proxy shard ${i} (${url})`);
      }),
    );
  } catch (error) {
    await stop();
    throw error;
  }
  options.log?.(`${options.shards} proxy shards at ${urls.join(", ")}, recording to ${dataDirs.map((d) => join(d, "log")).join(", ")}`);
  return { urls, dataDirs, stop };
}
