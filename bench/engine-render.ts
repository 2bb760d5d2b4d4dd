/**
 * What token-in mode takes off the engine's API server: vLLM 0.33.0's own chat-route
 * preprocessing (OnlineRenderer.render_chat: the messages parsed, the chat template run over the
 * whole conversation, the whole prompt tokenized) per call of the tool loop, timed in CPU in
 * vLLM's own code (the reference venv, python/build-env.sh). In engine mode vLLM does this for
 * every call, the conversation whole each time; in token-in mode the proxy renders only what a
 * call appends and vLLM's /v1/completions gets ids. `bun bench/ab.ts --scenario toolloop --modes`
 * gives what token-in costs the proxy instead; docs/performance.md sets the two side by side.
 *
 *   bun bench/engine-render.ts [--rounds 5]
 *
 * The requests are the tool loop's (bench/lib/tool-loop.ts: 13 streamed calls) as vLLM gets them
 * from an engine-mode harness, recorded at the policy simulator; each is rendered `rounds` times
 * after a warm-up (vLLM's template compiled, its tokenizer loaded). The bench holds vLLM's prompt
 * length to the one the simulator (which renders with model/, held to vLLM by the reference
 * suites) reported, and fails if they differ.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startPolicySimulator } from "../simulator/index.ts";
import { oraclePython } from "../tests/reference/oracle.ts";
import { benchFlags } from "./lib/flags.ts";
import { runToolLoop, TOOL_LOOP_SCRIPT } from "./lib/tool-loop.ts";

const ROOT = resolve(import.meta.dir, "..");
const { flag } = benchFlags();
const ROUNDS = Number(flag("rounds", "5"));

type Call = { request: Record<string, unknown>; prompt_tokens: number };
type Timed = { prompt_tokens: number; ids: number; cpu_ms: number[] };

/** The tool loop's Chat requests as vLLM gets them, each with the prompt length the engine reported. */
async function recordCalls(): Promise<Call[]> {
  const sim = await startPolicySimulator({ seed: 1, chunkDelayMs: 0, script: TOOL_LOOP_SCRIPT });
  const calls: Call[] = [];
  const relay = Bun.serve({
    port: 0,
    async fetch(req) {
      const body = (await req.json()) as Record<string, unknown>;
      const answer = await fetch(`${sim.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const text = await answer.text();
      const usage = text
        .split("\n")
        .filter((l) => l.startsWith("data: {"))
        .map((l) => JSON.parse(l.slice(6)).usage)
        .find((u) => u && typeof u.prompt_tokens === "number");
      if (!usage) throw new Error("bench/engine-render: the simulator's answer carries no usage (stream_options.include_usage)");
      calls.push({ request: body, prompt_tokens: usage.prompt_tokens });
      return new Response(text, { status: answer.status, headers: { "content-type": answer.headers.get("content-type") ?? "text/event-stream" } });
    },
  });
  try {
    await runToolLoop(`http://127.0.0.1:${relay.port}/v1/chat/completions`, "none", { stream: true });
  } finally {
    relay.stop(true);
    await sim.stop();
  }
  return calls;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

const work = mkdtempSync(join(tmpdir(), "forge-bench-engine-render-"));
try {
  const calls = await recordCalls();
  writeFileSync(join(work, "calls.json"), JSON.stringify(calls));
  const run = Bun.spawnSync([oraclePython(), join(ROOT, "bench", "lib", "vllm-chat-render.py"), join(work, "calls.json"), join(work, "out.json"), String(ROUNDS)], { cwd: ROOT, stderr: "pipe", stdout: "pipe" });
  if (run.exitCode !== 0) throw new Error(`bench/engine-render: vLLM's renderer failed (exit ${run.exitCode}): ${run.stderr.toString().slice(-2000)}`);
  const timed = JSON.parse(readFileSync(join(work, "out.json"), "utf8")) as Timed[];
  const wrong = timed.findIndex((t) => t.ids !== t.prompt_tokens);
  if (wrong >= 0) throw new Error(`bench/engine-render: call ${wrong + 1}: vLLM renders ${timed[wrong]!.ids} prompt tokens, the engine counted ${timed[wrong]!.prompt_tokens}`);
  console.log(`bench/engine-render: vLLM 0.33.0's chat-route preprocessing (render_chat) per call of the tool loop, CPU ms, median of ${ROUNDS} rounds`);
  console.log("  call  prompt tokens  vLLM render ms");
  timed.forEach((t, i) => console.log(`  ${String(i + 1).padStart(4)}  ${String(t.ids).padStart(13)}  ${median(t.cpu_ms).toFixed(2).padStart(14)}`));
  const mean = timed.reduce((s, t) => s + median(t.cpu_ms), 0) / timed.length;
  console.log(`  mean per call: ${mean.toFixed(2)} ms of the engine's API server CPU, which token-in mode does not ask of it`);
  console.log("  (what token-in costs the proxy instead: bun bench/ab.ts --scenario toolloop --modes)");
} finally {
  rmSync(work, { recursive: true, force: true });
}
