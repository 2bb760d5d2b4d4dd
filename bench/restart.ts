/**
 * Restart of a real `forge proxy` process on a large log: the time from spawn to the line it
 * prints when it listens, and its memory (RSS then, and peak), with the segment indexes beside
 * the log against without them (the whole log read, as every start did before the indexes).
 * Also the floor: the same proxy on an empty data directory, and with --base REF that commit's
 * proxy on the same log (checked out in a temporary git worktree sharing node_modules; it knows
 * no index, so it reads the whole log as starts did before). Prints ratios.
 *
 * The log is written once by this script (ModelCall records of ~13 KB — token ids, logprobs,
 * request and response bodies — as the proxy records them, rollouts of 20 calls with prompt
 * deltas, 5 % of them still open) and reused with --data.
 *
 *   bun bench/restart.ts [--gb 1] [--data DIR] [--runs 3] [--open 0.05] [--base REF] [--json]
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openSegmentLog } from "../records/index.ts";
import { segmentIndexDir } from "../records/segment-index.ts";
import { CallStatus, create, ModelCallSchema, Protocol, RecordSchema, RolloutResultSchema, RolloutSchema, RolloutStatus, TokenStatus } from "../schemas/index.ts";
import { baseWorktree } from "./lib/base-worktree.ts";
import { spawnWithUrl } from "./lib/spawn-url.ts";

const { values } = parseArgs({
  options: { gb: { type: "string", default: "1" }, data: { type: "string" }, runs: { type: "string", default: "3" }, open: { type: "string", default: "0.05" }, base: { type: "string" }, json: { type: "boolean", default: false } },
});
const ROOT = join(import.meta.dir, "..");
const targetBytes = Number(values.gb) * 1024 ** 3;
const runs = Number(values.runs);
const openShare = Number(values.open);
const CALLS = 20;

/** A deterministic pseudo-random source (xorshift), so every run writes the same log. */
function prng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** Writes rollouts of CALLS calls until the log holds `targetBytes`; returns the counts. */
async function writeLog(dir: string): Promise<{ rollouts: number; calls: number; open: number; bytes: number }> {
  const log = await openSegmentLog(dir, { groupCommitMs: 200 });
  const random = prng(42);
  const text = (n: number) => Array.from({ length: n }, () => "abcdefghij klmnopqrst uvwxyz"[Math.floor(random() * 28)]).join("");
  const ids = (n: number) => Array.from({ length: n }, () => Math.floor(random() * 150_000));
  let rollouts = 0;
  let calls = 0;
  let open = 0;
  while (log.stats().bytesWritten < targetBytes) {
    const id = `bench.i0.task-${rollouts}.0`;
    log.append(create(RecordSchema, { kind: { case: "rollout", value: create(RolloutSchema, { rolloutId: id, experiment: "bench", taskId: `task-${rollouts}`, group: `task-${rollouts}@i0`, keySha256: `${rollouts}`.padStart(64, "0"), createdUnixMs: 1_764_000_000_000 }) } }));
    let previous = "";
    let tokens = 0;
    const system = text(4000);
    for (let seq = 1; seq <= CALLS; seq++) {
      const callId = `${id}-${seq}`;
      const suffix = ids(seq === 1 ? 1200 : 150);
      const completion = ids(200);
      const body = JSON.stringify({ model: "qwen3", stream: true, messages: [{ role: "system", content: system }, { role: "user", content: text(2500) }] });
      log.append(
        create(RecordSchema, {
          kind: {
            case: "modelCall",
            value: create(ModelCallSchema, {
              rolloutId: id,
              seq,
              callId,
              startUnixMs: 1_764_000_000_000 + seq * 1000,
              endUnixMs: 1_764_000_000_900 + seq * 1000,
              protocol: Protocol.CHAT,
              requestBody: new TextEncoder().encode(body),
              responseBody: new TextEncoder().encode(text(1800)),
              model: "qwen3",
              upstream: "http://vllm:8000",
              stream: true,
              httpStatus: 200,
              status: CallStatus.OK,
              promptTokenIds: suffix,
              prefixOf: previous,
              prefixLen: tokens,
              promptLen: tokens + suffix.length,
              completionTokenIds: completion,
              completionLogprobs: completion.map(() => -random()),
              tokenStatus: TokenStatus.COMPLETE,
              finishReason: "stop",
            }),
          },
        }),
      );
      tokens += suffix.length + completion.length;
      previous = callId;
      calls++;
    }
    if (random() >= openShare) log.append(create(RecordSchema, { kind: { case: "rolloutResult", value: create(RolloutResultSchema, { rolloutId: id, reward: 1, status: RolloutStatus.OK }) } }));
    else open++;
    rollouts++;
  }
  const bytes = log.stats().bytesWritten;
  await log.close();
  return { rollouts, calls, open, bytes };
}

/** Spawns the proxy on `dataDir`; resolves with the time to its listening line, its RSS then and its peak. */
async function startOnce(dataDir: string, upstream: string, root = ROOT): Promise<{ ms: number; rssMb: number; peakMb: number }> {
  const started = performance.now();
  const { child } = await spawnWithUrl("bun", ["bin/forge.ts", "proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--data", dataDir, "--mode", "eval", "--admin-token", "bench", "--json"], { cwd: root }, "forge proxy");
  const ms = performance.now() - started;
  const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
  child.kill("SIGTERM");
  await new Promise((resolve) => child.once("exit", resolve));
  return { ms, rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024 };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const dataDir = values.data ?? join(tmpdir(), `forge-bench-restart-${values.gb}gb`);
let written: Awaited<ReturnType<typeof writeLog>> | undefined;
if (!existsSync(join(dataDir, "log"))) {
  mkdirSync(dataDir, { recursive: true });
  const t = performance.now();
  written = await writeLog(dataDir);
  console.error(`wrote ${(written.bytes / 1024 ** 3).toFixed(2)} GiB: ${written.rollouts} rollouts, ${written.calls} calls, ${written.open} open, in ${((performance.now() - t) / 1000).toFixed(1)} s`);
}
const { child: sim, url: simUrl } = await spawnWithUrl("bun", ["bin/forge.ts", "policy-sim", "--listen", "127.0.0.1:0", "--json"], { cwd: ROOT }, "policy-sim");
const upstream = `${simUrl}/v1`;
const empty = mkdtempSync(join(tmpdir(), "forge-bench-restart-empty-"));
const baseTree = values.base ? baseWorktree(ROOT, values.base, "restart") : undefined;
const baseRoot = baseTree?.root;
if (baseTree) console.error(`base ${values.base} = ${baseTree.sha.slice(0, 10)} in ${baseTree.root}`);
try {
  const logDir = join(dataDir, "log");
  const rows: { case: string; ms: number; rssMb: number; peakMb: number }[] = [];
  const measure = async (label: string, prepare: () => void, dir = dataDir, root = ROOT) => {
    const samples = [];
    for (let i = 0; i < runs; i++) {
      prepare();
      samples.push(await startOnce(dir, upstream, root));
    }
    rows.push({ case: label, ms: median(samples.map((s) => s.ms)), rssMb: median(samples.map((s) => s.rssMb)), peakMb: median(samples.map((s) => s.peakMb)) });
  };
  // Without indexes every start reads the whole log (and writes the indexes, removed again before the next run).
  await measure("no index (whole log read)", () => rmSync(segmentIndexDir(logDir), { recursive: true, force: true }));
  // One start to write them, then the measured starts on them.
  await startOnce(dataDir, upstream);
  await measure("segment indexes", () => {});
  await measure("empty data dir (floor)", () => rmSync(join(empty, "log"), { recursive: true, force: true }), empty);
  if (baseRoot) await measure(`base ${values.base} (before indexes)`, () => {}, dataDir, baseRoot);
  const [full, indexed, floor] = rows as [(typeof rows)[number], (typeof rows)[number], (typeof rows)[number]];
  const logBytes = Number(Bun.spawnSync(["du", "-sb", logDir]).stdout.toString().split("\t")[0]);
  const result = {
    log_gib: logBytes / 1024 ** 3,
    ...(written ? { rollouts: written.rollouts, calls: written.calls, open_rollouts: written.open } : {}),
    rows,
    indexed_vs_full_time: indexed.ms / full.ms,
    indexed_vs_full_peak_rss: indexed.peakMb / full.peakMb,
    indexed_over_floor_ms: indexed.ms - floor.ms,
    ...(rows[3] ? { indexed_vs_base_time: indexed.ms / rows[3].ms, indexed_vs_base_peak_rss: indexed.peakMb / rows[3].peakMb } : {}),
    goal_start_s: 1,
  };
  if (values.json) console.log(JSON.stringify(result, null, 2));
  else {
    console.log(`log ${result.log_gib.toFixed(2)} GiB in ${dataDir} (medians of ${runs} starts of a real forge proxy process: spawn → listening)`);
    for (const r of rows) console.log(`  ${r.case.padEnd(28)} ${(r.ms / 1000).toFixed(2).padStart(6)} s   RSS ${r.rssMb.toFixed(0).padStart(5)} MB   peak ${r.peakMb.toFixed(0).padStart(5)} MB`);
    console.log(`indexed / whole-log start: time ${result.indexed_vs_full_time.toFixed(3)}, peak RSS ${result.indexed_vs_full_peak_rss.toFixed(2)}; indexed start minus the empty-dir floor: ${(result.indexed_over_floor_ms / 1000).toFixed(2)} s (goal: start ≤ ${result.goal_start_s} s)`);
    if (result.indexed_vs_base_time !== undefined) console.log(`indexed / base: time ${result.indexed_vs_base_time.toFixed(3)}, peak RSS ${result.indexed_vs_base_peak_rss!.toFixed(2)}`);
  }
} finally {
  sim.kill("SIGTERM");
  rmSync(empty, { recursive: true, force: true });
  baseTree?.remove();
}
