/**
 * Reasoning-token suite: `usage.completion_tokens_details.reasoning_tokens` as model/ counts it
 * (`derenderChat(...).reasoningTokens`, `chatStreamDerenderer(...).reasoningTokens()`) equals
 * vLLM 0.33.0's chat route's count for the same output ids (the oracle's
 * `vllm_reasoning_tokens`: its Parser built as the route builds it, fed as the derender feeds
 * it, then asked `count_reasoning_tokens` where serving.py asks it):
 *
 * - not streamed (after the parse: the output parsed once more from its ids);
 * - streamed in steps of 1, 3 and 8 ids, after every step (`continuous_usage_stats`) and once
 *   after the last (the usage chunk without it);
 * - over the parsing corpus (thinking then content, then a tool call, no think block, a call
 *   inside the think block, special tokens, non-ASCII) as the engine ends it (end-of-turn token
 *   or max_tokens) with thinking on and off, with the hermes and qwen3_coder tool parsers; over
 *   outputs whose markup is spelled in plain tokens (matched by id only, their text is
 *   reasoning) or holds a character split across tokens (a streamed step whose text the
 *   detokenizer holds back loses its tokens, as in vLLM); after prompts that opened `<think>` or
 *   closed it (continue_final_message); and on a server with no reasoning parser (no count: the
 *   route writes `completion_tokens_details: null`).
 *
 * Needs .venv/reference (bash python/build-env.sh); a missing venv fails, never skips.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chatStreamDerenderer, derenderChat, loadModel, type DerenderOptions, type EngineFinish, type Model } from "../../model/index.ts";
import { startOracle, type Oracle } from "./oracle.ts";
import { engineEnded, ENGINE_ENDINGS, IM_END, OUTPUTS, TOOLS } from "./parsing-corpus.ts";

const SLOW = 600_000;
const STEPS = [1, 3, 8];
let oracle: Oracle;
let model: Model;
const checked = { outputs: 0, counts: 0, reasoning: 0 };

beforeAll(async () => {
  [oracle, model] = await Promise.all([startOracle(), loadModel()]);
}, SLOW);
afterAll(async () => {
  await oracle?.close();
  console.log(`reasoning-token suite: ${checked.outputs} outputs, ${checked.counts} counts (${checked.reasoning} of them not 0) equal vLLM 0.33.0's chat route's`);
});

interface Case {
  request: Record<string, unknown>;
  ids: number[];
  finish: EngineFinish;
  toolParser?: string | null;
  reasoningParser?: string | null;
}

/** model/'s counts for a case, shaped as the oracle answers: not streamed, after each step of n ids, after the last. */
function ours(c: Case, promptTokenIds: number[], n: number) {
  const options: DerenderOptions = { ...c.request, promptTokenIds, ...(c.toolParser !== undefined ? { toolParser: c.toolParser } : {}), ...(c.reasoningParser !== undefined ? { reasoningParser: c.reasoningParser } : {}) };
  const nonStream = derenderChat(model, options, c.ids, c.finish).reasoningTokens;
  const steps = c.ids.length === 0 ? [[]] : Array.from({ length: Math.ceil(c.ids.length / n) }, (_, i) => c.ids.slice(i * n, i * n + n));
  const continuous = chatStreamDerenderer(model, options);
  const perStep = steps.map((ids, i) => {
    continuous.push(ids, i === steps.length - 1 ? c.finish : undefined);
    return continuous.reasoningTokens();
  });
  const once = chatStreamDerenderer(model, options);
  steps.forEach((ids, i) => once.push(ids, i === steps.length - 1 ? c.finish : undefined));
  return { non_stream: nonStream, continuous: perStep, final: once.reasoningTokens() };
}

async function expectVllmCounts(c: Case): Promise<void> {
  const promptIds = model.renderChatIds(c.request as never);
  for (const n of STEPS) {
    const ref = await oracle.call({
      op: "vllm_reasoning_tokens",
      request: c.request,
      ids: c.ids,
      prompt_ids: promptIds,
      stream: n,
      finish_reason: c.finish.reason,
      ...(c.toolParser !== undefined ? { tool_parser: c.toolParser } : {}),
      ...(c.reasoningParser !== undefined ? { reasoning_parser: c.reasoningParser } : {}),
    });
    expect(ref.error).toBeUndefined();
    expect(ours(c, promptIds, n)).toEqual({ non_stream: ref.non_stream, continuous: ref.continuous, final: ref.final });
    checked.counts += 2 + (ref.continuous?.length ?? 0);
    if (ref.non_stream) checked.reasoning++;
  }
}

const user = { role: "user", content: "q" };
const endOfTurn = { reason: "stop", stopToken: true };
const maxTokens = { reason: "length", stopToken: false };

describe("the parsing corpus, as the engine ends it", () => {
  for (const output of OUTPUTS) {
    for (const toolParser of ["hermes", "qwen3_coder"]) {
      for (const [ending, thinking] of ENGINE_ENDINGS) {
        test(
          `${output.name}, ${toolParser}, ${ending}, thinking ${thinking ? "on" : "off"}`,
          async () => {
            const { ids, finish } = engineEnded(model.tokenizer.encode(output.text), ending);
            await expectVllmCounts({ request: { messages: [user], tools: TOOLS, chat_template_kwargs: { enable_thinking: thinking } }, ids, finish, toolParser });
          },
          SLOW,
        );
      }
    }
    checked.outputs++;
  }
});

describe("outputs with markup spelled in plain tokens", () => {
  // Each piece encoded on its own: "<|im_" + "end|>" are plain tokens whose text is a special token's.
  const pieces = (...parts: (string | number)[]) => parts.flatMap((p) => (typeof p === "number" ? [p] : model.tokenizer.encode(p)));
  const THINK = 151667;
  const THINK_END = 151668;
  const cases: [string, () => number[]][] = [
    ["a special token's text in plain tokens inside reasoning (plain text once ids were seen: it counts)", () => pieces(THINK, "\nI see <|im_", "end|> in the text and <|endof", "text|> too\n", THINK_END, "\n\nok", IM_END)],
    ["<tool_call> spelled in plain tokens inside reasoning (still reasoning)", () => pieces(THINK, "\nmaybe <tool_", 'call> {"name": "bash"} later\n', THINK_END, "\n\nok", IM_END)],
    ["<function= and > inside reasoning (no transition: reasoning)", () => pieces(THINK, "\n<function=bash> a -> b\n", THINK_END, "\n\nok", IM_END)],
    ["no <think> token: the output starts in reasoning", () => pieces("straight into thoughts\n", THINK_END, "\n\nanswer", IM_END)],
    ["a split emoji inside reasoning (streamed, its held-back step loses its tokens)", () => pieces(THINK, "\nhmm 🦀🤔 ok\n", THINK_END, "\n\ndone", IM_END)],
  ];
  for (const [name, ids] of cases) {
    for (const toolParser of ["hermes", "qwen3_coder"]) {
      test(`${name}, ${toolParser}`, () => expectVllmCounts({ request: { messages: [user], tools: TOOLS }, ids: ids(), finish: endOfTurn, toolParser }), SLOW);
    }
  }
});

describe("prompts that opened or closed the think block (continue_final_message)", () => {
  const cont = (assistant: string) => ({ messages: [user, { role: "assistant", content: assistant }], add_generation_prompt: false, continue_final_message: true });
  const cases: [string, Record<string, unknown>, string][] = [
    ["the prompt opened <think>: the output reasons until </think>", cont("<think>\nI was thinking"), " some more.\n</think>\n\nDone."],
    ["the prompt opened <think>, cut by max_tokens", cont("<think>\nI was thinking"), " and thinking and thinking"],
    ["the prompt closed the think block: nothing counts", cont("<think>\nx\n</think>\n\nPartial"), " answer, <think>not this</think> either."],
  ];
  for (const [name, request, text] of cases) {
    test(
      name,
      async () => {
        expect(model.renderChat(request as never).endsWith((request.messages as { content: string }[])[1]!.content)).toBe(true);
        const ids = model.tokenizer.encode(text);
        const cut = name.includes("max_tokens");
        await expectVllmCounts({ request, ids: cut ? ids : [...ids, IM_END], finish: cut ? maxTokens : endOfTurn });
      },
      SLOW,
    );
  }
});

describe("a server without a reasoning parser", () => {
  test("no count: completion_tokens_details is null", async () => {
    const ids = [...model.tokenizer.encode("<think>\nr\n</think>\n\nHi"), IM_END];
    const ref = await oracle.call({ op: "vllm_reasoning_tokens", request: { messages: [user] }, ids, reasoning_parser: null, stream: 1 });
    expect(ref.error).toBeUndefined();
    expect(ref.configured).toBe(false);
    const promptIds = model.renderChatIds({ messages: [user] } as never);
    const got = ours({ request: { messages: [user] }, ids, finish: endOfTurn, reasoningParser: null }, promptIds, 1);
    expect(got).toEqual({ non_stream: null, continuous: ids.map(() => null), final: null });
    expect(ref.non_stream).toBeNull();
  }, SLOW);
});
