/**
 * The recording proxy against nginx (a plain C reverse proxy) in front of the same upstream
 * (the policy simulator), in one run, printed as ratios to nginx:
 * throughput and p50/p99 added latency at 64 and 256 concurrent streams (50 chunks each) and
 * for non-streaming calls, bytes written and CPU per call, 200 KB prompts and a 4 MB screenshot.
 * The load generator is Debian's `wrk` (C); nginx and wrk are installed with apt-get if missing.
 *
 *   bun bench/nginx.ts [--seconds 3] [--repeat 3] [--chunk-delay-ms 10] [--json] [--only stream256,...]
 *                      [--profile DIR] [--fetch-limit N|default] [--floor]
 *
 * Rows: direct (wrk → simulator), nginx (wrk → nginx → simulator), forge (wrk → proxy, recording
 * on → simulator). "added" = that row's latency minus direct's. `--floor` adds two bare Bun
 * proxies (bench/lib/bun-floor-proxy.ts): bun-pipe (upstream body handed on natively) and
 * bun-touch (JS reads and writes every chunk, the least a recording proxy on Bun can do), so the
 * table separates what Bun costs from what the recording costs.
 */
import { mkdtempSync, rmSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startPolicySimulator } from "../simulator/index.ts";
import { ensureTools } from "./lib/tools.ts";
import { startNginx } from "./lib/nginx.ts";
import { runWrk } from "./lib/wrk.ts";
import { cpuSeconds, treeCpuSeconds } from "./lib/proc-cpu.ts";
import { forgeProxyAvailable, startForgeProxy, type RunningForgeProxy } from "./lib/forge-proxy.ts";
import { startFloorProxy, type RunningFloorProxy } from "./lib/bun-floor.ts";
import { benchFlags } from "./lib/flags.ts";
import { chatBody, PROMPT, PROMPT_200K, SCREENSHOT } from "./lib/bodies.ts";

const ROOT = resolve(import.meta.dir, "..");
const { flag, has } = benchFlags();
const SECONDS = Number(flag("seconds", "3"));
const REPEAT = Number(flag("repeat", "3"));
const CHUNK_DELAY_MS = Number(flag("chunk-delay-ms", "10"));
const JSON_OUT = has("json");
const ONLY = flag("only", "").split(",").filter(Boolean);
// --profile DIR: the proxy runs under `bun --cpu-prof --cpu-prof-md` and writes its profile to DIR on exit.
const PROFILE_DIR = flag("profile", "");
// Bun's fetch keeps at most 256 requests in flight per process unless this is set at start; the
// proxy's upstream calls are fetches, so past 256 streams they would queue (docs/performance.md).
const FETCH_LIMIT = flag("fetch-limit", "4096");
const FLOOR = has("floor");
const log = (line: string) => console.error(line);

interface Scenario {
  name: string;
  connections: number;
  body: string;
  /** What one call streams, for the chunk rate. */
  chunks: number;
}

const SCENARIOS: Scenario[] = [
  { name: "stream64", connections: 64, body: chatBody({ stream: true, prompt: PROMPT }), chunks: 50 },
  { name: "stream256", connections: 256, body: chatBody({ stream: true, prompt: PROMPT }), chunks: 50 },
  { name: "nonstream64", connections: 64, body: chatBody({ stream: false, prompt: PROMPT }), chunks: 1 },
  { name: "prompt200k", connections: 8, body: chatBody({ stream: false, prompt: PROMPT_200K }), chunks: 1 },
  { name: "screenshot4m", connections: 4, body: chatBody({ stream: false, prompt: "What is on the screen?", image: SCREENSHOT }), chunks: 1 },
].filter((s) => ONLY.length === 0 || ONLY.includes(s.name));

type Target = "direct" | "nginx" | "bun-pipe" | "bun-touch" | "forge";
interface Row {
  scenario: string;
  target: Target;
  rps: number;
  p50: number;
  p99: number;
  addedP50: number | null;
  addedP99: number | null;
  cpuMsPerCall: number | null;
  /** CPU of the simulator per call: the same work in every row, so a rise means it was starved or retried. */
  upstreamCpuMsPerCall: number;
  bytesPerCall: number | null;
  errors: number;
  requests: number;
}

function logBytes(dir: string): number {
  let total = 0;
  try {
    for (const name of readdirSync(join(dir, "log"))) total += statSync(join(dir, "log", name)).size;
  } catch {}
  return total;
}

const { nginx: nginxBin, wrk: wrkBin } = ensureTools(log);
const work = mkdtempSync(join(tmpdir(), "forge-bench-nginx-"));
const sim = await startPolicySimulator({ seed: 1, chunkDelayMs: CHUNK_DELAY_MS });
const simHostPort = sim.url.replace(/^http:\/\//, "");
const nginx = await startNginx({ bin: nginxBin, dir: join(work, "nginx"), upstream: simHostPort, workers: 2 });
const fetchEnv: Record<string, string> = FETCH_LIMIT === "default" ? {} : { BUN_CONFIG_MAX_HTTP_REQUESTS: FETCH_LIMIT };
const floors: { target: Target; proxy: RunningFloorProxy }[] = FLOOR
  ? [
      { target: "bun-pipe", proxy: await startFloorProxy(sim.url, "pipe", fetchEnv) },
      { target: "bun-touch", proxy: await startFloorProxy(sim.url, "touch", fetchEnv) },
    ]
  : [];
let proxy: RunningForgeProxy | null = null;
let proxyNote = "";
const rolloutPaths: string[] = [];
const rolloutHeaders: Record<string, string>[] = [];
if (forgeProxyAvailable(ROOT)) {
  try {
    proxy = await startForgeProxy({
      root: ROOT,
      dataDir: join(work, "data"),
      upstream: `${sim.url}/v1`,
      bunArgs: PROFILE_DIR ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${resolve(PROFILE_DIR)}`] : [],
      env: fetchEnv,
    });
    // 64 rollouts, each called in turn: the routes carry the rollout, the admin token is not needed on them.
    for (let i = 0; i < 64; i++) {
      const r = await proxy.register(`bench-${i}`);
      rolloutPaths.push(`/r/${r.rollout_id}/v1/chat/completions`);
      rolloutHeaders.push({ Authorization: `Bearer ${r.api_key}` });
    }
  } catch (error) {
    proxyNote = `forge proxy not measured: ${(error as Error).message.split("\n")[0]}`;
    await proxy?.stop();
    proxy = null;
  }
} else {
  proxyNote = "forge proxy not available in this checkout (proxy/cli.ts missing)";
}
if (proxyNote) log(proxyNote);
// A refused call shows what went wrong before the figures are trusted.
if (proxy) {
  const probe = await fetch(`${proxy.url}${rolloutPaths[0]}`, { method: "POST", headers: { ...rolloutHeaders[0], "content-type": "application/json" }, body: SCENARIOS[0]?.body ?? "{}" });
  const text = await probe.text();
  if (probe.status !== 200) log(`forge probe: HTTP ${probe.status} ${text.slice(0, 300)}`);
}

const rows: Row[] = [];
const started = performance.now();
try {
  for (const s of SCENARIOS) {
    const targets: { target: Target; base: string; paths: string[]; pathHeaders?: Record<string, string>[]; pid?: number; tree?: boolean }[] = [
      { target: "direct", base: sim.url, paths: ["/v1/chat/completions"] },
      { target: "nginx", base: nginx.url, paths: ["/v1/chat/completions"], pid: nginx.pid, tree: true },
    ];
    for (const f of floors) targets.push({ target: f.target, base: f.proxy.url, paths: ["/v1/chat/completions"], pid: f.proxy.pid });
    // Each rollout's route with its own key, as a harness sends it.
    if (proxy) targets.push({ target: "forge", base: proxy.url, paths: rolloutPaths, pathHeaders: rolloutHeaders, pid: proxy.pid });
    for (const t of targets) {
      // A short warm-up so connection set-up and JIT are not in the figures.
      await runWrk({ bin: wrkBin, dir: work, base: t.base, paths: t.paths, body: s.body, pathHeaders: t.pathHeaders, connections: s.connections, seconds: 1 });
    }
    // Rounds interleave the targets, so a neighbour's load on the shared cores hits all of them;
    // each figure is the median over the rounds.
    const samples = new Map<Target, Row[]>();
    for (let round = 0; round < REPEAT; round++) {
      for (const t of targets) {
        const cpu0 = t.pid ? (t.tree ? treeCpuSeconds(t.pid) : cpuSeconds(t.pid)) : 0;
        const bytes0 = t.target === "forge" ? logBytes(proxy!.dataDir) : 0;
        // The simulator runs in this process (the bench itself idles while wrk runs): its CPU.
        const sim0 = process.cpuUsage();
        const r = await runWrk({ bin: wrkBin, dir: work, base: t.base, paths: t.paths, body: s.body, pathHeaders: t.pathHeaders, connections: s.connections, seconds: SECONDS });
        // Records are written when a call ends; let the last ones land before reading the log size.
        if (t.target === "forge") await Bun.sleep(200);
        const simCpu = process.cpuUsage(sim0);
        const cpu = t.pid ? (t.tree ? treeCpuSeconds(t.pid) : cpuSeconds(t.pid)) - cpu0 : null;
        const bytes = t.target === "forge" ? logBytes(proxy!.dataDir) - bytes0 : null;
        const errors = r.errors.connect + r.errors.read + r.errors.write + r.errors.status + r.errors.timeout;
        const row: Row = {
          scenario: s.name,
          target: t.target,
          rps: r.rps,
          p50: r.p50,
          p99: r.p99,
          addedP50: null,
          addedP99: null,
          cpuMsPerCall: cpu === null ? null : (cpu * 1000) / Math.max(1, r.requests),
          upstreamCpuMsPerCall: (simCpu.user + simCpu.system) / 1000 / Math.max(1, r.requests),
          bytesPerCall: bytes === null ? null : bytes / Math.max(1, r.requests),
          errors,
          requests: r.requests,
        };
        samples.set(t.target, [...(samples.get(t.target) ?? []), row]);
        log(`${s.name.padEnd(13)} ${t.target.padEnd(9)} round ${round + 1}: ${r.rps.toFixed(0).padStart(6)} calls/s  p50 ${r.p50.toFixed(1)} ms  p99 ${r.p99.toFixed(1)} ms  errors ${errors}`);
      }
    }
    const med = (xs: (number | null)[]) => {
      const v = xs.filter((x): x is number => x !== null).sort((a, b) => a - b);
      return v.length === 0 ? null : v[v.length >> 1]!;
    };
    const direct = samples.get("direct")!;
    for (const t of targets) {
      const list = samples.get(t.target)!;
      const p50 = med(list.map((x) => x.p50))!;
      const p99 = med(list.map((x) => x.p99))!;
      rows.push({
        scenario: s.name,
        target: t.target,
        rps: med(list.map((x) => x.rps))!,
        p50,
        p99,
        addedP50: t.target === "direct" ? null : p50 - med(direct.map((x) => x.p50))!,
        addedP99: t.target === "direct" ? null : p99 - med(direct.map((x) => x.p99))!,
        cpuMsPerCall: med(list.map((x) => x.cpuMsPerCall)),
        upstreamCpuMsPerCall: med(list.map((x) => x.upstreamCpuMsPerCall))!,
        bytesPerCall: med(list.map((x) => x.bytesPerCall)),
        errors: list.reduce((a, x) => a + x.errors, 0),
        requests: list.reduce((a, x) => a + x.requests, 0),
      });
    }
  }
} finally {
  await proxy?.stop();
  for (const f of floors) f.proxy.stop();
  await nginx.stop();
  await sim.stop();
  rmSync(work, { recursive: true, force: true });
}

const fmt = (x: number | null, digits = 1) => (x === null ? "—" : x.toFixed(digits));
if (JSON_OUT) {
  console.log(JSON.stringify({ seconds: SECONDS, chunkDelayMs: CHUNK_DELAY_MS, rows, goals: goalRows(rows), note: proxyNote || undefined }, null, 2));
} else {
  console.log(`\nbench/nginx: wrk (median of ${REPEAT} interleaved rounds of ${SECONDS}s) → {direct | nginx 2 workers | forge proxy, recording on} → policy simulator (${CHUNK_DELAY_MS} ms/chunk)`);
  console.log(`${"scenario".padEnd(13)} ${"target".padEnd(9)} calls/s  ×nginx   p50 ms   p99 ms  +p50 ms  +p99 ms  cpu ms/call  ×nginx  sim ms/call  bytes/call  errors`);
  for (const r of rows) {
    const n = rows.find((x) => x.scenario === r.scenario && x.target === "nginx");
    const ratio = n ? r.rps / n.rps : null;
    const cpuRatio = n && r.cpuMsPerCall !== null && n.cpuMsPerCall ? r.cpuMsPerCall / n.cpuMsPerCall : null;
    console.log(
      `${r.scenario.padEnd(13)} ${r.target.padEnd(9)} ${fmt(r.rps, 0).padStart(7)} ${fmt(ratio, 2).padStart(7)} ${fmt(r.p50).padStart(8)} ${fmt(r.p99).padStart(8)} ${fmt(r.addedP50).padStart(8)} ${fmt(r.addedP99).padStart(8)} ${fmt(r.cpuMsPerCall, 3).padStart(12)} ${fmt(cpuRatio, 2).padStart(7)} ${fmt(r.upstreamCpuMsPerCall, 3).padStart(12)} ${fmt(r.bytesPerCall, 0).padStart(11)} ${String(r.errors).padStart(7)}`,
    );
  }
  if (proxyNote) console.log(`\n${proxyNote}`);
  console.log(`\n(${((performance.now() - started) / 1000).toFixed(0)} s; a stream is ${CHUNK_DELAY_MS * 50} ms of upstream decode; CPU of nginx is master + workers)`);
  const goals = goalRows(rows);
  if (goals.length > 0) {
    console.log(`\ngoals (issues 19 and 32), forge's figures from the table above:`);
    console.log(`${"scenario".padEnd(13)} ${"goal".padEnd(44)} ${"forge".padEnd(28)} met`);
    for (const g of goals) console.log(`${g.scenario.padEnd(13)} ${g.goal.padEnd(44)} ${g.figure.padEnd(28)} ${g.met === null ? "— (run with --floor)" : g.met ? "yes" : "NO"}`);
  }
}

/** The goals per scenario, read off the rows: throughput and CPU against nginx, streams against the bare-Bun floor. */
function goalRows(all: Row[]): { scenario: string; goal: string; figure: string; met: boolean | null }[] {
  const out: { scenario: string; goal: string; figure: string; met: boolean | null }[] = [];
  const get = (scenario: string, target: Target) => all.find((r) => r.scenario === scenario && r.target === target);
  for (const scenario of [...new Set(all.map((r) => r.scenario))]) {
    const forge = get(scenario, "forge");
    const nginx = get(scenario, "nginx");
    if (!forge || !nginx) continue;
    const rps = forge.rps / nginx.rps;
    const cpu = forge.cpuMsPerCall !== null && nginx.cpuMsPerCall ? forge.cpuMsPerCall / nginx.cpuMsPerCall : null;
    if (scenario === "prompt200k" || scenario === "screenshot4m") {
      out.push({ scenario, goal: "≥ 0.8 × nginx calls/s", figure: `${rps.toFixed(2)} ×`, met: rps >= 0.8 });
      out.push({ scenario, goal: "≤ 4 × nginx CPU per call", figure: cpu === null ? "—" : `${cpu.toFixed(1)} ×`, met: cpu === null ? null : cpu <= 4 });
    } else if (scenario === "nonstream64") {
      out.push({ scenario, goal: "≥ 0.8 × nginx calls/s", figure: `${rps.toFixed(2)} ×`, met: rps >= 0.8 });
    } else if (scenario === "stream256") {
      const floor = get(scenario, "bun-touch");
      const ratio = floor && forge.cpuMsPerCall !== null && floor.cpuMsPerCall ? forge.cpuMsPerCall / floor.cpuMsPerCall : null;
      out.push({ scenario, goal: "≤ 1.2 × bare-Bun floor (bun-touch) CPU/call", figure: ratio === null ? "—" : `${ratio.toFixed(2)} × (${fmt(forge.cpuMsPerCall, 2)} / ${fmt(floor!.cpuMsPerCall, 2)} ms)`, met: ratio === null ? null : ratio <= 1.2 });
    }
  }
  // Issue 32: every row within 1.3 × the bare-Bun floor's CPU per call and at ≥ 0.9 × its calls/s.
  for (const scenario of [...new Set(all.map((r) => r.scenario))]) {
    const forge = get(scenario, "forge");
    const floor = get(scenario, "bun-touch");
    if (!forge) continue;
    const cpu = floor && forge.cpuMsPerCall !== null && floor.cpuMsPerCall ? forge.cpuMsPerCall / floor.cpuMsPerCall : null;
    out.push({ scenario, goal: "≤ 1.3 × bare-Bun floor CPU/call (issue 32)", figure: cpu === null ? "—" : `${cpu.toFixed(2)} × (${fmt(forge.cpuMsPerCall, 2)} / ${fmt(floor!.cpuMsPerCall, 2)} ms)`, met: cpu === null ? null : cpu <= 1.3 });
    const rps = floor && floor.rps > 0 ? forge.rps / floor.rps : null;
    out.push({ scenario, goal: "≥ 0.9 × bare-Bun floor calls/s (issue 32)", figure: rps === null ? "—" : `${rps.toFixed(2)} ×`, met: rps === null ? null : rps >= 0.9 });
  }
  return out;
}
