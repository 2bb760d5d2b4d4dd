/**
 * Our recording proxy as a separate process (`bun bin/forge.ts proxy …`), so its CPU time is
 * measured apart from the load generator's and the upstream's.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { spawn, type ChildProcess } from "node:child_process";
import { perfEnv, perfRecordArgs, perfWorkload, type PerfRecording } from "./perf-record.ts";

export interface RunningForgeProxy {
  url: string;
  pid: number;
  adminToken: string;
  dataDir: string;
  /** Registers a rollout; returns its id and key. */
  register(taskId: string): Promise<{ rollout_id: string; api_key: string }>;
  /** Finishes a rollout as a run's executor does once its verifier ran (reward 1, ok): the proxy then releases its chains and history. */
  finish(rolloutId: string): Promise<void>;
  stop(): Promise<void>;
  /** Everything the process printed (for the report when it fails). */
  output(): string;
}

/** Whether the proxy CLI exists in this checkout yet. */
export function forgeProxyAvailable(root: string): boolean {
  return existsSync(join(root, "proxy", "cli.ts")) && existsSync(join(root, "proxy", "index.ts"));
}

/**
 * Starts `bun bin/forge.ts proxy --data DIR --upstream URL --listen 127.0.0.1:0 --json` with an
 * admin token, reads its URL from the JSON line and waits for `/healthz`.
 *
 * @example
 * const proxy = await startForgeProxy({ root, dataDir, upstream: sim.url });
 */
export async function startForgeProxy(o: { root: string; dataDir: string; upstream: string; extraArgs?: string[]; bunArgs?: string[]; env?: Record<string, string>; perf?: PerfRecording }): Promise<RunningForgeProxy> {
  const adminToken = `bench-admin-${Math.random().toString(36).slice(2)}`;
  const args = [...(o.bunArgs ?? []), "bin/forge.ts", "proxy", "--data", o.dataDir, "--upstream", o.upstream, "--listen", "127.0.0.1:0", "--admin-token", adminToken, "--json", ...(o.extraArgs ?? [])];
  const env = { ...process.env, ...o.env, ...(o.perf ? perfEnv(o.perf) : {}) };
  const child: ChildProcess = o.perf ? spawn("perf", [...perfRecordArgs(o.perf), "--", "bun", ...args], { cwd: o.root, stdio: ["ignore", "pipe", "pipe"], env }) : spawn("bun", args, { cwd: o.root, stdio: ["ignore", "pipe", "pipe"], env });
  let out = "";
  let url = "";
  child.stdout?.on("data", (b) => {
    out = (out + b).slice(-20_000);
    const line = out.split("\n").find((l) => l.startsWith("{") && l.includes('"url"'));
    if (line && !url) url = JSON.parse(line).url;
  });
  child.stderr?.on("data", (b) => (out = (out + b).slice(-20_000)));
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`forge proxy exited (${child.exitCode}) on start: bun ${args.join(" ")}\n${out}`);
    if (url) {
      try {
        const r = await fetch(`${url}/healthz`);
        if (r.ok) break;
      } catch {}
    }
    if (Date.now() > deadline) throw new Error(`forge proxy did not answer /healthz within 20 s\n${out}`);
    await Bun.sleep(100);
  }
  // Under perf the proxy is perf's child: its CPU is read and its end asked for there.
  const pid = o.perf ? perfWorkload(child.pid!) : child.pid!;
  return {
    url,
    pid,
    adminToken,
    dataDir: o.dataDir,
    async register(taskId) {
      const r = await fetch(`${url}/control/rollouts`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ experiment: "bench", task_id: taskId }),
      });
      if (r.status !== 201) throw new Error(`POST /control/rollouts: ${r.status} ${await r.text()}`);
      return (await r.json()) as { rollout_id: string; api_key: string };
    },
    async finish(rolloutId) {
      const r = await fetch(`${url}/control/rollouts/${rolloutId}/finish`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ reward: 1, status: "ok" }),
      });
      if (r.status !== 200) throw new Error(`POST /control/rollouts/${rolloutId}/finish: ${r.status} ${await r.text()}`);
    },
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        // perf writes its data once its workload has exited.
        if (o.perf) process.kill(pid, "SIGTERM");
        else child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 5000).unref();
      }),
    output: () => out,
  };
}
