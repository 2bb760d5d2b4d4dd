/**
 * Token-in's answer side in a hot loop: the engine streams of one tool-loop conversation turned
 * into the harness's Chat chunk objects (`chatStreamResponse`, proxy/token-in/chat-answer.ts:
 * the engine events parsed, read, derendered by model/'s detokenizer and vLLM parsers, the Chat
 * chunks built), this checkout against another commit, in interleaved rounds in one process.
 *
 *   bun bench/token-in-answer.ts [--base REF] [--rounds 9] [--answers 260] [--token-in-route completions|generate]
 *
 * The streams are real: a `forge proxy --token-in` of this checkout runs the tool loop
 * (bench/lib/tool-loop.ts, 13 streamed calls) against the policy simulator through a relay that
 * keeps each token-id request (`/inference/v1/generate`, which the proxy's default route probe
 * finds on the simulator, or `/v1/completions` with `--token-in-route completions`) and the bytes
 * of its answer as they were read. Both sides then answer the same streams (the prompt's ids in
 * the rollout's id memo, as call.ts sets it); the bench checks that they give the same answer to
 * the harness and the same capture (random ids aside) before timing them, and prints how many
 * Chat chunks each sent. Each answer is taken to the harness's text as the Chat door takes it
 * (proxy/doors/stream-answer.ts: each chunk object captured, stripped and serialised,
 * `captureAndStrip`). docs/performance.md, issue 32's fourth and fifth sessions.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startPolicySimulator } from "../simulator/index.ts";
import { startForgeProxy } from "./lib/forge-proxy.ts";
import { baseWorktree } from "./lib/base-worktree.ts";
import { benchFlags } from "./lib/flags.ts";
import { runToolLoop, TOOL_LOOP_SCRIPT, TOOL_LOOP_TOOLS } from "./lib/tool-loop.ts";

const ROOT = resolve(import.meta.dir, "..");
const { flag } = benchFlags();
const BASE = flag("base", "HEAD~1");
const ROUNDS = Number(flag("rounds", "9"));
const ANSWERS = Number(flag("answers", "260"));
/** The token-in route the capturing proxy is started with (default: its own, auto). */
const ROUTE = flag("token-in-route", "");

/** One engine answer as the proxy read it: its route, the request's prompt ids and the bytes of each read. */
type Captured = { generate: boolean; prompt: number[]; promptText: string; reads: Uint8Array[] };

/** The token-id routes a vLLM token-in proxy sends to (proxy/token-in/engine-request.ts). */
const TOKEN_ROUTES = new Set(["/v1/completions", "/inference/v1/generate"]);

/** The engine streams of one tool-loop conversation through a token-in proxy of this checkout. */
async function captureStreams(work: string): Promise<Captured[]> {
  const sim = await startPolicySimulator({ seed: 1, chunkDelayMs: 0, script: TOOL_LOOP_SCRIPT });
  const captured: Captured[] = [];
  const relay = Bun.serve({
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const body = req.method === "GET" ? undefined : await req.text();
      const answer = await fetch(sim.url + url.pathname + url.search, { method: req.method, headers: req.headers, body });
      // The proxy's own probes of the engine (Chat, the route probe's `{}`) pass; token-in's calls go
      // to vLLM's /inference/v1/generate (found by --token-in-route auto, the default) or /v1/completions.
      if (!TOKEN_ROUTES.has(url.pathname) || !answer.ok || !answer.body) return answer;
      const generate = url.pathname === "/inference/v1/generate";
      const request = JSON.parse(body!);
      const prompt = (generate ? request.token_ids : request.prompt) as number[] | undefined;
      if (!Array.isArray(prompt)) return answer;
      const kept: Captured = { generate, prompt, promptText: JSON.stringify(prompt), reads: [] };
      captured.push(kept);
      const reader = answer.body.getReader();
      const stream = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const next = await reader.read();
          if (next.done) return controller.close();
          kept.reads.push(next.value.slice());
          controller.enqueue(next.value);
        },
      });
      return new Response(stream, { status: answer.status, headers: answer.headers });
    },
  });
  const proxy = await startForgeProxy({ root: ROOT, dataDir: join(work, "data"), upstream: `http://127.0.0.1:${relay.port}/v1`, extraArgs: ["--token-in", "--model-dir", "qwen3", "--max-model-len", "131072", ...(ROUTE ? ["--token-in-route", ROUTE] : [])] });
  try {
    const r = await proxy.register("token-in-answer");
    await runToolLoop(`${proxy.url}/r/${r.rollout_id}/v1/chat/completions`, r.api_key, { stream: true });
  } finally {
    await proxy.stop();
    relay.stop(true);
    await sim.stop();
  }
  if (captured.length === 0) throw new Error("bench/token-in-answer: the proxy sent no token-id request (/v1/completions or /inference/v1/generate; not in token-in mode?)");
  return captured;
}

/** What the harness got for one answer, and what was captured from it (when kept). */
type Answered = { text: string; capture: unknown; sent: unknown[] };
type Answerer = (s: Captured, keep: boolean) => Promise<Answered>;

/** The harness as the bench's tool loop is one: no ids, no logprobs, no usage asked for. */
const WANTS = { tokenIds: false, logprobs: false, usage: false, reasoning: true, weightVersions: false };

/** `root`'s token-in answer path: one captured stream in, the harness's text out (kept when asked). */
async function answererOf(root: string): Promise<Answerer> {
  const { loadModel } = await import(join(root, "model/index.ts"));
  const { chatStreamResponse } = await import(join(root, "proxy/token-in/chat-answer.ts"));
  const { engineAnswerReader } = await import(join(root, "proxy/token-in/engine-answer.ts"));
  const { chunkSourceOf } = await import(join(root, "proxy/capture/chunk-source.ts"));
  const { captureAndStrip, emptyAfterStrip, newCapture } = await import(join(root, "proxy/capture/tokens.ts"));
  const model = await loadModel();
  /** The Chat door's handling of one chunk object (stream-answer.ts, onChunk without a translator). */
  const harnessText = (chunk: Record<string, unknown>, capture: unknown): string =>
    captureAndStrip("chat", chunk, capture, WANTS) && emptyAfterStrip(chunk) ? "" : `data: ${JSON.stringify(chunk)}\n\n`;
  return async (s, keep) => {
    const context = {
      model,
      options: { model: "qwen3", stream: true, tools: TOOL_LOOP_TOOLS, promptTokenIds: s.prompt },
      modelName: "qwen3",
      prompt: s.prompt,
      promptText: s.promptText,
      idsMemo: { text: s.promptText, ids: Uint32Array.from(s.prompt), ends: new Uint32Array(0) },
      logprobs: false,
      reader: engineAnswerReader("vllm", { top: false, generate: s.generate }),
      onAnswer: (answer: unknown) => keep && sent.push(answer),
    };
    const sent: unknown[] = [];
    let i = 0;
    const engine = new ReadableStream<Uint8Array>({ pull: (c) => (i < s.reads.length ? c.enqueue(s.reads[i++]!) : c.close()) });
    const source = chunkSourceOf(chatStreamResponse(context, engine));
    const capture = newCapture();
    let text = "";
    for (;;) {
      const next = await source.read();
      if (next.done) return { text, capture: keep ? capture : undefined, sent };
      for (const item of next.value.items) {
        text += typeof item === "string" ? (item === "[DONE]" ? "" : `data: ${item}\n\n`) : harnessText(item, capture);
      }
    }
  };
}

/** The answers as text, the per-answer random ids and times aside, prompt ids as their count. */
function comparable(answers: unknown[]): string {
  const text = JSON.stringify(answers, (_, v) => (v instanceof Uint32Array ? { ids: v.length } : Array.isArray(v) && v.length > 100 ? { ids: v.length } : v));
  return text.replace(/chatcmpl-[0-9a-f]+|\\"created\\":\d+|call_[0-9A-Za-z]+|chatcmpl-tool-[0-9a-f]+/g, "…");
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

const work = mkdtempSync(join(tmpdir(), "forge-bench-answer-"));
const base = baseWorktree(ROOT, BASE, "answer");
try {
  const streams = await captureStreams(work);
  const sides = [await answererOf(base.root), await answererOf(ROOT)];
  // The answer each side sent and captured must be the same; how it is cut into chunks may differ (the
  // events of one read are one chunk since e602f82, one per event before).
  const answered = await Promise.all(sides.map((answer) => Promise.all(streams.map((s) => answer(s, true)))));
  const same = comparable(answered[0]!.map(({ text: _, ...rest }) => rest)) === comparable(answered[1]!.map(({ text: _, ...rest }) => rest));
  const chunks = answered.map((side) => side.reduce((n, a) => n + a.text.split("data: ").length - 1, 0));
  const per = Math.max(1, Math.floor(ANSWERS / streams.length));
  /** µs per answer over `per` passes of every stream. */
  const time = async (answer: Answerer) => {
    const start = performance.now();
    for (let k = 0; k < per; k++) for (const s of streams) await answer(s, false);
    return ((performance.now() - start) / (per * streams.length)) * 1000;
  };
  for (let w = 0; w < 2; w++) for (const answer of sides) await time(answer);
  const rounds: { base: number; this: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which side goes first, so a drift in the machine's speed hits both.
    const round = { base: 0, this: 0 };
    for (const k of r % 2 ? [1, 0] : [0, 1]) round[k ? "this" : "base"] = await time(sides[k]!);
    rounds.push(round);
  }
  const events = streams.reduce((n, s) => n + new TextDecoder().decode(Buffer.concat(s.reads)).split("\n\ndata: ").length, 0);
  const route = streams[0]!.generate ? "/inference/v1/generate" : "/v1/completions";
  console.log(`bench/token-in-answer: ${streams.length} engine streams of the tool loop from ${route} (${events} events), µs per answer, median of ${ROUNDS} interleaved rounds of ${per * streams.length}`);
  console.log(`  the same answer to the harness and the same capture on both sides: ${same ? "yes" : "NO (this checkout answers differently)"}; Chat chunks sent: base ${chunks[0]}, this checkout ${chunks[1]}`);
  console.log(`  base ${BASE}  ${median(rounds.map((r) => r.base)).toFixed(1)} µs`);
  console.log(`  this checkout  ${median(rounds.map((r) => r.this)).toFixed(1)} µs`);
  console.log(`  this / base    ${median(rounds.map((r) => r.this / r.base)).toFixed(3)} (per round ${rounds.map((r) => (r.this / r.base).toFixed(2)).join(" ")})`);
  if (!same) process.exitCode = 1;
} finally {
  base.remove();
  rmSync(work, { recursive: true, force: true });
}
