/**
 * The output parsers on a few outputs, expected values from vLLM 0.33.0's chat server with
 * `--reasoning-parser qwen3` and the named tool parser (tests/reference/ checks a larger corpus
 * against the real thing), streamed in chunks of 1, 2 and 5 tokens too.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { loadModel, type DeltaMessage, type Model } from "../index.ts";
import { coerceToSchemaType, pythonFloat, pythonInt } from "./coerce.ts";
import { partialTagOverlap } from "./hermes.ts";
import { qwen3ArgConverter } from "./qwen3.ts";

let model: Model;
beforeAll(async () => {
  model = await loadModel();
}, 60_000);

const tools = [
  { type: "function", function: { name: "f", parameters: { type: "object", properties: { a: { type: "integer" }, s: { type: "string" }, o: { type: "object" }, b: { type: "boolean" }, n: { type: ["number", "null"] } } } } },
];
type Expected = { reasoning?: string; content?: string; calls?: [string, string][] };
const cases: [parser: string, text: string, thinking: boolean, expected: Expected][] = [
  ["hermes", '<think>\nhm\n</think>\n\nHi <tool_call>\n{"name": "f", "arguments": {"a":1.0, "s":"é"}}\n</tool_call> after', true, { reasoning: "\nhm\n", content: "\n\nHi ", calls: [["f", '{"a": 1.0, "s": "é"}']] }],
  // One bad call: hermes gives up on all of them, the text stays content.
  ["hermes", '<think>\nhm</think>x<tool_call>\n{"name": "f", "arguments": {"a":1}}\n</tool_call><tool_call>{bad}</tool_call>', true, { reasoning: "\nhm", content: 'x<tool_call>\n{"name": "f", "arguments": {"a":1}}\n</tool_call><tool_call>{bad}</tool_call>' }],
  ["hermes", '<think>\nhm</think>\n\n<tool_call>\n{"name": "f", "arguments": {"a":1}', true, { reasoning: "\nhm", content: '\n\n<tool_call>\n{"name": "f", "arguments": {"a":1}' }],
  // Thinking on and no </think>: all of it is reasoning.
  ["hermes", "plain answer with no think", true, { reasoning: "plain answer with no think" }],
  ["hermes", "<think>\n\n</think>\n\nanswer", false, { content: "<think>\n\n</think>\n\nanswer" }],
  [
    "qwen3_coder",
    '<think>\nplan\n</think>\n\nDoing it.\n<tool_call>\n<function=f>\n<parameter=a>\n5\n</parameter>\n<parameter=s>\n x \n</parameter>\n<parameter=o>\n{"k": [1, 2.5]}\n</parameter>\n<parameter=b>\nTrue\n</parameter>\n<parameter=n>\nnull\n</parameter>\n</function>\n</tool_call>',
    true,
    { reasoning: "\nplan\n", content: "Doing it.", calls: [["f", '{"a": 5, "s": " x ", "o": {"k": [1, 2.5]}, "b": true, "n": null}']] },
  ],
  ["qwen3_coder", "<think>\nx</think><tool_call>\n<function=f>\n<parameter=a>\n1_000\n</parameter>\n<parameter=a>\n2\n", true, { reasoning: "\nx", calls: [["f", '{"a": 1000}']] }],
];

function merge(deltas: (DeltaMessage | null)[]) {
  let content = "";
  let reasoning = "";
  const calls: [string, string][] = [];
  for (const d of deltas) {
    content += d?.content ?? "";
    reasoning += d?.reasoning ?? "";
    for (const c of d?.toolCalls ?? []) {
      calls[c.index] ??= ["", ""];
      calls[c.index]![0] += c.function?.name ?? "";
      calls[c.index]![1] += c.function?.arguments ?? "";
    }
  }
  return { reasoning: reasoning || undefined, content: content || undefined, calls: calls.length ? calls : undefined };
}

describe("chat output as vLLM 0.33.0 answers it", () => {
  test.each(cases.map((c, i) => [i, ...c] as const))("case %d (%s)", (_i, parser, text, thinking, expected) => {
    const options = { tools, toolParser: parser, chat_template_kwargs: { enable_thinking: thinking } };
    const parsed = model.outputParser(options).parse(text);
    const got: Expected = { reasoning: parsed.reasoning ?? undefined, content: parsed.content ?? undefined, calls: parsed.toolCalls.length ? parsed.toolCalls.map((c) => [c.name, c.arguments] as [string, string]) : undefined };
    expect(got).toEqual(expected);
  });

  test("streamed in chunks of 1, 2 and 5 tokens, the deltas add up to the answer (outputs in Qwen3's own format)", () => {
    // vLLM's own streams differ from its non-streamed answers elsewhere: hermes streams the
    // arguments' text as sampled but answers json.dumps of it, and qwen3_coder strips the
    // content before a call only when not streaming (tests/reference/ compares both with vLLM).
    const wellFormed: [string, string, boolean][] = [
      ["hermes", '<think>\nhm\n</think>\n\nHi\n<tool_call>\n{"name": "f", "arguments": {"a": 1.0, "s": "é"}}\n</tool_call>\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>', true],
      ["hermes", cases[3]![1], true],
      // Braces, brackets and escaped quotes inside strings, and whitespace after "arguments": split across deltas.
      ["hermes", '<think>\nr\n</think>\n\nHi\n<tool_call>\n{"name": "f", "arguments" :  \n  {"s": "a}b{\\"}", "o": {"k": [1, {"x": "]"}]}}}\n</tool_call>\n<tool_call>\n{"name": "f", "arguments": {"s": "\\\\}"}}\n</tool_call>', true],
      ["qwen3_coder", cases[5]![1].replace("\n\nDoing it.\n", ""), true],
      ["hermes", "answer without thinking", false],
    ];
    for (const [parser, text, thinking] of wellFormed) {
      for (const n of [1, 2, 5]) {
        const promptTokenIds = model.renderChatIds({ messages: [{ role: "user", content: "q" }], chat_template_kwargs: { enable_thinking: thinking } });
        const p = model.outputParser({ tools, toolParser: parser, chat_template_kwargs: { enable_thinking: thinking }, promptTokenIds });
        const ids = model.tokenizer.encode(text);
        const deltas = [];
        for (let i = 0; i < ids.length; i += n) deltas.push(p.parseDelta(model.tokenizer.decode(ids.slice(i, i + n)), ids.slice(i, i + n), i + n >= ids.length));
        const whole = model.outputParser({ tools, toolParser: parser, chat_template_kwargs: { enable_thinking: thinking } }).parse(text);
        expect(merge(deltas)).toEqual({ reasoning: whole.reasoning ?? undefined, content: whole.content ?? undefined, calls: whole.toolCalls.length ? whole.toolCalls.map((c) => [c.name, c.arguments]) : undefined });
      }
    }
  });

  test("tool_choice none keeps hermes calls as text; no tools sent: the same", () => {
    const text = '<think>\n\n</think>\n\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>';
    expect(model.outputParser({ tools, tool_choice: "none" }).parse(text)).toMatchObject({ content: '\n\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>', toolCalls: [] });
    expect(model.outputParser({}).parse(text).toolCalls).toEqual([]);
    expect(model.outputParser({ tools, include_reasoning: false }).parse("<think>\nr\n</think>\n\nx")).toMatchObject({ reasoning: null, content: "\n\nx" });
  });

  test("finish_reason: tool_calls only when calls came and the model stopped by itself", () => {
    const p = model.outputParser({ tools });
    expect([p.finishReason("stop", true), p.finishReason("length", true), p.finishReason("stop", false)]).toEqual(["tool_calls", "length", "stop"]);
    expect(model.outputParser({ tools, tool_choice: { type: "function", function: { name: "f" } } }).finishReason("stop", true)).toBe("stop");
  });

  test("an unknown parser name is an error naming the known ones", () => {
    expect(() => model.outputParser({ toolParser: "nope" })).toThrow(/unknown tool-call parser "nope"; known: hermes/);
  });
});

describe("reasoning tokens (usage.completion_tokens_details.reasoning_tokens), as vLLM 0.33.0's chat route counts them", () => {
  const THINK = 151667;
  const IM_END = 151645;
  const promptOf = (thinking: boolean) => model.renderChatIds({ messages: [{ role: "user", content: "q" }], chat_template_kwargs: { enable_thinking: thinking } });
  const reasoning = () => model.tokenizer.encode("\nLet me think.\n");
  const output = () => [THINK, ...reasoning(), ...model.tokenizer.encode("</think>\n\nHello."), IM_END];

  test("not streamed: the output's ids parsed once more; streamed: what the reasoning parser counted, step by step", () => {
    const ids = output();
    const whole = model.outputParser({ tools, promptTokenIds: promptOf(true) });
    whole.parse(model.tokenizer.decode(ids.slice(0, -1)));
    expect(whole.reasoningTokens(ids)).toBe(reasoning().length);
    const stream = model.outputParser({ tools, promptTokenIds: promptOf(true) });
    const counts = ids.map((id, i) => {
      stream.parseDelta(model.tokenizer.decode([id]), [id], i === ids.length - 1);
      return stream.reasoningTokens(ids.slice(0, i + 1));
    });
    expect(counts).toEqual(ids.map((_, i) => Math.min(i, reasoning().length)));
  });

  test("thinking off, or a prompt that closed reasoning: 0; no ids: 0", () => {
    const ids = output();
    const off = model.outputParser({ tools, chat_template_kwargs: { enable_thinking: false }, promptTokenIds: promptOf(false) });
    off.parse(model.tokenizer.decode(ids.slice(0, -1)));
    expect(off.reasoningTokens(ids)).toBe(0);
    const closed = model.outputParser({ tools, promptTokenIds: [...promptOf(true), THINK, ...model.tokenizer.encode("\nx\n</think>\n\n")] });
    closed.parse(model.tokenizer.decode(ids.slice(0, -1)));
    expect(closed.reasoningTokens(ids)).toBe(0);
    expect(model.outputParser({ tools }).reasoningTokens([])).toBe(0);
  });

  test("a server without a reasoning parser has no count (the route writes completion_tokens_details: null)", () => {
    const p = model.outputParser({ tools, reasoningParser: null });
    p.parse("<think>\nr\n</think>\n\nx");
    expect(p.reasoningTokens(output())).toBeNull();
  });
});

describe("pieces", () => {
  test("Python's int() and float() on strings", () => {
    expect([" 42 ", "+7", "1_000", "٣", "-0"].map(pythonInt)).toEqual([42, 7, 1000, 3, 0]);
    expect(["1.5", "4_2", "_1", "1__0", "0x10", ""].map(pythonInt)).toEqual([undefined, 42, undefined, undefined, undefined, undefined]);
    expect(["1e3", ".5", "5.", " -inf ", "nan", "1_0.5", "abc"].map(pythonFloat)).toEqual([1000, 0.5, 5, -Infinity, NaN, 10.5, undefined]);
    expect(coerceToSchemaType("3.0", ["number"])).toEqual({ value: 3, changed: true });
    expect(coerceToSchemaType("x", ["integer"])).toEqual({ value: "x", changed: false });
    expect(coerceToSchemaType("0", ["boolean"])).toEqual({ value: false, changed: true });
  });

  test("Qwen3's parameters: one newline trimmed at each end; an open one counts while streaming", () => {
    expect(qwen3ArgConverter("<parameter=p>\n\nx\n\n</parameter><parameter=q>y", false)).toBe('{"p": "\\nx\\n"}');
    expect(qwen3ArgConverter("<parameter=p>\n\nx\n\n</parameter><parameter=q>y", true)).toBe('{"p": "\\nx\\n", "q": "y"}');
    expect(partialTagOverlap("abc<tool_", "<tool_call>")).toBe(6);
  });
});
