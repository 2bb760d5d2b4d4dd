/**
 * The recording proxy (train mode, recording on) against the same load sent directly to the
 * policy simulator, in one run: calls/s and p50/p99 latency of streaming chat calls at 1, 64
 * and 256 concurrent streams, and the latency the proxy adds. Simulator and proxy run as their
 * own processes (`forge policy-sim`, `forge proxy`); the load generator is this process.
 *
 *   bun bench/proxy.ts [--seconds 5] [--chunk-delay-ms 2] [--json]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startForgeProxy } from "./lib/forge-proxy.ts";
import { spawnWithUrl } from "./lib/spawn-url.ts";
import { cpuSeconds } from "./lib/proc-cpu.ts";
import { benchFlags } from "./lib/flags.ts";

const ROOT = resolve(import.meta.dir, "..");
const { flag, has } = benchFlags();
const SECONDS = Number(flag("seconds", "5"));
const CHUNK_DELAY_MS = flag("chunk-delay-ms", "2");
const LEVELS = [1, 64, 256];
// About 40 completion tokens (the simulator echoes the prompt): one streamed chunk per token.
const PROMPT = "Please summarise the following list of words back to me: " + Array.from({ length: 30 }, (_, i) => `w${i}`).join(" ");

type Result = { calls: number; failed: number; seconds: number; latencies: number[] };

async function startSimulator(): Promise<{ url: string; stop(): void }> {
  const { child, url } = await spawnWithUrl("bun", ["bin/forge.ts", "policy-sim", "--listen", "127.0.0.1:0", "--json", "--quiet", "--chunk-delay-ms", CHUNK_DELAY_MS], { cwd: ROOT }, "policy-sim");
  return { url, stop: () => child.kill("SIGTERM") };
}

const HARNESS_BODY = JSON.stringify({ model: "qwen3", stream: true, messages: [{ role: "user", content: PROMPT }] });
// Direct calls ask the simulator for what the proxy asks it for in train mode, so both rows
// cost the upstream the same and the difference is the proxy's.
const TRAIN_BODY = JSON.stringify({ model: "qwen3", stream: true, messages: [{ role: "user", content: PROMPT }], return_token_ids: true, logprobs: true, stream_options: { include_usage: true } });

async function load(concurrency: number, target: (worker: number) => { url: string; key: string; body: string }): Promise<Result> {
  const latencies: number[] = [];
  let failed = 0;
  const started = performance.now();
  const until = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      const { url, key, body } = target(w);
      while (performance.now() < until) {
        const t0 = performance.now();
        try {
          const response = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
          const text = await response.text();
          if (response.status !== 200 || !text.endsWith("data: [DONE]\n\n")) failed++;
          else latencies.push(performance.now() - t0);
        } catch {
          failed++;
        }
      }
    }),
  );
  return { calls: latencies.length, failed, seconds: (performance.now() - started) / 1000, latencies };
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

const sim = await startSimulator();
const dataDir = mkdtempSync(join(tmpdir(), "forge-bench-proxy-"));
const proxy = await startForgeProxy({ root: ROOT, dataDir, upstream: `${sim.url}/v1` });
try {
  const keys = await Promise.all(Array.from({ length: Math.max(...LEVELS) }, (_, i) => proxy.register(`bench-${i}`)));
  const rows: Record<string, number | string>[] = [];
  // Warm both paths (JIT, connection pools) before measuring.
  await load(8, () => ({ url: `${sim.url}/v1/chat/completions`, key: "sim", body: TRAIN_BODY }));
  await load(8, (w) => ({ url: `${proxy.url}/r/${keys[w]!.rollout_id}/v1/chat/completions`, key: keys[w]!.api_key, body: HARNESS_BODY }));
  for (const c of LEVELS) {
    process.stderr.write(`bench: ${c} concurrent streams, direct then through the proxy (${SECONDS} s each)...\n`);
    const direct = await load(c, () => ({ url: `${sim.url}/v1/chat/completions`, key: "sim", body: TRAIN_BODY }));
    const cpuBefore = cpuSeconds(proxy.pid);
    const viaProxy = await load(c, (w) => ({ url: `${proxy.url}/r/${keys[w]!.rollout_id}/v1/chat/completions`, key: keys[w]!.api_key, body: HARNESS_BODY }));
    const proxyCpuMsPerCall = ((cpuSeconds(proxy.pid) - cpuBefore) * 1000) / Math.max(1, viaProxy.calls);
    const d = { rps: direct.calls / direct.seconds, p50: pct(direct.latencies, 50), p99: pct(direct.latencies, 99) };
    const p = { rps: viaProxy.calls / viaProxy.seconds, p50: pct(viaProxy.latencies, 50), p99: pct(viaProxy.latencies, 99) };
    rows.push({
      streams: c,
      direct_calls_per_s: +d.rps.toFixed(1),
      proxy_calls_per_s: +p.rps.toFixed(1),
      throughput_ratio: +(p.rps / d.rps).toFixed(3),
      direct_p50_ms: +d.p50.toFixed(2),
      proxy_p50_ms: +p.p50.toFixed(2),
      added_p50_ms: +(p.p50 - d.p50).toFixed(2),
      direct_p99_ms: +d.p99.toFixed(2),
      proxy_p99_ms: +p.p99.toFixed(2),
      added_p99_ms: +(p.p99 - d.p99).toFixed(2),
      proxy_cpu_ms_per_call: +proxyCpuMsPerCall.toFixed(2),
      failed: direct.failed + viaProxy.failed,
    });
  }
  if (has("json")) console.log(JSON.stringify({ seconds: SECONDS, chunk_delay_ms: Number(CHUNK_DELAY_MS), rows }));
  else {
    console.log(`forge proxy (train mode, recording on) vs direct to the policy simulator; streaming chat, ~40 chunks, ${CHUNK_DELAY_MS} ms between chunks, ${SECONDS} s per cell`);
    const cols = Object.keys(rows[0]!);
    console.log(cols.join("  "));
    for (const r of rows) console.log(cols.map((k) => String(r[k]).padStart(k.length)).join("  "));
  }
} finally {
  await proxy.stop();
  sim.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
