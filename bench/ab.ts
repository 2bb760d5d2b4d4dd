/**
 * A/B of the recording proxy's CPU per call: this checkout against another commit, both started
 * as `forge proxy` processes in front of one policy simulator, measured in interleaved rounds of
 * the same load (the machine's speed drifts by tens of percent within minutes, so only figures
 * taken side by side compare). Prints each round and the median ratio this / base.
 *
 *   bun bench/ab.ts [--base REF] [--scenario stream256|stream64|nonstream|prompt200k|screenshot4m|toolloop]
 *                   [--rounds 4] [--seconds 5] [--calls 30] [--conversations 8 --concurrency 4]
 *                   [--token-in] [--modes] [--engine vllm|sglang [--incremental-streaming]] [--token-in-route auto|completions|generate]
 *                   [--profile DIR] [--perf DIR] [--threads] [--warm-up 13000] [--turns 13] [--chunk-delay-ms N] [--keep-open] [--this-env KEY=VALUE]
 *
 * Streams are driven by wrk (many connections); the large-body scenarios by sequential calls, so
 * their per-call CPU is not mixed with queueing. The base commit is checked out in a temporary
 * git worktree that shares this checkout's node_modules, and removed afterwards.
 *
 * `toolloop` is a multi-turn tool-calling conversation (bench/lib/tool-loop.ts: 13 streamed calls
 * per conversation, the history growing to ~30 KB), `--conversations` per round on each of
 * `--concurrency` workers, each conversation its own rollout (8 × 4: ~420 calls a side a
 * round, ~0.4 s of CPU, which the kernel's 10 ms ticks resolve to ±2.5 %; 32 for ±0.6 %).
 * `--token-in` runs both proxies in token-in mode (`forge proxy --token-in --model-dir qwen3`,
 * docs/token-in.md); `--modes` compares this checkout with itself instead of another commit:
 * engine mode (the base side) against token-in mode (this side), in one run. `--engine sglang`
 * has the simulator speak SGLang 0.5.23 (token-in then sends `/generate`) and starts the proxies
 * with `--engine sglang` (`--incremental-streaming`: as started with
 * `--incremental-streaming-output`, each streamed event holding only what is new); the default
 * is vLLM 0.33.0. `--token-in-route completions|generate|auto` starts this side's token-in proxy
 * with it (the base side keeps its commit's default: `auto`, which finds vLLM's
 * `/inference/v1/generate` on the simulator, or `/v1/completions` before it): with `--base HEAD
 * --token-in --token-in-route completions` the two routes against each other, with `--modes
 * --token-in-route completions` the completions route against engine mode. The route each
 * token-in side took is printed with the figures. `--profile DIR` runs the proxies under `bun --cpu-prof --cpu-prof-md`, each
 * side writing its profile to DIR/base or DIR/this on exit.
 * `--perf DIR` runs them under `perf record` with JSC's jitdump (DIR/base.data, DIR/base-jit,
 * and the same for this; the CPU figures then include the sampling's cost); `bun bench/perf-report.ts
 * DIR` then charges each sample to the JS function it is in or under, side by side.
 * `--turns N` (toolloop; default 13) makes each conversation N calls long: the tool calls again
 * in turn, the history growing by a ~1.5 KB tool result a call (60 turns: ~100 KB, ~25k tokens
 * at the end), what a long agent rollout costs a call.
 * `--chunk-delay-ms N` has the simulator pause N ms between a stream's chunks, as an engine
 * decoding a token at a time does (default: none for toolloop, 10 for the streams wrk drives).
 * Without a pause the simulator writes an answer's events at once and a proxy reads many of them
 * in one read, which token-in derenders as one step (proxy/token-in/chat-answer.ts); with one, a
 * read holds about one event and token-in pays for each.
 * `--warm-up CALLS` (toolloop; default 13000) runs unmeasured rounds of the same load first until
 * each side has served that many calls: JSC compiles a token-in proxy's per-call code to its top
 * tier for about that long, and a training run's proxy serves millions of calls
 * (`--warm-up 0`: measure from the first round, the compiles included). Each batch's tool-loop
 * rollouts are finished after its CPU is read, as a run's executor finishes each rollout, so
 * that a proxy holds the rollouts in flight and not every conversation of the run: with them
 * kept open (`--keep-open`) the heap grows by each round's conversations and the CPU per call
 * grows with it (the collector marks them all again), a figure that depends on how long the
 * bench ran.
 * `--this-env KEY=VALUE` starts this side's proxy with one more environment variable (with `--base
 * HEAD`: a runtime setting, such as an allocator option, against the same commit without it).
 * `--threads` also prints each side's CPU per call by thread (the main thread "bun", JSC's JIT
 * and collector helpers, Bun's HTTP client, mimalloc's scavenger), summed over the measured
 * rounds from /proc: where the per-call figure's difference sits, without a sampler's own cost.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnSync } from "node:child_process";
import { startPolicySimulator } from "../simulator/index.ts";
import { startForgeProxy, type RunningForgeProxy } from "./lib/forge-proxy.ts";
import { cpuSeconds, threadCpuSeconds } from "./lib/proc-cpu.ts";
import { ensureTools } from "./lib/tools.ts";
import { runWrk } from "./lib/wrk.ts";
import { baseWorktree } from "./lib/base-worktree.ts";
import { benchFlags } from "./lib/flags.ts";
import { chatBody, PROMPT, PROMPT_200K, SCREENSHOT } from "./lib/bodies.ts";
import { runToolLoop, toolLoopScript, TOOL_LOOP_CALLS } from "./lib/tool-loop.ts";

const ROOT = resolve(import.meta.dir, "..");
const { flag, has } = benchFlags();
const BASE = flag("base", "HEAD~1");
const MODES = has("modes");
const KEEP_OPEN = has("keep-open");
const TOKEN_IN_BOTH = has("token-in");
const PROFILE_DIR = flag("profile", "");
const THREADS = has("threads");
const PERF_DIR = flag("perf", "") && resolve(flag("perf", ""));
if (PERF_DIR && spawnSync("perf", ["--version"]).status !== 0) {
  console.error("bench/ab: --perf needs Linux perf on the PATH (Debian: apt-get install linux-perf)");
  process.exit(2);
}
/** Where a side's perf data and jitdump go. */
const perfRecording = (name: string) => {
  const jitDir = join(PERF_DIR, `${name}-jit`);
  mkdirSync(jitDir, { recursive: true });
  return { data: join(PERF_DIR, `${name}.data`), jitDir };
};
const CONVERSATIONS = Number(flag("conversations", "8"));
const CONCURRENCY = Number(flag("concurrency", "4"));
const ENGINE = flag("engine", "vllm");
if (ENGINE !== "vllm" && ENGINE !== "sglang") {
  console.error(`bench/ab: --engine must be vllm or sglang, got "${ENGINE}"`);
  process.exit(2);
}
const INCREMENTAL = has("incremental-streaming");
if (INCREMENTAL && ENGINE !== "sglang") {
  console.error("bench/ab: --incremental-streaming is SGLang's --incremental-streaming-output: it needs --engine sglang");
  process.exit(2);
}
const TOKEN_IN_ARGS = ["--token-in", "--model-dir", "qwen3", "--max-model-len", "131072"];
const ROUTE = flag("token-in-route", "");
/** `--this-env KEY=VALUE`: an environment variable this side's proxy starts with (a runtime setting A/B'd against the same commit without it). */
const THIS_ENV_FLAG = flag("this-env", "");
const thisEnvMatch = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(THIS_ENV_FLAG);
if (THIS_ENV_FLAG && !thisEnvMatch) {
  console.error(`bench/ab: --this-env takes KEY=VALUE, got ${JSON.stringify(THIS_ENV_FLAG)}`);
  process.exit(2);
}
const THIS_ENV: Record<string, string> = thisEnvMatch ? { [thisEnvMatch[1]!]: thisEnvMatch[2]! } : {};
if (ROUTE && (ENGINE !== "vllm" || !["auto", "completions", "generate"].includes(ROUTE))) {
  console.error(`bench/ab: --token-in-route takes auto, completions or generate, with --engine vllm; got "${ROUTE}" with ${ENGINE}`);
  process.exit(2);
}
const SCENARIO = flag("scenario", "stream256");
const ROUNDS = Number(flag("rounds", "4"));
const SECONDS = Number(flag("seconds", "5"));
const CALLS = Number(flag("calls", "30"));
// JSC keeps compiling a token-in proxy's per-call code to its top tier for its first ~13,000
// tool-loop calls (docs/performance.md, "eleventh session"): the rounds measure after that.
const WARM_UP = Number(flag("warm-up", SCENARIO === "toolloop" ? "13000" : "0"));
/** Model calls a tool-loop conversation makes (bench/lib/tool-loop.ts, toolLoopScript). */
const TURNS = Number(flag("turns", String(TOOL_LOOP_CALLS)));
/** The simulator's pause between stream chunks (ms); by default the stream scenarios driven by connections pause 10, the others none. */
const CHUNK_DELAY_FLAG = flag("chunk-delay-ms", "");
const CHUNK_DELAY_MS = CHUNK_DELAY_FLAG === "" ? -1 : Number(CHUNK_DELAY_FLAG);
if (CHUNK_DELAY_FLAG !== "" && !(CHUNK_DELAY_MS >= 0)) {
  console.error(`bench/ab: --chunk-delay-ms takes milliseconds (0 or more), got ${JSON.stringify(CHUNK_DELAY_FLAG)}`);
  process.exit(2);
}
if (TURNS !== TOOL_LOOP_CALLS && SCENARIO !== "toolloop") {
  console.error("bench/ab: --turns counts a tool loop's calls: it needs --scenario toolloop");
  process.exit(2);
}
if (WARM_UP > 0 && SCENARIO !== "toolloop") {
  console.error("bench/ab: --warm-up counts tool-loop calls: it needs --scenario toolloop");
  process.exit(2);
}

const SCENARIOS: Record<string, { body: string; connections?: number; toolLoop?: boolean }> = {
  stream256: { body: chatBody({ stream: true, prompt: PROMPT }), connections: 256 },
  stream64: { body: chatBody({ stream: true, prompt: PROMPT }), connections: 64 },
  nonstream: { body: chatBody({ stream: false, prompt: PROMPT }) },
  prompt200k: { body: chatBody({ stream: false, prompt: PROMPT_200K }) },
  screenshot4m: { body: chatBody({ stream: false, prompt: "What is on the screen?", image: SCREENSHOT }) },
  toolloop: { body: "", toolLoop: true },
};
const scenario = SCENARIOS[SCENARIO];
if (!scenario) {
  console.error(`bench/ab: unknown --scenario ${SCENARIO}; one of ${Object.keys(SCENARIOS).join(", ")}`);
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), "forge-bench-ab-"));
// --modes: both sides are this checkout, in engine and token-in mode.
const baseTree = MODES ? undefined : baseWorktree(ROOT, BASE, "ab");
const baseRoot = baseTree?.root ?? ROOT;
const modeOf = (name: "base" | "this") => (TOKEN_IN_BOTH || (MODES && name === "this") ? "token-in" : "engine");

const sim = await startPolicySimulator({ seed: 1, engine: ENGINE, incrementalStreamingOutput: INCREMENTAL, chunkDelayMs: CHUNK_DELAY_MS >= 0 ? CHUNK_DELAY_MS : scenario.connections ? 10 : 0, ...(scenario.toolLoop ? { script: toolLoopScript(TURNS) } : {}) });
const wrk = scenario.connections ? ensureTools(console.error).wrk : "";
type Side = { name: string; proxy: RunningForgeProxy; paths: string[]; headers: Record<string, string>[]; perCall: number[]; threads: Map<string, number>; calls: number };
const sides: Side[] = [];
try {
  for (const [name, root] of [["base", baseRoot], ["this", ROOT]] as const) {
    const proxy = await startForgeProxy({
      root,
      dataDir: join(work, `data-${name}`),
      upstream: `${sim.url}/v1`,
      env: { BUN_CONFIG_MAX_HTTP_REQUESTS: "4096", ...(name === "this" ? THIS_ENV : {}) },
      extraArgs: [...(modeOf(name) === "token-in" ? [...TOKEN_IN_ARGS, ...(ROUTE && name === "this" ? ["--token-in-route", ROUTE] : [])] : []), "--engine", ENGINE],
      bunArgs: PROFILE_DIR ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${resolve(PROFILE_DIR, name)}`] : [],
      ...(PERF_DIR ? { perf: perfRecording(name) } : {}),
    });
    const side: Side = { name, proxy, paths: [], headers: [], perCall: [], threads: new Map(), calls: 0 };
    for (let i = 0; i < (scenario.toolLoop ? 0 : 64); i++) {
      const r = await proxy.register(`ab-${i}`);
      side.paths.push(`/r/${r.rollout_id}/v1/chat/completions`);
      side.headers.push({ Authorization: `Bearer ${r.api_key}` });
    }
    sides.push(side);
  }

  /** Adds the CPU each thread of `side`'s proxy used since `before` to its totals (--threads). */
  const addThreads = (side: Side, before: Map<string, number>, calls: number) => {
    const round: string[] = [];
    for (const [name, s] of threadCpuSeconds(side.proxy.pid)) {
      const used = s - (before.get(name) ?? 0);
      side.threads.set(name, (side.threads.get(name) ?? 0) + used);
      if (used > 0) round.push(`${name} ${((used * 1e6) / Math.max(1, calls)).toFixed(0)}`);
    }
    side.calls += calls;
    console.error(`  ${side.name} µs per call by thread: ${round.join(", ")}`);
  };

  /** One measured batch of calls through `side`; returns proxy CPU ms per call. */
  const measure = async (side: Side, warmUp: boolean, counted = !warmUp): Promise<number> => {
    // Each tool-loop conversation is its own rollout, registered before the CPU is read.
    const rollouts = scenario.toolLoop ? await Promise.all(Array.from({ length: CONCURRENCY * (warmUp ? 1 : CONVERSATIONS) }, (_, i) => side.proxy.register(`toolloop-${i}`))) : [];
    const cpu0 = cpuSeconds(side.proxy.pid);
    const threadsStart = THREADS && counted ? threadCpuSeconds(side.proxy.pid) : undefined;
    let calls = 0;
    if (scenario.toolLoop) {
      const counts = await Promise.all(
        Array.from({ length: CONCURRENCY }, async (_, w) => {
          let n = 0;
          for (let c = w; c < rollouts.length; c += CONCURRENCY) n += await runToolLoop(`${side.proxy.url}/r/${rollouts[c]!.rollout_id}/v1/chat/completions`, rollouts[c]!.api_key, { stream: true, maxCalls: TURNS });
          return n;
        }),
      );
      calls = counts.reduce((a, b) => a + b, 0);
    } else if (scenario.connections) {
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
    const ms = ((cpuSeconds(side.proxy.pid) - cpu0) * 1000) / Math.max(1, calls);
    if (threadsStart) addThreads(side, threadsStart, calls);
    // The batch's rollouts finished, as a run's executor finishes each once its verifier ran,
    // after the CPU is read (a finish is no model call): the proxy then holds only the rollouts
    // of the batch in flight, not every conversation the bench ever ran (--keep-open).
    if (!KEEP_OPEN) for (let i = 0; i < rollouts.length; i += 16) await Promise.all(rollouts.slice(i, i + 16).map((r) => side.proxy.finish(r.rollout_id)));
    return ms;
  };

  for (const side of sides) await measure(side, true);
  if (WARM_UP > 0) {
    // Unmeasured rounds of the same load until each side has served WARM_UP calls.
    const perRound = CONVERSATIONS * CONCURRENCY * TURNS;
    const rounds = Math.ceil(WARM_UP / perRound);
    console.error(`bench/ab: warming up: ${rounds} unmeasured round(s), ~${rounds * perRound} calls a side (--warm-up ${WARM_UP})`);
    for (let i = 0; i < rounds; i++) for (const side of sides) await measure(side, false, false);
  }
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which side goes first, so a drift in the machine's speed hits both.
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const ms = await measure(side, false);
      side.perCall.push(ms);
      console.error(`round ${round + 1} ${side.name.padEnd(4)} ${ms.toFixed(2)} ms CPU per call`);
    }
  }
  /** The route a token-in side's calls took: its flag, or what `auto` logged it found. */
  const routeTaken = (side: Side) => {
    if (ROUTE && ROUTE !== "auto" && side.name === "this") return `${ROUTE === "generate" ? "/inference/v1/generate" : "/v1/completions"} (--token-in-route ${ROUTE})`;
    const found = /token-in \(--token-in-route auto\): .*?(token-in calls go (?:there|to \/v1\/completions))/.exec(side.proxy.output())?.[1];
    return found === undefined ? "/v1/completions (its commit's default)" : found.endsWith("there") ? "/inference/v1/generate (auto: the default)" : "/v1/completions (auto: the default)";
  };
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  const [base, self] = sides as [Side, Side];
  const label = (name: "base" | "this") => (MODES ? `${modeOf(name)} mode`.padEnd(16) : name === "base" ? `base ${baseTree!.sha.slice(0, 10)}` : "this checkout   ");
  console.log(`bench/ab ${SCENARIO}: proxy CPU per call, median of ${ROUNDS} interleaved rounds${MODES ? ", this checkout in both modes" : TOKEN_IN_BOTH ? ", both in token-in mode" : ""}`);
  console.log(`  ${label("base")}  ${median(base.perCall).toFixed(2)} ms  (${base.perCall.map((x) => x.toFixed(2)).join(" ")})`);
  console.log(`  ${label("this")}  ${median(self.perCall).toFixed(2)} ms  (${self.perCall.map((x) => x.toFixed(2)).join(" ")})`);
  for (const side of sides) if (modeOf(side.name as "base" | "this") === "token-in" && ENGINE === "vllm") console.log(`  ${label(side.name as "base" | "this").trim()}: token-in route ${routeTaken(side)}`);
  const ratio = median(self.perCall) / median(base.perCall);
  // Each round's two sides ran back to back: their ratio leaves out the machine's drift between rounds.
  const paired = self.perCall.map((x, i) => x / base.perCall[i]!);
  const spread = [...paired].sort((a, b) => a - b);
  console.log(`  ${MODES ? "token-in / engine" : "this / base     "}  ${ratio.toFixed(2)}  (ratio of the medians; the median of each round's ratio ${median(paired).toFixed(2)}, its middle half ${spread[Math.floor(spread.length / 4)]!.toFixed(2)}–${spread[Math.floor((3 * spread.length) / 4)]!.toFixed(2)})`);
  if (THREADS) {
    // By thread, over all measured rounds: µs per call (ticks of 10 ms, so a thread's figure resolves to 10 ms / the calls).
    const names = [...new Set(sides.flatMap((s) => [...s.threads.keys()]))].sort((a, b) => (self.threads.get(b) ?? 0) - (self.threads.get(a) ?? 0));
    const us = (s: Side, n: string) => ((s.threads.get(n) ?? 0) * 1e6) / Math.max(1, s.calls);
    console.log(`  CPU per call by thread, all measured rounds (µs): ${label("base").trim()} / ${label("this").trim()}`);
    for (const n of names) if (us(base, n) + us(self, n) >= 1) console.log(`    ${n.padEnd(14)} ${us(base, n).toFixed(0).padStart(6)} ${us(self, n).toFixed(0).padStart(6)}  ${us(base, n) > 0 ? (us(self, n) / us(base, n)).toFixed(2) : ""}`);
  }
  // The goals beside the figure (issue 32): token-in at ≤ 1.3 × engine mode's CPU per call; a change kept only when it wins.
  if (MODES) {
    console.log(`  goal: token-in ≤ 1.3 × engine mode's CPU per call: ${ratio <= 1.3 ? "met" : "NOT met"}`);
    // The proxy's side only: token-in takes the chat route's render and parsers off the engine (docs/performance.md).
    if (ENGINE === "vllm") console.log("  what token-in takes off vLLM's API server for the same calls: bun bench/engine-render.ts");
  }
  else console.log(`  goal: a change is kept only when this / base < 1 (${ratio < 1 ? "this wins" : "no win"}; single rounds spread ±25 %: repeat before concluding)`);
} finally {
  for (const side of sides) await side.proxy.stop();
  await sim.stop();
  baseTree?.remove();
  if (PROFILE_DIR) console.error(`bench/ab: profiles in ${resolve(PROFILE_DIR)}/{base,this}`);
  if (PERF_DIR) console.error(`bench/ab: perf data in ${PERF_DIR}: bun bench/perf-report.ts ${PERF_DIR}`);
  rmSync(work, { recursive: true, force: true });
}
