/**
 * A/B of the recording proxy's CPU per call: this checkout against another commit, both started
 * as `forge proxy` processes in front of one policy simulator, measured in interleaved rounds of
 * the same load (the machine's speed drifts by tens of percent within minutes, so only figures
 * taken side by side compare). Prints each round and the median ratio this / base.
 *
 *   bun bench/ab.ts [--base REF] [--scenario stream256|stream64|nonstream|prompt200k|screenshot4m]
 *                   [--rounds 4] [--seconds 5] [--calls 30]
 *
 * Streams are driven by wrk (many connections); the large-body scenarios by sequential calls, so
 * their per-call CPU is not mixed with queueing. The base commit is checked out in a temporary
 * git worktree that shares this checkout's node_modules, and removed afterwards.
 */
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnSync } from "node:child_process";
import { startPolicySimulator } from "../simulator/index.ts";
import { startForgeProxy, type RunningForgeProxy } from "./lib/forge-proxy.ts";
import { cpuSeconds } from "./lib/proc-cpu.ts";
import { ensureTools } from "./lib/tools.ts";
import { runWrk } from "./lib/wrk.ts";
import { benchFlags } from "./lib/flags.ts";
import { chatBody, PROMPT, PROMPT_200K, SCREENSHOT } from "./lib/bodies.ts";

const ROOT = resolve(import.meta.dir, "..");
const { flag } = benchFlags();
const BASE = flag("base", "HEAD~1");
const SCENARIO = flag("scenario", "stream256");
const ROUNDS = Number(flag("rounds", "4"));
const SECONDS = Number(flag("seconds", "5"));
const CALLS = Number(flag("calls", "30"));

const SCENARIOS: Record<string, { body: string; connections?: number }> = {
  stream256: { body: chatBody({ stream: true, prompt: PROMPT }), connections: 256 },
  stream64: { body: chatBody({ stream: true, prompt: PROMPT }), connections: 64 },
  nonstream: { body: chatBody({ stream: false, prompt: PROMPT }) },
  prompt200k: { body: chatBody({ stream: false, prompt: PROMPT_200K }) },
  screenshot4m: { body: chatBody({ stream: false, prompt: "What is on the screen?", image: SCREENSHOT }) },
};
const scenario = SCENARIOS[SCENARIO];
if (!scenario) {
  console.error(`bench/ab: unknown --scenario ${SCENARIO}; one of ${Object.keys(SCENARIOS).join(", ")}`);
  process.exit(2);
}

const git = (...a: string[]) => {
  const r = spawnSync("git", a, { cwd: ROOT, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${a.join(" ")}: ${r.stderr.trim()}`);
  return r.stdout.trim();
};
const baseSha = git("rev-parse", "--verify", `${BASE}^{commit}`);
const work = mkdtempSync(join(tmpdir(), "forge-bench-ab-"));
const baseRoot = join(work, "base");
git("worktree", "add", "--detach", baseRoot, baseSha);
symlinkSync(join(ROOT, "node_modules"), join(baseRoot, "node_modules"));

const sim = await startPolicySimulator({ seed: 1, chunkDelayMs: scenario.connections ? 10 : 0 });
const wrk = scenario.connections ? ensureTools(console.error).wrk : "";
type Side = { name: string; proxy: RunningForgeProxy; paths: string[]; headers: Record<string, string>[]; perCall: number[] };
const sides: Side[] = [];
try {
  for (const [name, root] of [["base", baseRoot], ["this", ROOT]] as const) {
    const proxy = await startForgeProxy({ root, dataDir: join(work, `data-${name}`), upstream: `${sim.url}/v1`, env: { BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" } });
    const side: Side = { name, proxy, paths: [], headers: [], perCall: [] };
    for (let i = 0; i < 64; i++) {
      const r = await proxy.register(`ab-${i}`);
      side.paths.push(`/r/${r.rollout_id}/v1/chat/completions`);
      side.headers.push({ Authorization: `Bearer ${r.api_key}` });
    }
    sides.push(side);
  }

  /** One measured batch of calls through `side`; returns proxy CPU ms per call. */
  const measure = async (side: Side, warmUp: boolean): Promise<number> => {
    const cpu0 = cpuSeconds(side.proxy.pid);
    let calls = 0;
    if (scenario.connections) {
      const r = await runWrk({ bin: wrk, dir: work, base: side.proxy.url, paths: side.paths, pathHeaders: side.headers, body: scenario.body, connections: scenario.connections, seconds: warmUp ? 1 : SECONDS });
      calls = r.requests;
    } else {
      for (let i = 0; i < (warmUp ? 3 : CALLS); i++) {
        const res = await fetch(side.proxy.url + side.paths[i % 64], { method: "POST", headers: { ...side.headers[i % 64], "content-type": "application/json" }, body: scenario.body });
        const answer = await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${side.name}: HTTP ${res.status}: ${new TextDecoder().decode(answer).slice(0, 300)}`);
        calls++;
      }
    }
    return ((cpuSeconds(side.proxy.pid) - cpu0) * 1000) / Math.max(1, calls);
  };

  for (const side of sides) await measure(side, true);
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which side goes first, so a drift in the machine's speed hits both.
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const ms = await measure(side, false);
      side.perCall.push(ms);
      console.error(`round ${round + 1} ${side.name.padEnd(4)} ${ms.toFixed(2)} ms CPU per call`);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  const [base, self] = sides as [Side, Side];
  console.log(`bench/ab ${SCENARIO}: proxy CPU per call, median of ${ROUNDS} interleaved rounds`);
  console.log(`  base ${baseSha.slice(0, 10)}  ${median(base.perCall).toFixed(2)} ms  (${base.perCall.map((x) => x.toFixed(2)).join(" ")})`);
  console.log(`  this checkout    ${median(self.perCall).toFixed(2)} ms  (${self.perCall.map((x) => x.toFixed(2)).join(" ")})`);
  console.log(`  this / base      ${(median(self.perCall) / median(base.perCall)).toFixed(2)}`);
} finally {
  for (const side of sides) await side.proxy.stop();
  await sim.stop();
  spawnSync("git", ["worktree", "remove", "--force", baseRoot], { cwd: ROOT });
  rmSync(work, { recursive: true, force: true });
}
