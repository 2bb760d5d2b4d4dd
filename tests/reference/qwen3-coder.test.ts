/**
 * Qwen3-Coder against the real stack: for every request of the rendering corpus (synthetic
 * conversations and requests recorded from real harness CLIs), model/'s `QWEN3_CODER` and the
 * simulator playing a `--tool-call-parser qwen3_coder` server render the prompt as vLLM 0.33.0
 * does when it serves a model directory whose tokenizer_config.json holds Qwen3-Coder's template
 * (model/templates/qwen3-coder.jinja) with `--tool-call-parser qwen3_coder` and no reasoning
 * parser (its preprocessing, then transformers' apply_chat_template), text for text and id for
 * id; and the simulator's answer for its sampled tokens (Qwen3-Coder's XML tool calls) equals
 * what vLLM's chat server answers for the same tokens, streamed and not.
 *
 * Needs .venv/reference (bash python/build-env.sh); a missing venv fails, never skips.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadModel, QWEN3_CODER, type Model } from "../../model/index.ts";
import { createPolicySimulator } from "../../simulator/testing.ts";
import { startOracle, type Oracle } from "./oracle.ts";
import { CASES, harnessCases, type RenderCase } from "./rendering-corpus.ts";
import { chatAnswerOf, mergedChatStream } from "./deltas.ts";

const SLOW = 600_000;
let oracle: Oracle;
let model: Model;
let dir: string;
// Every conversation plays a script of tool calls (shell, write with a multi-line file, read), so
// that the answers hold XML calls with string, list (Codex's argv) and other values.
const script = {
  failure_rate: 0,
  tasks: [{ name: "any", match: { regex: "[\\s\\S]" }, steps: [{ bash: "ls -la" }, { say: "Writing it.", write: { path: "notes.md", content: "line 1\n  indented\n\n" } }, { read: "notes.md" }, { bash: "wc -l notes.md" }, { finish: "Done." }] }],
};
const sim = createPolicySimulator({ seed: 9, toolCallParser: "qwen3_coder", script });
const checked = { prompts: 0, answers: 0, withCalls: 0, streamedAnswers: 0 };
/** The server: Qwen3-Coder's template in the model directory, --tool-call-parser qwen3_coder, no reasoning parser. */
const server = () => ({ tokenizer: dir, tool_parser: "qwen3_coder", reasoning_parser: null });

beforeAll(async () => {
  // A model directory as Qwen3-Coder ships it: Qwen3's tokenizer.json, the config with Qwen3-Coder's template.
  dir = mkdtempSync(join(tmpdir(), "forge-qwen3-coder-model-"));
  symlinkSync(join(QWEN3_CODER.dir, "tokenizer.json"), join(dir, "tokenizer.json"));
  const config = JSON.parse(readFileSync(join(QWEN3_CODER.dir, "tokenizer_config.json"), "utf8"));
  writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify({ ...config, chat_template: readFileSync(QWEN3_CODER.chatTemplate!, "utf8") }));
  [oracle, model] = await Promise.all([startOracle(), loadModel(QWEN3_CODER)]);
}, SLOW);
afterAll(async () => {
  await oracle?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  console.log(`qwen3-coder suite: ${checked.prompts} prompts equal vLLM's, ${checked.answers} simulator answers (${checked.withCalls} with XML tool calls) and ${checked.streamedAnswers} streamed ones equal vLLM's for the same tokens`);
});

// Images: Qwen3-Coder is text only (vLLM refuses them, and so does the simulator).
const hasImage = (c: RenderCase) => JSON.stringify(c.request).includes('"image_url"');
const ALL = [...CASES, ...harnessCases()].filter((c) => !hasImage(c));

const simulator = (body: Record<string, unknown>) => sim.fetch(new Request("http://sim/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));

function simulatorBody(c: RenderCase): Record<string, unknown> {
  const { stream: _s, stream_options: _o, logprobs: _l, top_logprobs: _t, n: _n, ...rest } = c.request;
  return { ...rest, return_token_ids: true };
}

describe("Qwen3-Coder: model/ and the simulator render and answer as vLLM 0.33.0 with --tool-call-parser qwen3_coder", () => {
  for (const c of ALL) {
    test(
      c.name,
      async () => {
        const ref = await oracle.call({ op: "vllm_render", request: c.request, ...server() });
        if (ref.error) {
          // What vLLM refuses with this template, model/ refuses too.
          expect(() => model.renderChatIds(c.request as never)).toThrow();
          return;
        }
        expect(model.renderChat(c.request as never)).toBe(ref.text);
        expect(model.renderChatIds(c.request as never)).toEqual(ref.ids);
        checked.prompts++;

        const res = await simulator(simulatorBody(c));
        expect(res.status).toBe(200);
        const body = (await res.json()) as { prompt_token_ids: number[]; choices: { message: Record<string, any>; token_ids: number[]; finish_reason: string }[] };
        expect(body.prompt_token_ids).toEqual(ref.ids);
        const choice = body.choices[0]!;
        const finish = choice.finish_reason === "length" ? "length" : "stop";
        const vllm = await oracle.call({ op: "vllm_derender", request: c.request, ids: choice.token_ids, prompt_ids: ref.ids, finish_reason: finish, ...server() });
        expect(vllm.error).toBeUndefined();
        const ours = chatAnswerOf(choice.message, choice.finish_reason);
        expect(ours).toEqual(chatAnswerOf(vllm.message, vllm.finish_reason));
        checked.answers++;
        if (ours.tool_calls.length > 0) checked.withCalls++;

        const streamed = await simulator({ ...simulatorBody(c), stream: true });
        const merged = mergedChatStream(await streamed.text());
        const vllmStream = await oracle.call({ op: "vllm_derender", request: c.request, ids: choice.token_ids, prompt_ids: ref.ids, stream: 1, finish_reason: finish, ...server() });
        expect(vllmStream.error).toBeUndefined();
        expect(merged).toEqual({ content: vllmStream.merged.content, reasoning: vllmStream.merged.reasoning, tool_calls: vllmStream.merged.tool_calls, finish_reason: vllmStream.deltas.at(-1).finish_reason });
        checked.streamedAnswers++;
      },
      SLOW,
    );
  }

  test("the suite checked prompts and XML tool calls", () => {
    expect(checked.prompts).toBeGreaterThanOrEqual(50);
    expect(checked.withCalls).toBeGreaterThanOrEqual(10);
  });
});
