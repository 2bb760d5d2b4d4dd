/**
 * The pipeline's SSE reader (proxy/capture/sse-rewriter.ts) on an engine-mode answer whose first
 * event is large, this checkout against another commit, in interleaved rounds in one process.
 * vLLM's Chat stream with `return_token_ids` puts the prompt's ids in its first chunk (6,000
 * tokens: ~42 KB; 50,000: ~320 KB), and a read seldom holds such an event whole: Bun's fetch
 * reads 16 KiB first, and a network delivers what its window holds.
 *
 *   bun bench/sse-split.ts [--base REF] [--rounds 9] [--read 16384]
 *
 * The answers are real: the policy simulator's Chat route (vLLM 0.33.0's shape) answers a prompt
 * of each size with `return_token_ids`; its bytes are cut into reads of `--read` bytes and fed
 * to each side's rewriter, which keeps every event (what the harness is sent is checked equal to
 * the answer). Prints µs per answer for each prompt size and the ratio this / base.
 */
import { join, resolve } from "node:path";
import { startPolicySimulator } from "../simulator/index.ts";
import { baseWorktree } from "./lib/base-worktree.ts";
import { benchFlags } from "./lib/flags.ts";

const ROOT = resolve(import.meta.dir, "..");
const { flag } = benchFlags();
const BASE = flag("base", "HEAD~1");
const ROUNDS = Number(flag("rounds", "9"));
const READ = Number(flag("read", "16384"));
const PROMPT_TOKENS = [6000, 50000];

type Rewrite = (reads: Uint8Array[]) => string;

/** The answer's bytes for a prompt of about `tokens` tokens, from the simulator's Chat stream. */
async function answerBytes(url: string, tokens: number): Promise<Uint8Array> {
  const body = { model: "bench", stream: true, return_token_ids: true, messages: [{ role: "user", content: "word ".repeat(tokens) }] };
  const r = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`bench/sse-split: the simulator answered ${r.status}: ${await r.text()}`);
  return new Uint8Array(await r.arrayBuffer());
}

function readsOf(bytes: Uint8Array, size: number): Uint8Array[] {
  const reads: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) reads.push(bytes.subarray(at, Math.min(bytes.length, at + size)));
  return reads;
}

async function rewriterOf(root: string): Promise<Rewrite> {
  const { createSseRewriter } = await import(join(root, "proxy/capture/sse-rewriter.ts"));
  return (reads) => {
    const r = createSseRewriter(() => undefined);
    let out = "";
    for (const read of reads) out += r.push(read);
    return out + r.end();
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** µs per answer over enough passes for ~50 ms. */
function time(rewrite: Rewrite, reads: Uint8Array[]): number {
  const start = performance.now();
  let n = 0;
  while (performance.now() - start < 50) {
    rewrite(reads);
    n++;
  }
  return ((performance.now() - start) / n) * 1000;
}

const base = baseWorktree(ROOT, BASE, "sse-split");
const sim = await startPolicySimulator({ seed: 1 });
try {
  const sides = [await rewriterOf(base.root), await rewriterOf(ROOT)] as const;
  console.log(`bench/sse-split: an engine-mode answer (the simulator's Chat stream, return_token_ids) in reads of ${READ} bytes, µs per answer, median of ${ROUNDS} interleaved rounds`);
  for (const tokens of PROMPT_TOKENS) {
    const bytes = await answerBytes(sim.url, tokens);
    const reads = readsOf(bytes, READ);
    const text = new TextDecoder().decode(bytes);
    for (const rewrite of sides) if (rewrite(reads) !== text) throw new Error("bench/sse-split: a side did not send the answer as it came");
    for (const rewrite of sides) time(rewrite, reads);
    const rounds: { base: number; this: number }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const round = { base: 0, this: 0 };
      for (const k of r % 2 ? [1, 0] : [0, 1]) round[k ? "this" : "base"] = time(sides[k]!, reads);
      rounds.push(round);
    }
    const kb = (bytes.length / 1024).toFixed(0);
    console.log(`  ${tokens}-token prompt (${kb} KiB, ${reads.length} reads): base ${BASE} ${median(rounds.map((r) => r.base)).toFixed(1)} µs, this checkout ${median(rounds.map((r) => r.this)).toFixed(1)} µs, this / base ${median(rounds.map((r) => r.this / r.base)).toFixed(3)}`);
  }
} finally {
  await sim.stop();
  base.remove();
}
