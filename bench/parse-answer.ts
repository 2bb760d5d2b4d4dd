/**
 * The parse of a long prompt's non-stream answer (`parseAnswer`, proxy/capture/answer-json.ts)
 * in a hot loop: this checkout's against another commit's, in interleaved rounds. The answer is
 * vLLM's shape for a 200 KB prompt (40k prompt ids, 20 tokens with logprobs); each round parses
 * it as a rollout's next call does (the memo holding the same ids).
 *
 *   bun bench/parse-answer.ts [--base REF] [--rounds 7] [--calls 300]
 *
 * Prints µs per answer for both and the median ratio this / base (docs/performance.md, issue 32's
 * third session).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnSync } from "node:child_process";
import { parseAnswer } from "../proxy/capture/answer-json.ts";
import { benchFlags } from "./lib/flags.ts";

const { flag } = benchFlags();
const BASE = flag("base", "HEAD~1");
const ROUNDS = Number(flag("rounds", "7"));
const CALLS = Number(flag("calls", "300"));
const ROOT = resolve(import.meta.dir, "..");

const shown = spawnSync("git", ["show", `${BASE}:proxy/capture/answer-json.ts`], { cwd: ROOT, encoding: "utf8" });
if (shown.status !== 0) {
  console.error(`bench/parse-answer: git show ${BASE}:proxy/capture/answer-json.ts failed: ${shown.stderr.trim()}`);
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "forge-bench-parse-"));
writeFileSync(join(dir, "answer-json.ts"), shown.stdout);
const base = (await import(join(dir, "answer-json.ts"))).parseAnswer as typeof parseAnswer;
rmSync(dir, { recursive: true, force: true });

const ids = Array.from({ length: 40_000 }, (_, i) => ((i + 1) * 2654435761) >>> 17);
const content = Array.from({ length: 20 }, (_, i) => ({ token: `t${i}`, logprob: -0.5, bytes: [116], top_logprobs: [] }));
const answer = JSON.stringify({
  id: "chatcmpl-1", object: "chat.completion", created: 1, model: "q",
  choices: [{ index: 0, message: { role: "assistant", content: "hello world" }, logprobs: { content }, finish_reason: "stop", token_ids: Array.from({ length: 20 }, (_, i) => i) }],
  usage: { prompt_tokens: 40_000, completion_tokens: 20, total_tokens: 40_020 }, prompt_logprobs: null, prompt_token_ids: ids, kv_transfer_params: null,
});
const wants = { tokenIds: false, logprobs: false, usage: true };
const timed = (parse: typeof parseAnswer, n: number): number => {
  const memo = {};
  const start = performance.now();
  for (let i = 0; i < n; i++) parse(answer, wants, memo);
  return ((performance.now() - start) / n) * 1000;
};
for (let r = 0; r < 3; r++) (timed(base, 50), timed(parseAnswer, 50)); // warm-up
const rounds: { base: number; this: number }[] = [];
for (let r = 0; r < ROUNDS; r++) rounds.push(r % 2 ? { this: timed(parseAnswer, CALLS), base: timed(base, CALLS) } : { base: timed(base, CALLS), this: timed(parseAnswer, CALLS) });
const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1]!;
console.log(`bench/parse-answer: a ${answer.length}-character answer (40k prompt ids), µs per parse, median of ${ROUNDS} interleaved rounds of ${CALLS}`);
console.log(`  base ${BASE}  ${median(rounds.map((r) => r.base)).toFixed(1)} µs`);
console.log(`  this checkout  ${median(rounds.map((r) => r.this)).toFixed(1)} µs`);
console.log(`  this / base    ${median(rounds.map((r) => r.this / r.base)).toFixed(2)}`);
