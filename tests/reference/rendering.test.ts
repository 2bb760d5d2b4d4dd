/**
 * Rendering suite: for every request of the corpus (tests/reference/rendering-corpus.ts:
 * synthetic conversations and requests recorded from real harness CLIs), the prompt that
 * model/ and the policy simulator render equals, text for text and id for id, what vLLM 0.33.0
 * renders (its message preprocessing, then transformers' apply_chat_template of Qwen3's
 * template, then encode(add_special_tokens=False)), run by the Python oracle. The simulator's
 * answer to each request also equals what vLLM's chat server answers for the same sampled
 * tokens, streamed and not. Requests vLLM refuses, the simulator refuses too.
 *
 * Needs .venv/reference (bash python/build-env.sh); a missing venv fails, never skips.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadModel, type Model } from "../../model/index.ts";
import { createPolicySimulator } from "../../simulator/testing.ts";
import { startOracle, type Oracle } from "./oracle.ts";
import { CASES, REJECTED, harnessCases, type RenderCase } from "./rendering-corpus.ts";
import { chatAnswerOf, mergedChatStream } from "./deltas.ts";

const SLOW = 600_000;
let oracle: Oracle;
let model: Model;
const sim = createPolicySimulator({ seed: 9 });
const checked = { prompts: 0, simulatorPrompts: 0, answers: 0, streamedAnswers: 0, rejected: 0 };

beforeAll(async () => {
  [oracle, model] = await Promise.all([startOracle(), loadModel()]);
}, SLOW);
afterAll(async () => {
  await oracle?.close();
  console.log(
    `rendering suite: ${checked.prompts} prompts equal vLLM's (model/), ${checked.simulatorPrompts} through the simulator, ` +
      `${checked.answers} simulator answers and ${checked.streamedAnswers} streamed ones equal vLLM's for the same tokens, ${checked.rejected} refusals shared`,
  );
});

const harness = harnessCases();
const ALL = [...CASES, ...harness];

test("the corpus holds at least 50 conversations, and requests from each recorded harness", () => {
  expect(CASES.length).toBeGreaterThanOrEqual(50);
  expect(new Set(harness.map((c) => c.name.split(" ")[0])).size).toBeGreaterThanOrEqual(5);
});

async function simulator(path: string, body: Record<string, unknown>): Promise<Response> {
  return sim.fetch(new Request(`http://sim${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
}

function simulatorBody(c: RenderCase): Record<string, unknown> {
  const { stream: _s, stream_options: _o, logprobs: _l, top_logprobs: _t, n: _n, ...rest } = c.request;
  return { ...rest, return_token_ids: true };
}

describe("prompts: model/ and the simulator render as vLLM 0.33.0", () => {
  for (const c of ALL) {
    test(
      c.name,
      async () => {
        const ref = await oracle.call({ op: "vllm_render", request: c.request });
        expect(ref.error).toBeUndefined();
        expect(model.renderChat(c.request as never)).toBe(ref.text);
        expect(model.renderChatIds(c.request as never)).toEqual(ref.ids);
        checked.prompts++;

        // The simulator: the same prompt ids, and the answer vLLM gives for its sampled tokens.
        const res = await simulator("/v1/chat/completions", simulatorBody(c));
        expect(res.status).toBe(200);
        const body = (await res.json()) as { prompt_token_ids: number[]; choices: { message: Record<string, any>; token_ids: number[]; finish_reason: string }[] };
        expect(body.prompt_token_ids).toEqual(ref.ids);
        checked.simulatorPrompts++;
        const choice = body.choices[0]!;
        const vllm = await oracle.call({ op: "vllm_derender", request: c.request, ids: choice.token_ids, prompt_ids: ref.ids, finish_reason: choice.finish_reason === "length" ? "length" : "stop" });
        expect(vllm.error).toBeUndefined();
        const ours = chatAnswerOf(choice.message, choice.finish_reason);
        expect(ours).toEqual(chatAnswerOf(vllm.message, vllm.finish_reason));
        checked.answers++;

        // Streamed one token per chunk, as the simulator streams by default.
        const streamed = await simulator("/v1/chat/completions", { ...simulatorBody(c), stream: true });
        const merged = mergedChatStream(await streamed.text());
        const vllmStream = await oracle.call({ op: "vllm_derender", request: c.request, ids: choice.token_ids, prompt_ids: ref.ids, stream: 1, finish_reason: choice.finish_reason === "length" ? "length" : "stop" });
        expect(vllmStream.error).toBeUndefined();
        expect(merged).toEqual({
          content: vllmStream.merged.content,
          reasoning: vllmStream.merged.reasoning,
          tool_calls: vllmStream.merged.tool_calls,
          finish_reason: vllmStream.deltas.at(-1).finish_reason,
        });
        checked.streamedAnswers++;
      },
      SLOW,
    );
  }
});

describe("requests vLLM 0.33.0 refuses, the simulator refuses", () => {
  for (const c of REJECTED) {
    test(
      c.name,
      async () => {
        const ref = await oracle.call({ op: "vllm_render", request: c.request });
        expect(ref.error).toBeString();
        const res = await simulator("/v1/chat/completions", c.request);
        expect(res.status).toBe(400);
        checked.rejected++;
      },
      SLOW,
    );
  }
});
