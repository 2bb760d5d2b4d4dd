/**
 * What token-in mode takes off the engine's API server: vLLM 0.33.0's own chat-route
 * preprocessing (OnlineRenderer.render_chat: the messages parsed, the chat template run over the
 * whole conversation, the whole prompt tokenized) and its reasoning and tool parsers over the
 * streamed answer (ChatStreamProcessor.step, one engine step a token), per call of the tool loop,
 * timed in CPU in vLLM's own code (bench/lib/vllm-chat-render.py, the reference venv,
 * python/build-env.sh). In engine mode vLLM does this for every call, the conversation whole each
 * time; in token-in mode the proxy renders only what a call appends and parses the answer, and
 * vLLM's /v1/completions gets ids. It also times vLLM's incremental detokenizer over each answer,
 * which /v1/completions still runs and the generate route asked with `detokenize: false`
 * (`--token-in-route generate`) does not. `bun bench/ab.ts --scenario toolloop --modes`
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
import { oraclePython } from "../tests/reference/oracle.ts";
import { benchFlags } from "./lib/flags.ts";
import { recordToolLoop } from "./lib/record-tool-loop.ts";

const ROOT = resolve(import.meta.dir, "..");
const { flag } = benchFlags();
const ROUNDS = Number(flag("rounds", "5"));

type Call = { request: Record<string, unknown>; prompt_tokens: number; output_ids: number[] };
type Timed = { prompt_tokens: number; ids: number; tool_calls: number; render_ms: number[]; parsers_ms: number[]; detokenizer_ms: number[] };

/** The tool loop's Chat requests as vLLM gets them, each with the prompt length the engine reported. */
async function recordCalls(): Promise<Call[]> {
  return (await recordToolLoop()).map((c) => {
    if (c.promptTokens === undefined) throw new Error("bench/engine-render: the simulator's answer carries no usage (stream_options.include_usage)");
    return { request: c.request, prompt_tokens: c.promptTokens, output_ids: c.outputIds };
  });
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
  console.log(`bench/engine-render: vLLM 0.33.0's chat-route work per call of the tool loop that token-in mode does not ask of it, CPU ms, median of ${ROUNDS} rounds`);
  // The tool loop's answers are twelve tool calls and a final answer: vLLM's parser must find them so.
  const unparsed = timed.findIndex((t, i) => t.tool_calls !== (i < timed.length - 1 ? 1 : 0));
  if (unparsed >= 0) throw new Error(`bench/engine-render: call ${unparsed + 1}: vLLM's parsers found ${timed[unparsed]!.tool_calls} tool calls in the answer`);
  console.log("  call  prompt tokens  answer tokens  render ms  parsers ms  detokenizer ms");
  const rows = timed.map((t, i) => ({ render: median(t.render_ms), parsers: median(t.parsers_ms), detokenizer: median(t.detokenizer_ms), answer: calls[i]!.output_ids.length, ids: t.ids }));
  rows.forEach((r, i) => console.log(`  ${String(i + 1).padStart(4)}  ${String(r.ids).padStart(13)}  ${String(r.answer).padStart(13)}  ${r.render.toFixed(2).padStart(9)}  ${r.parsers.toFixed(2).padStart(10)}  ${r.detokenizer.toFixed(2).padStart(14)}`));
  const mean = (f: (r: (typeof rows)[number]) => number) => rows.reduce((s, r) => s + f(r), 0) / rows.length;
  const chatRoute = mean((r) => r.render + r.parsers);
  console.log(`  mean per call: render ${mean((r) => r.render).toFixed(2)} ms + parsers ${mean((r) => r.parsers).toFixed(2)} ms = ${chatRoute.toFixed(2)} ms of the engine's API server CPU that token-in does not ask of it;`);
  console.log(`  with --token-in-route generate also the detokenizer's ${mean((r) => r.detokenizer).toFixed(2)} ms: ${(chatRoute + mean((r) => r.detokenizer)).toFixed(2)} ms`);
  console.log("  (render: OnlineRenderer.render_chat; parsers: the qwen3 and hermes parsers' ChatStreamProcessor.step over the answer, one token a step;");
  console.log("  detokenizer: the output processor's IncrementalDetokenizer, one token a step, which /v1/completions pays too)");
  console.log("  what token-in costs the proxy instead: bun bench/ab.ts --scenario toolloop --modes (its per-call CPU, token-in less engine mode)");
} finally {
  rmSync(work, { recursive: true, force: true });
}
