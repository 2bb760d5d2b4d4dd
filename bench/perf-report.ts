/**
 * Where the proxy's CPU goes, by JavaScript function, from a `bench/ab.ts --perf DIR` run: each
 * side's perf samples of the proxy's main thread charged to the innermost JS function on their
 * stack (its own code and the native code it called) and to every function on it (inclusive),
 * the two sides side by side, largest difference first. Both sides ran the same calls, so
 * sample counts compare directly; one sample is 1/999 s of CPU.
 *
 *   bun bench/ab.ts --scenario toolloop --modes --rounds 12 --conversations 8 --concurrency 4 --perf /tmp/perf
 *   bun bench/perf-report.ts /tmp/perf [--skip 12] [--top 40] [--inside FUNCTION] [--callers FUNCTION] [--by-name]
 *
 * `--inside onEvent#ALm4H1` (a name as the tables print it) shows where that function's
 * inclusive samples go instead: by the JS function directly inside it; `--callers FUNCTION`
 * where they come from: by the JS functions that called it. `--by-name` groups
 * functions by name alone: JSC's hash is of the function's source, so an A/B of a change to
 * a function names it differently on the two sides.
 * `--skip` leaves out each proxy's first seconds (start-up: the model and templates loaded,
 * code compiled). Needs Linux perf; JIT frames are named from each side's jitdump at the
 * sample's time (bench/lib/jitdump.ts says why not `perf inject -j` or a perf map).
 */
import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { spawnSync } from "node:child_process";
import { benchFlags } from "./lib/flags.ts";
import { jitResolver, readJitDump, type JitDump } from "./lib/jitdump.ts";
import { chargeSamples, nameJitFrames, parsePerfScript, samplesCalling, samplesInside, tally, type Charges } from "./lib/perf-samples.ts";

const { flag, has } = benchFlags();
const dir = process.argv[2] && !process.argv[2].startsWith("--") ? resolve(process.argv[2]) : "";
const SKIP = Number(flag("skip", "12"));
const TOP = Number(flag("top", "40"));
const INSIDE = flag("inside", "");
const CALLERS = flag("callers", "");
const BY_NAME = has("by-name");
if (!dir || !existsSync(join(dir, "base.data")) || !existsSync(join(dir, "this.data"))) {
  console.error("usage: bun bench/perf-report.ts DIR [--skip SECONDS] [--top N] [--inside FUNCTION] [--callers FUNCTION] [--by-name]; DIR is a bench/ab.ts --perf DIR (with base.data and this.data)");
  process.exit(2);
}

/** One side's main-thread charges and its other threads' sample counts. */
function side(name: string): { main: Charges; threads: Map<string, number>; inside: Map<string, number>; callers: Map<string, number> } {
  const jitDir = join(dir, `${name}-jit`);
  const loads: JitDump["loads"] = [];
  for (const f of existsSync(jitDir) ? readdirSync(jitDir) : []) if (f.endsWith(".dump")) loads.push(...readJitDump(join(jitDir, f)).loads);
  const r = spawnSync("perf", ["script", "-i", join(dir, `${name}.data`), "-F", "comm,tid,time,ip,sym,dso"], { encoding: "utf8", maxBuffer: 4 * 1024 ** 3 });
  if (r.status !== 0) throw new Error(`perf script -i ${join(dir, `${name}.data`)}: ${r.stderr.slice(0, 500)}`);
  const all = parsePerfScript(r.stdout);
  nameJitFrames(all, jitResolver(loads));
  const start = (all[0]?.time ?? 0) + SKIP;
  const kept = all.filter((s) => s.time >= start);
  const threads = new Map<string, number>();
  for (const s of kept) tally(threads, s.comm);
  const main = kept.filter((s) => s.comm === "bun");
  return { main: chargeSamples(main), threads, inside: INSIDE ? samplesInside(main, INSIDE) : new Map(), callers: CALLERS ? samplesCalling(main, CALLERS) : new Map() };
}

const base = side("base");
const self = side("this");
const pct = (n: number, of: number) => `${((100 * n) / Math.max(1, of)).toFixed(1)}%`;
console.log(`bench/perf-report ${dir} (from ${SKIP} s on): samples of the main thread, base ${base.main.samples}, this ${self.main.samples} (this / base ${(self.main.samples / Math.max(1, base.main.samples)).toFixed(2)})`);
for (const [label, s] of [["base", base], ["this", self]] as const) {
  const threads = [...s.threads].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} ${n}`).join(", ");
  const leaves = [...s.main.leaves].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${pct(n, s.main.samples)}`).join(", ");
  console.log(`  ${label}: threads ${threads}\n        main thread's leaves: ${leaves}`);
}
/** `counts` with functions of one name merged (`--by-name`). */
function named(counts: Map<string, number>): Map<string, number> {
  if (!BY_NAME) return counts;
  const out = new Map<string, number>();
  for (const [k, n] of counts) tally(out, k.replace(/#[A-Za-z0-9]+$/, ""), n);
  return out;
}

/** A table of both sides' counts, largest difference (this − base) first. */
function table(title: string, baseCounts: Map<string, number>, thisCounts: Map<string, number>) {
  const a = named(baseCounts);
  const b = named(thisCounts);
  const names = [...new Set([...a.keys(), ...b.keys()])].sort((x, y) => (b.get(y) ?? 0) - (a.get(y) ?? 0) - ((b.get(x) ?? 0) - (a.get(x) ?? 0)));
  console.log(`\n${title}\n    base    this    diff  function`);
  for (const n of names.slice(0, TOP)) console.log(`  ${String(a.get(n) ?? 0).padStart(6)}  ${String(b.get(n) ?? 0).padStart(6)}  ${String((b.get(n) ?? 0) - (a.get(n) ?? 0)).padStart(6)}  ${n}`);
}
if (INSIDE) table(`Inside ${INSIDE} (by the JS function directly inside it):`, base.inside, self.inside);
if (CALLERS) table(`Calling ${CALLERS} (by the JS functions that called it, innermost first):`, base.callers, self.callers);
if (!INSIDE && !CALLERS) {
  table("Inclusive (every JS function on the stack, once per sample):", base.main.inclusive, self.main.inclusive);
  table("Innermost JS function (its own code and the native code it called):", base.main.innermost, self.main.innermost);
}
