/**
 * The engine's reasoning-token count (vLLM 0.33.0's `reasoning_token_count`), on Qwen3's
 * grammar over Qwen3's tokenizer: what counts and what does not (tests/reference/ holds it to
 * vLLM's chat route on a corpus).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { loadModel, type Model } from "../../index.ts";
import { qwen3Config } from "../qwen3.ts";
import { streamingEngine, type StreamingEngine } from "./streaming-engine.ts";

const THINK = 151667;
const THINK_END = 151668;
let model: Model;
beforeAll(async () => {
  model = await loadModel();
}, 60_000);

const engineOf = (thinking = true): StreamingEngine => {
  const t = model.tokenizer;
  return streamingEngine(qwen3Config(thinking), { specialTokens: t.specialTokens, tokenId: t.tokenId, decodeToken: (id) => t.decode([id]) });
};
/** Feeds each id with its own text, as a detokenizer hands them over one by one. */
const feedEach = (engine: StreamingEngine, ids: number[]) => ids.forEach((id) => engine.feed(model.tokenizer.decode([id]), [id]));

describe("the reasoning-token count", () => {
  test("the tokens of the think block count; <think>, </think> and what follows do not", () => {
    const engine = engineOf();
    const reasoning = model.tokenizer.encode("\nLet me think.\n");
    feedEach(engine, [THINK, ...reasoning, THINK_END, ...model.tokenizer.encode("\n\nHello.")]);
    engine.finish();
    expect(engine.reasoningTokenCount).toBe(reasoning.length);
  });

  test("a delta whose text the detokenizer holds back loses its tokens (vLLM's scanner has no text to give them)", () => {
    const engine = engineOf();
    engine.feed("<think>", [THINK]);
    engine.feed("\nhm", model.tokenizer.encode("\nhm"));
    engine.feed("", [1000]);
    expect(engine.reasoningTokenCount).toBe(model.tokenizer.encode("\nhm").length);
  });

  test("<think> sampled before its text comes waits for it, and so do the tokens after it: they count at the end", () => {
    const engine = engineOf();
    engine.feed("", [THINK]);
    engine.feed("\nhm", model.tokenizer.encode("\nhm"));
    expect(engine.reasoningTokenCount).toBe(0);
    engine.finish();
    expect(engine.reasoningTokenCount).toBe(model.tokenizer.encode("\nhm").length);
  });

  test("an output fed as text alone counts nothing; reset starts the count again", () => {
    const engine = engineOf();
    engine.feed("<think>\nr\n</think>\n\nx");
    engine.finish();
    expect(engine.reasoningTokenCount).toBe(0);
    engine.reset();
    feedEach(engine, model.tokenizer.encode("a b"));
    expect(engine.reasoningTokenCount).toBe(model.tokenizer.encode("a b").length);
    engine.reset();
    expect(engine.reasoningTokenCount).toBe(0);
  });

  test("with thinking off the output starts in content: nothing counts", () => {
    const engine = engineOf(false);
    feedEach(engine, [THINK, ...model.tokenizer.encode("\nr\n"), THINK_END, ...model.tokenizer.encode("x")]);
    engine.finish();
    expect(engine.reasoningTokenCount).toBe(0);
  });

  test("a <tool_call> ends the count (implicit end of reasoning)", () => {
    const engine = engineOf();
    const reasoning = model.tokenizer.encode("\nI will call it ");
    feedEach(engine, [THINK, ...reasoning, ...model.tokenizer.encode('<tool_call>\n{"name": "f"}\n</tool_call>')]);
    engine.finish();
    expect(engine.reasoningTokenCount).toBe(reasoning.length);
  });
});
