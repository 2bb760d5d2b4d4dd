/**
 * A token-in shard's memory per open rollout (docs/performance.md, "Memory per rollout"): opens
 * N rollouts at once on one `forge proxy --token-in` process (its own process, so its RSS is its
 * own), each a conversation of a ~20k-token prompt continued by one tool call and its result (two
 * calls: one chain of ~20k ids per rollout), keeps them open, and prints the proxy's RSS per open
 * rollout (and per chain) against the ids' own size (4 bytes an id). Then it finishes them all and
 * opens N new ones: if finished rollouts' chains are released, the second wave reuses their
 * memory and RSS barely grows. Prints the shard's ceiling (--max-held-tokens) in rollouts of this
 * size and the RSS it implies.
 *
 *   bun bench/token-in-memory.ts [--rollouts 1000] [--tokens 20000] [--concurrency 8] [--json] [--proxy-root DIR]
 *
 * (1,000 rollouts take ~5 minutes on 2 shared cores; a second wave of min(N, 200) follows.)
 *
 * Memory: ~N × 0.5 MB for 20k-token rollouts on top of ~0.3 GB; 5,000 rollouts need a few GB.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startPolicySimulator } from "../simulator/index.ts";
import { startForgeProxy } from "./lib/forge-proxy.ts";
import { benchFlags } from "./lib/flags.ts";
import { words } from "./lib/bodies.ts";
import { TOOL_LOOP_SCRIPT, TOOL_LOOP_TOOLS } from "./lib/tool-loop.ts";
import { DEFAULT_MAX_HELD_TOKENS } from "../proxy/token-in/index.ts";

const { flag, has } = benchFlags();
// --proxy-root DIR: another checkout's proxy (a commit from before the ceiling: no --max-held-tokens).
const PROXY_ROOT = flag("proxy-root", "");
const ROOT = PROXY_ROOT ? resolve(PROXY_ROOT) : resolve(import.meta.dir, "..");
const N = Number(flag("rollouts", "1000"));
const TOKENS = Number(flag("tokens", "20000"));
const CONCURRENCY = Number(flag("concurrency", "8"));
const MiB = 1024 * 1024;

const work = mkdtempSync(join(tmpdir(), "forge-bench-memory-"));
const memoryFile = join(work, "memory.json");
/** The proxy's memory after a full GC in it (bench/lib/gc-on-signal.ts): RSS and the live JS heap. */
async function memoryOf(pid: number): Promise<{ rss: number; heap: number }> {
  const before = Date.now();
  process.kill(pid, "SIGUSR2");
  for (let i = 0; i < 100; i++) {
    await Bun.sleep(100);
    try {
      const m = JSON.parse(readFileSync(memoryFile, "utf8"));
      // heapSize counts typed arrays' storage (also when their ArrayBuffer was materialised,
      // which memoryUsage().arrayBuffers counts again): the live heap is heapSize alone.
      if (m.at >= before) return { rss: m.rss, heap: m.heapSize };
    } catch {}
  }
  throw new Error("the proxy did not report its memory after SIGUSR2");
}
// The simulator keeps no samples: 5,000 rollouts of 20k-token prompts would hold gigabytes of them in this process.
const sim = await startPolicySimulator({ seed: 1, chunkDelayMs: 0, script: TOOL_LOOP_SCRIPT, maxSamples: 0 });
// A ceiling above what the bench opens: the bench measures memory, tests/token-in/ceiling.test.ts the 503.
const ceiling = Math.max(DEFAULT_MAX_HELD_TOKENS, Math.ceil(N * TOKENS * 1.5));
const proxy = await startForgeProxy({
  root: ROOT,
  dataDir: join(work, "data"),
  upstream: `${sim.url}/v1`,
  env: { BUN_CONFIG_MAX_HTTP_REQUESTS: "4096", FORGE_BENCH_MEMORY_FILE: memoryFile },
  bunArgs: ["--preload", resolve(import.meta.dir, "lib", "gc-on-signal.ts")],
  extraArgs: ["--token-in", "--model-dir", "qwen3", "--max-model-len", "131072", ...(PROXY_ROOT ? [] : ["--max-held-tokens", String(ceiling)])],
});

// ~1.05 tokens a word of this text in Qwen3's tokenizer; the prompt's size is read back from usage.
const system = `You are a coding agent working in a sandboxed workspace. ${words(Math.round(TOKENS / 1.05))}`;
const task = "Count the items in inventory.csv and write the total to total.txt, then check it.";

async function chat(r: { rollout_id: string; api_key: string }, messages: unknown[]): Promise<any> {
  const res = await fetch(`${proxy.url}/r/${r.rollout_id}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "qwen3", tools: TOOL_LOOP_TOOLS, messages, max_tokens: 200 }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${text.slice(0, 400)}`);
  return JSON.parse(text);
}

/** One rollout: two calls on one chain; returns its chain's ids (the second call's prompt + completion). */
async function openRollout(i: number): Promise<{ id: string; ids: number }> {
  const r = await proxy.register(`memory-${i}`);
  const messages: any[] = [
    { role: "system", content: `#${i} ${system}` },
    { role: "user", content: task },
  ];
  const a1 = (await chat(r, messages)).choices[0].message;
  messages.push({ role: "assistant", content: (a1.content ?? "").trim(), tool_calls: a1.tool_calls });
  for (const c of a1.tool_calls ?? []) messages.push({ role: "tool", tool_call_id: c.id, content: "a.txt\nb.txt\ninventory.csv\n" });
  const answer = await chat(r, messages);
  return { id: r.rollout_id, ids: answer.usage.prompt_tokens + answer.usage.completion_tokens };
}

async function wave(from: number, n: number): Promise<{ id: string; ids: number }[]> {
  const out: { id: string; ids: number }[] = [];
  let next = from;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < from + n) out.push(await openRollout(next++));
    }),
  );
  return out;
}

async function finish(rollouts: { id: string }[]): Promise<void> {
  for (const r of rollouts) await proxy.finish(r.id);
}

try {
  // Warm-up: the model loaded, the code paths compiled, then finished.
  await finish(await wave(-CONCURRENCY, CONCURRENCY));
  const m0 = await memoryOf(proxy.pid);
  const t0 = performance.now();
  const first = await wave(0, N);
  const seconds = (performance.now() - t0) / 1000;
  const m1 = await memoryOf(proxy.pid);
  await finish(first);
  const m2 = await memoryOf(proxy.pid);
  // The second wave: as many again, at most 200 (it measures reuse, not scale).
  const again = Math.min(N, 200);
  const second = await wave(N, again);
  const m3 = await memoryOf(proxy.pid);
  const [rss0, rss1, rss2, rss3] = [m0.rss, m1.rss, m2.rss, m3.rss];
  await finish(second);

  const idsPerRollout = first.reduce((n, r) => n + r.ids, 0) / first.length;
  const perRollout = (rss1 - rss0) / N;
  const heapPerRollout = (m1.heap - m0.heap) / N;
  // What finishing them frees: what the open rollouts held, without the process's own growth
  // over the run (caches filling, compiled code), which stays.
  const heldPerRollout = (m1.heap - m2.heap) / N;
  const idBytes = idsPerRollout * 4;
  const atCeiling = Math.floor(DEFAULT_MAX_HELD_TOKENS / idsPerRollout);
  const result = {
    rollouts: N,
    ids_per_rollout: Math.round(idsPerRollout),
    chains_per_rollout: 1,
    rss_before_mib: rss0 / MiB,
    rss_open_mib: rss1 / MiB,
    rss_per_open_rollout_kib: perRollout / 1024,
    rss_per_chain_kib: perRollout / 1024,
    ids_own_kib: idBytes / 1024,
    rss_per_rollout_over_ids: perRollout / idBytes,
    live_heap_per_open_rollout_kib: heapPerRollout / 1024,
    live_heap_released_per_rollout_kib: heldPerRollout / 1024,
    live_heap_after_finish_mib: m2.heap / MiB,
    live_heap_before_mib: m0.heap / MiB,
    rss_after_finish_mib: rss2 / MiB,
    second_wave_rollouts: again,
    second_wave_growth_per_rollout_kib: (rss3 - rss2) / again / 1024,
    open_seconds: seconds,
    default_ceiling_ids: DEFAULT_MAX_HELD_TOKENS,
    default_ceiling_rollouts: atCeiling,
    held_at_default_ceiling_mib: (atCeiling * heldPerRollout) / MiB,
  };
  if (has("json")) console.log(JSON.stringify(result));
  else {
    const f = (x: number, d = 1) => x.toFixed(d);
    console.log(`bench/token-in-memory: ${N} open token-in rollouts on one shard, each one chain of ${result.ids_per_rollout} ids (opened in ${f(seconds)} s, ${CONCURRENCY} at a time)`);
    console.log(`  proxy RSS            ${f(rss0 / MiB)} MiB before, ${f(rss1 / MiB)} MiB with them open`);
    console.log(`  per open rollout     ${f(perRollout / 1024)} KiB (per chain the same: one chain each)`);
    console.log(`  the ids' own size    ${f(idBytes / 1024)} KiB (4 bytes an id)  →  RSS per rollout ${f(perRollout / idBytes, 2)} × its ids`);
    console.log(`  live JS heap         ${f(heapPerRollout / 1024)} KiB per open rollout (${f(heapPerRollout / idBytes, 2)} × its ids); ${f(m0.heap / MiB)} MiB before, ${f(m1.heap / MiB)} open, ${f(m2.heap / MiB)} after finishing them`);
    console.log(`  held by a rollout    ${f(heldPerRollout / 1024)} KiB of live heap freed per rollout by finishing them = ${f(heldPerRollout / idBytes, 2)} × its ids`);
    console.log(`  after finishing all  ${f(rss2 / MiB)} MiB RSS; ${again} new rollouts opened after that: ${f(rss3 / MiB)} MiB (${f((rss3 - rss2) / again / 1024)} KiB per rollout), live heap ${f(m3.heap / MiB)} MiB (${f((m3.heap - m2.heap) / again / 1024)} KiB per rollout)`);
    console.log(`  goal: an open rollout holds its ids once (live heap it holds ≤ 1.5 × their size): ${heldPerRollout / idBytes <= 1.5 ? "met" : "not met"} (${f(heldPerRollout / idBytes, 2)} ×; RSS per open rollout ${f(perRollout / idBytes, 2)} ×)`);
    console.log(`  ceiling: --max-held-tokens default ${DEFAULT_MAX_HELD_TOKENS} ids = ${atCeiling} rollouts of this size, holding ~${f((atCeiling * heldPerRollout) / MiB, 0)} MiB of live heap (RSS per open rollout at this N: ${f(perRollout / 1024)} KiB; small N overstates it); past it a new rollout's first call gets a 503 (shard_full)`);
  }
} finally {
  await proxy.stop();
  await sim.stop();
  rmSync(work, { recursive: true, force: true });
}
