/**
 * Whether the per-chunk JSON work of a stream could leave JS (issue 32's native route): one
 * vLLM chat chunk as train mode reads it (a 326-byte chunk with one token, its logprob entry
 * and token_ids), in a hot loop in one process:
 *
 * - js: what the proxy does per chunk (TextDecoder, JSON.parse, captureAndStrip, JSON.stringify,
 *   TextEncoder);
 * - native: a C pass over the bytes called through bun:ffi (bench/lib/chunk-scan.c, built here
 *   with the system's `cc -O2`), the ids and logprobs read into typed arrays, the stripped
 *   bytes copied out for the socket. It validates nothing and checks no spelling, so it is a
 *   lower bound of a native pass that could replace the JS one;
 * - native, TinyCC: the same C compiled by bun:ffi's built-in TinyCC (`cc` from "bun:ffi"), the
 *   one native route that needs no compiler on the machine;
 * - ffi: the call alone (0 bytes).
 *
 *   bun bench/chunk-native.ts [--rounds 7]
 *
 * Prints ns per chunk (median and range of rounds of 100,000 chunks).
 */
import { cc, dlopen, ptr } from "bun:ffi";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { captureAndStrip, newCapture } from "../proxy/capture/tokens.ts";
import { benchFlags } from "./lib/flags.ts";

const { flag } = benchFlags();
const ROUNDS = Number(flag("rounds", "7"));
const dir = mkdtempSync(join(tmpdir(), "forge-chunk-native-"));
const lib = join(dir, "libchunkscan.so");
const built = Bun.spawnSync(["cc", "-O2", "-shared", "-fPIC", "-o", lib, join(import.meta.dir, "lib/chunk-scan.c")], { stderr: "pipe" });
if (built.exitCode !== 0) {
  console.error(`bench/chunk-native: cc -O2 failed (a C compiler is needed): ${built.stderr.toString()}`);
  process.exit(2);
}
const SIGNATURE = { strip_chunk: { args: ["ptr", "i32", "ptr", "ptr", "ptr", "ptr", "ptr"], returns: "i32" } } as const;
const { symbols } = dlopen(lib, SIGNATURE);
const tcc = cc({ source: join(import.meta.dir, "lib/chunk-scan.c"), symbols: SIGNATURE }).symbols;

const chunk = {
  id: "chatcmpl-6f0c1b7e9a2d4c8b9e3f1a2b3c4d5e6f",
  object: "chat.completion.chunk",
  created: 1764000000,
  model: "qwen3",
  choices: [{ index: 0, delta: { content: " the" }, logprobs: { content: [{ token: " the", logprob: -0.31326183676719666, bytes: [32, 116, 104, 101], top_logprobs: [] }] }, finish_reason: null, token_ids: [279] }],
};
const bytes = new TextEncoder().encode(JSON.stringify(chunk));
const decoder = new TextDecoder();
const encoder = new TextEncoder();
const wants = { tokenIds: false, logprobs: false, usage: false };
const out = new Uint8Array(8192);
const ids = new Uint32Array(1024);
const logprobs = new Float64Array(1024);
const counts = new Int32Array(2);
const [pOut, pIds, pLp, pN, pNl] = [ptr(out), ptr(ids), ptr(logprobs), ptr(counts, 0), ptr(counts, 4)];

function js(): Uint8Array {
  const c = JSON.parse(decoder.decode(bytes));
  captureAndStrip("chat", c, newCapture(), wants);
  return encoder.encode(`data: ${JSON.stringify(c)}\n\n`);
}
function native(): Uint8Array {
  const n = symbols.strip_chunk(ptr(bytes), bytes.length, pOut, pIds, pN, pLp, pNl);
  return out.slice(0, n);
}
function nativeTcc(): Uint8Array {
  const n = tcc.strip_chunk(ptr(bytes), bytes.length, pOut, pIds, pN, pLp, pNl);
  return out.slice(0, n);
}
const ffi = () => symbols.strip_chunk(ptr(bytes), 0, pOut, pIds, pN, pLp, pNl);

// The native pass gives the exact path's bytes and capture for this chunk, or the comparison means nothing.
const exact = JSON.parse(JSON.stringify(chunk));
const capture = newCapture();
captureAndStrip("chat", exact, capture, wants);
const n = symbols.strip_chunk(ptr(bytes), bytes.length, pOut, pIds, pN, pLp, pNl);
if (decoder.decode(out.subarray(0, n)) !== JSON.stringify(exact) || ids[0] !== capture.completionTokenIds[0] || logprobs[0] !== capture.completionLogprobs[0]) {
  console.error("bench/chunk-native: the native pass does not give the exact path's result");
  process.exit(1);
}

const variants = [
  ["js: decode, JSON.parse, captureAndStrip, JSON.stringify, encode", js],
  ["native: C pass through bun:ffi, copied out (lower bound)", native],
  ["native, TinyCC: the same C built by bun:ffi's cc()", nativeTcc],
  ["ffi: the call alone", ffi],
] as const;
for (const [, f] of variants) for (let i = 0; i < 20_000; i++) f();
// Interleaved rounds (the machine's speed drifts): each round times every variant once, and each
// variant's ratio to js is taken within its round.
const times: number[][] = variants.map(() => []);
for (let r = 0; r < ROUNDS; r++) {
  variants.forEach(([, f], v) => {
    const t = performance.now();
    for (let i = 0; i < 100_000; i++) f();
    times[v]!.push((performance.now() - t) * 10);
  });
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`bench/chunk-native: one ${bytes.length}-byte vLLM chat chunk, ns per chunk (median of ${ROUNDS} interleaved rounds of 100,000; range), and × js within each round`);
variants.forEach(([name], v) => {
  const own = times[v]!;
  const ratio = median(own.map((t, r) => t / times[0]![r]!));
  console.log(`  ${name.padEnd(66)} ${median(own).toFixed(0).padStart(6)}  (${Math.min(...own).toFixed(0)}–${Math.max(...own).toFixed(0)})  × js ${ratio.toFixed(2)}`);
});
rmSync(dir, { recursive: true, force: true });
