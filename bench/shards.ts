/**
 * Throughput of a sharded proxy (docs/scale.md): 1, 2 and 4 `forge proxy` processes as shards
 * (proxy/shards.ts, each its own data directory and log), recording on, in front of the same
 * policy simulators, under the same load: streamed chat calls of `--rollouts` rollouts
 * registered through shard 0 (each call goes to its owner's base URL), `--concurrency` streams
 * in flight spread over `--loaders` load-generator processes, `--seconds` per round, rounds
 * interleaved. Prints calls/s per shard count, its ratio to one shard, and the proxies' CPU
 * per call. The simulators and load generators are sized apart so the proxy is what is measured
 * (`--simulators`; check that their CPU is below the cores there are).
 *
 *   bun bench/shards.ts [--shards 1,2,4] [--seconds 10] [--rounds 3] [--concurrency 256] [--rollouts 512] [--simulators 4] [--loaders 4] [--chunk-delay-ms 2] [--json]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawn } from "node:child_process";
import { benchFlags } from "./lib/flags.ts";
import { cpuSeconds } from "./lib/proc-cpu.ts";
import { freePort } from "./lib/free-port.ts";
import { spawnWithUrl } from "./lib/spawn-url.ts";

const ROOT = resolve(import.meta.dir, "..");
const { flag, has } = benchFlags();
const SHARDS = flag("shards", "1,2,4").split(",").map(Number);
const SECONDS = Number(flag("seconds", "10"));
const ROUNDS = Number(flag("rounds", "3"));
const CONCURRENCY = Number(flag("concurrency", "256"));
const ROLLOUTS = Number(flag("rollouts", "512"));
const SIMULATORS = Number(flag("simulators", "4"));
const LOADERS = Number(flag("loaders", "4"));
const CHUNK_DELAY_MS = flag("chunk-delay-ms", "2");
const ADMIN = "bench-shards";
const PROMPT = "Please summarise the following list of words back to me: " + Array.from({ length: 30 }, (_, i) => `w${i}`).join(" ");
const BODY = JSON.stringify({ model: "qwen3", stream: true, messages: [{ role: "user", content: PROMPT }] });

type Shards = { urls: string[]; pids: number[]; stop(): Promise<void> };

async function startShards(n: number, upstreams: string[], root: string): Promise<Shards> {
  const ports = await Promise.all(Array.from({ length: n }, freePort));
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const started = await Promise.all(
    urls.map((_, i) =>
      spawnWithUrl(
        "bun",
        ["bin/forge.ts", "proxy", "--listen", `127.0.0.1:${ports[i]}`, "--data", join(root, `shard-${i}`), "--mode", "train", "--admin-token", ADMIN, ...(n > 1 ? ["--shard", `${i}/${n}`, ...urls.flatMap((u) => ["--shard-url", u])] : []), ...upstreams.flatMap((u) => ["--upstream", u]), "--json"],
        { cwd: ROOT, env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" } },
        `proxy shard ${i}`,
      ),
    ),
  );
  return {
    urls,
    pids: started.map((s) => s.child.pid!),
    stop: () => Promise.all(started.map(({ child }) => new Promise<void>((r) => (child.once("exit", () => r()), child.kill("SIGTERM"))))).then(() => {}),
  };
}

function loader(config: object): Promise<{ calls: number; failed: number; seconds: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bun", [join(import.meta.dir, "lib", "load-worker.ts"), JSON.stringify(config)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (b) => (out += b));
    child.once("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load worker exited ${code}`))));
  });
}

const sims = await Promise.all(Array.from({ length: SIMULATORS }, () => spawnWithUrl("bun", ["bin/forge.ts", "policy-sim", "--listen", "127.0.0.1:0", "--json", "--quiet", "--chunk-delay-ms", CHUNK_DELAY_MS], { cwd: ROOT }, "policy-sim")));
const upstreams = sims.map((s) => `${s.url}/v1`);
const samples = new Map<number, { rps: number; cpuMsPerCall: number; failed: number; simCpu: number }[]>(SHARDS.map((n) => [n, []]));
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const n of SHARDS) {
      const root = mkdtempSync(join(tmpdir(), `forge-bench-shards-${n}-`));
      const shards = await startShards(n, upstreams, root);
      try {
        // Registered through shard 0: each answer names the owner's base URL.
        const targets = await Promise.all(
          Array.from({ length: ROLLOUTS }, async (_, i) => {
            const response = await fetch(`${shards.urls[0]}/control/rollouts`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ rollout_id: `bench.r${round}.${i}`, experiment: "bench", task_id: `t${i}` }) });
            const r = (await response.json()) as { openai_base_url: string; api_key: string };
            return { url: `${r.openai_base_url}/chat/completions`, key: r.api_key };
          }),
        );
        // Warm (JIT, connection pools), then measure.
        await Promise.all(Array.from({ length: LOADERS }, (_, l) => loader({ targets: targets.filter((_, i) => i % LOADERS === l), concurrency: 8, seconds: 2, body: BODY })));
        const cpu0 = shards.pids.map(cpuSeconds);
        const sim0 = sims.map((s) => cpuSeconds(s.child.pid!));
        const results = await Promise.all(Array.from({ length: LOADERS }, (_, l) => loader({ targets: targets.filter((_, i) => i % LOADERS === l), concurrency: Math.ceil(CONCURRENCY / LOADERS), seconds: SECONDS, body: BODY })));
        const calls = results.reduce((s, r) => s + r.calls, 0);
        const seconds = Math.max(...results.map((r) => r.seconds));
        const cpu = shards.pids.reduce((s, pid, i) => s + cpuSeconds(pid) - cpu0[i]!, 0);
        const simCpu = sims.reduce((s, sim, i) => s + cpuSeconds(sim.child.pid!) - sim0[i]!, 0) / seconds;
        samples.get(n)!.push({ rps: calls / seconds, cpuMsPerCall: (cpu * 1000) / Math.max(1, calls), failed: results.reduce((s, r) => s + r.failed, 0), simCpu });
        process.stderr.write(`round ${round + 1}/${ROUNDS}, ${n} shard${n > 1 ? "s" : ""}: ${(calls / seconds).toFixed(0)} calls/s\n`);
      } finally {
        await shards.stop();
        rmSync(root, { recursive: true, force: true });
      }
    }
  }
} finally {
  for (const s of sims) s.child.kill("SIGTERM");
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows = SHARDS.map((n) => {
  const list = samples.get(n)!;
  return { shards: n, rps: median(list.map((x) => x.rps)), cpuMsPerCall: median(list.map((x) => x.cpuMsPerCall)), failed: list.reduce((s, x) => s + x.failed, 0), simulatorCores: median(list.map((x) => x.simCpu)) };
});
const base = rows[0]!.rps;
if (has("json")) console.log(JSON.stringify({ cores: cpus().length, concurrency: CONCURRENCY, rollouts: ROLLOUTS, simulators: SIMULATORS, loaders: LOADERS, seconds: SECONDS, rounds: ROUNDS, rows: rows.map((r) => ({ ...r, ratio: r.rps / base })) }, null, 2));
else {
  console.log(`bench/shards: ${cpus().length} cores; ${CONCURRENCY} streams over ${ROLLOUTS} rollouts from ${LOADERS} load processes; ${SIMULATORS} simulators (${CHUNK_DELAY_MS} ms/chunk); medians of ${ROUNDS} interleaved rounds of ${SECONDS} s`);
  console.log("shards  calls/s  ratio  proxy CPU ms/call  simulator cores busy  failed");
  for (const r of rows) console.log(`${String(r.shards).padStart(6)}  ${r.rps.toFixed(0).padStart(7)}  ${(r.rps / base).toFixed(2).padStart(5)}  ${r.cpuMsPerCall.toFixed(3).padStart(17)}  ${r.simulatorCores.toFixed(2).padStart(20)}  ${String(r.failed).padStart(6)}`);
}
