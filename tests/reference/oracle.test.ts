/**
 * Smoke tests of the reference oracle: each op answers from the real project (transformers,
 * vLLM 0.33.0, SGLang 0.5.23, veRL 0.9.1) in .venv/reference, built by python/build-env.sh.
 * A missing venv fails these tests with the command to build it; they never skip.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { oraclePython, sglangNativeSkipReason, startOracle, type Oracle } from "./oracle.ts";

const nativeSkip = sglangNativeSkipReason();

// vLLM's import and renderer set-up take ~20 s on a 2-core machine; the first vLLM call pays it.
const SLOW = 180_000;

let oracle: Oracle;
const scratch = mkdtempSync(join(tmpdir(), "forge-oracle-test-"));
beforeAll(async () => {
  oracle = await startOracle();
}, SLOW);
afterAll(async () => {
  await oracle?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const IM_START = 151644;
const IM_END = 151645;
const fTool = {
  type: "function",
  function: {
    name: "f",
    description: "test tool",
    parameters: { type: "object", properties: { a: { type: "integer" } }, required: ["a"] },
  },
};
const pathTool = {
  type: "function",
  function: { name: "ls", parameters: { type: "object", properties: { path: { type: "string" } } } },
};

describe("client", () => {
  test("a missing venv is an error naming python/build-env.sh", async () => {
    expect(() => oraclePython("no-such-venv")).toThrow(/python\/build-env\.sh/);
    await expect(startOracle({ venv: "no-such-venv" })).rejects.toThrow(/bash python\/build-env\.sh/);
  });

  test("errors are answered, the process keeps serving", async () => {
    expect((await oracle.call({ op: "no-such-op" })).error).toMatch(/unknown op/);
    expect((await oracle.call({ op: "render" })).error).toMatch(/messages/);
    expect((await oracle.call({ op: "encode", text: "Hello" })).ids).toEqual([9707]);
  });

  test("answers carry the request id", async () => {
    const a = await oracle.call({ op: "ping", id: "x1" });
    expect(a.id).toBe("x1");
    expect(a.versions).toMatchObject({ vllm: "0.33.0", sglang: "0.5.23", verl: "0.9.1" });
    // python/requirements.txt pins torch==2.13.0: a local CPU wheel (2.13.0+cpu) where pip has one, else the index's build.
    expect(a.versions.torch).toMatch(/^2\.13\.0(\+cpu)?$/);
  });
});

describe("tokenizer (transformers)", () => {
  test("render: a Hello conversation", async () => {
    const a = await oracle.call({
      op: "render",
      messages: [{ role: "user", content: "Hello" }],
      add_generation_prompt: true,
    });
    expect(a.text).toBe("<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
    expect(a.ids).toEqual([IM_START, 872, 198, 9707, IM_END, 198, IM_START, 77091, 198]);
  });

  test("render: enable_thinking=false closes an empty think block", async () => {
    const a = await oracle.call({
      op: "render",
      messages: [{ role: "user", content: "Hello" }],
      add_generation_prompt: true,
      enable_thinking: false,
    });
    expect(a.text.endsWith("<|im_start|>assistant\n<think>\n\n</think>\n\n")).toBe(true);
  });

  test("encode / decode", async () => {
    expect((await oracle.call({ op: "encode", text: "<|im_start|>Hello" })).ids).toEqual([IM_START, 9707]);
    expect((await oracle.call({ op: "decode", ids: [IM_START, 9707] })).text).toBe("<|im_start|>Hello");
    expect((await oracle.call({ op: "decode", ids: [IM_START, 9707], skip_special_tokens: true })).text).toBe(
      "Hello",
    );
  });
});

describe("vLLM 0.33.0", () => {
  test(
    "vllm_render: vLLM's preprocessing joins text parts and parses argument strings",
    async () => {
      const a = await oracle.call({
        op: "vllm_render",
        messages: [
          { role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "c1", type: "function", function: { name: "ls", arguments: '{"path":"."}' } }],
          },
          { role: "tool", tool_call_id: "c1", content: [{ type: "text", text: "ok" }] },
        ],
        tools: [pathTool],
        add_generation_prompt: true,
      });
      expect(a.error).toBeUndefined();
      expect(a.conversation[0]).toEqual({ role: "user", content: "a\nb" });
      expect(a.conversation[1].tool_calls[0].function.arguments).toEqual({ path: "." });
      expect(a.conversation[2].content).toBe("ok");
      expect(a.text).toContain('<tool_call>\n{"name": "ls", "arguments": {"path": "."}}\n</tool_call>');
      expect(a.ids[0]).toBe(IM_START);
      expect(a.ids.slice(-3)).toEqual([IM_START, 77091, 198]);
    },
    SLOW,
  );

  test("vllm_render equals transformers' render for a plain conversation", async () => {
    const messages = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hello" },
    ];
    const v = await oracle.call({ op: "vllm_render", messages, add_generation_prompt: true });
    const t = await oracle.call({ op: "render", messages, add_generation_prompt: true });
    expect(v.ids).toEqual(t.ids);
    expect(v.text).toBe(t.text);
  });

  test("parse_tool_calls: hermes", async () => {
    const a = await oracle.call({
      op: "parse_tool_calls",
      parser: "hermes",
      text: '<tool_call>{"name":"f","arguments":{"a":1}}</tool_call>',
      tools: [fTool],
    });
    expect(a.tools_called).toBe(true);
    expect(a.tool_calls.map((c: any) => [c.name, JSON.parse(c.arguments)])).toEqual([["f", { a: 1 }]]);
    expect(a.content).toBeNull();
  });

  test("parse_tool_calls: qwen3_coder and qwen3_xml coerce parameters by the tool's schema", async () => {
    const text = "Let me call it.\n<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>";
    for (const parser of ["qwen3_coder", "qwen3_xml"]) {
      const a = await oracle.call({ op: "parse_tool_calls", parser, text, tools: [fTool] });
      expect(a.error).toBeUndefined();
      expect(a.tools_called).toBe(true);
      expect(a.tool_calls.map((c: any) => [c.name, JSON.parse(c.arguments)])).toEqual([["f", { a: 1 }]]);
      expect(a.content.trim()).toBe("Let me call it.");
    }
  });

  test("parse_tool_calls: an unknown parser is an error", async () => {
    expect((await oracle.call({ op: "parse_tool_calls", parser: "nope", text: "x" })).error).toMatch(/nope/);
  });

  test("parse_tool_calls_stream: hermes, two tokens at a time", async () => {
    const a = await oracle.call({
      op: "parse_tool_calls_stream",
      parser: "hermes",
      text: 'Sure.<tool_call>\n{"name": "ls", "arguments": {"path": "."}}\n</tool_call><|im_end|>',
      n: 2,
      tools: [pathTool],
      messages: [{ role: "user", content: "list" }],
    });
    expect(a.error).toBeUndefined();
    expect(a.merged.content).toBe("Sure.");
    expect(a.merged.tool_calls).toEqual([{ name: "ls", arguments: '{"path": "."}' }]);
    expect(a.deltas.every((d: any) => d.ids.length <= 2)).toBe(true);
    expect(a.deltas.at(-1).finish_reason).toBe("tool_calls");
  });

  test("parse_reasoning: qwen3", async () => {
    const a = await oracle.call({ op: "parse_reasoning", parser: "qwen3", text: "<think>hmm</think>\n\nanswer" });
    expect(a).toEqual({ reasoning: "hmm", content: "\n\nanswer" });
  });

  test("parse_reasoning_stream: qwen3, token by token", async () => {
    const a = await oracle.call({
      op: "parse_reasoning_stream",
      parser: "qwen3",
      text: "<think>\nhmm\n</think>\n\nanswer<|im_end|>",
      messages: [{ role: "user", content: "q" }],
    });
    expect(a.merged.reasoning).toBe("\nhmm\n");
    expect(a.merged.content).toBe("\n\nanswer");
    expect(a.deltas.length).toBe(9);
    expect(a.deltas.at(-1).finish_reason).toBe("stop");
  });

  test("vllm_derender: reasoning and a Qwen3-Coder tool call, as the chat server assembles them", async () => {
    const a = await oracle.call({
      op: "vllm_derender",
      tool_parser: "qwen3_coder",
      reasoning_parser: "qwen3",
      text: "<think>\nx\n</think>\n\n<tool_call>\n<function=ls>\n<parameter=path>\n.\n</parameter>\n</function>\n</tool_call><|im_end|>",
      tools: [pathTool],
      messages: [{ role: "user", content: "list" }],
    });
    expect(a.error).toBeUndefined();
    expect(a.finish_reason).toBe("tool_calls");
    expect(a.message.reasoning).toBe("\nx\n");
    expect(a.message.tool_calls.map((c: any) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ["ls", { path: "." }],
    ]);
    expect(a.prompt_ids.slice(-3)).toEqual([IM_START, 77091, 198]);
  });
});

describe("validate", () => {
  test("vllm.ChatCompletionRequest: a bad body gives pydantic's errors", async () => {
    const a = await oracle.call({
      op: "validate",
      model: "vllm.ChatCompletionRequest",
      body: { model: "m", messages: "not a list" },
    });
    expect(a.ok).toBe(false);
    expect(a.errors.some((e: any) => e.loc[0] === "messages")).toBe(true);
  });

  test("vllm.ChatCompletionRequest keeps unknown keys (extra=allow) but never reads them", async () => {
    const a = await oracle.call({
      op: "validate",
      model: "vllm.ChatCompletionRequest",
      body: { model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 5, top_kk: 3 },
    });
    expect(a).toMatchObject({ ok: true, extra: "allow", ignored_keys: ["top_kk"], extra_paths: ["top_kk"] });
  });

  test("vllm.CompletionRequest", async () => {
    const ok = await oracle.call({ op: "validate", model: "vllm.CompletionRequest", body: { model: "m", prompt: [1, 2] } });
    expect(ok.ok).toBe(true);
    const bad = await oracle.call({ op: "validate", model: "vllm.CompletionRequest", body: { model: "m", prompt: "x", n: "many" } });
    expect(bad.ok).toBe(false);
  });

  test("sglang.ChatCompletionRequest / CompletionRequest drop unknown keys (extra=ignore)", async () => {
    const chat = await oracle.call({
      op: "validate",
      model: "sglang.ChatCompletionRequest",
      body: { model: "m", messages: [{ role: "user", content: "hi" }], top_kk: 3 },
    });
    expect(chat).toMatchObject({ ok: true, extra: "ignore", ignored_keys: ["top_kk"] });
    const bad = await oracle.call({ op: "validate", model: "sglang.CompletionRequest", body: { prompt: "x", max_tokens: "lots" } });
    expect(bad.ok).toBe(false);
    expect(bad.errors[0].loc).toContain("max_tokens");
  });

  test("sglang.GenerateReqInput: not in .venv/reference, whose answer names .venv/sglang-native", async () => {
    const body = { input_ids: [1, 2, 3], sampling_params: { max_new_tokens: 4 } };
    const here = await oracle.call({ op: "validate", model: "sglang.GenerateReqInput", body });
    expect(here.error).toMatch(/sglang-native/);
  });

  if (nativeSkip) console.log(`oracle: sglang.GenerateReqInput in .venv/sglang-native ${nativeSkip}`);
  test.skipIf(!!nativeSkip)("sglang.GenerateReqInput: only in .venv/sglang-native (torchvision), validated there", async () => {
    const body = { input_ids: [1, 2, 3], sampling_params: { max_new_tokens: 4 }, return_logprob: true, nope: 1 };
    const here = await oracle.call({ op: "validate", model: "sglang.GenerateReqInput", body });
    expect(here.error).toMatch(/sglang-native/);
    const native = await startOracle({ venv: "sglang-native" });
    try {
      const a = await native.call({ op: "validate", model: "sglang.GenerateReqInput", body });
      expect(a).toMatchObject({ ok: true, extra: "ignore", ignored_keys: ["nope"] });
      const bad = await native.call({ op: "validate", model: "sglang.GenerateReqInput", body: { input_ids: "x y" } });
      expect(bad.ok).toBe(false);
    } finally {
      await native.close();
    }
  }, SLOW);
});

describe("veRL 0.9.1", () => {
  test("grpo: two groups", async () => {
    const a = await oracle.call({ op: "grpo", rewards: [1, 0, 1, 1, 0, 0], uids: ["a", "a", "a", "b", "b", "b"] });
    // group a: mean 2/3, unbiased std sqrt(1/3); group b: mean 1/3, same std.
    const s = Math.sqrt(1 / 3);
    const want = [1 / 3 / s, -2 / 3 / s, 1 / 3 / s, 2 / 3 / s, -1 / 3 / s, -1 / 3 / s];
    a.advantages.forEach((v: number, i: number) => expect(v).toBeCloseTo(want[i]!, 4));
    const dr = await oracle.call({ op: "grpo", rewards: [1, 0], uids: ["a", "a"], norm_adv_by_std: false });
    expect(dr.advantages).toEqual([0.5, -0.5]);
    const single = await oracle.call({ op: "grpo", rewards: [3], uids: ["z"] });
    expect(single.advantages[0]).toBeCloseTo(3, 4); // a group of one: mean 0, std 1
  });

  test("verl_dataset: RLHFDataset reads a parquet written by DuckDB", async () => {
    const parquet = join(scratch, "tasks.parquet");
    const db = await DuckDBInstance.create(":memory:");
    const conn = await db.connect();
    await conn.run(`COPY (
      SELECT * FROM (VALUES
        ('t', [{'role': 'user', 'content': 'What is 2+2?'}], {'style': 'rule', 'ground_truth': '4'}, {'index': 7, 'split': 'train'}),
        ('t', [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hi'}], {'style': 'rule', 'ground_truth': 'x'}, {'index': 8, 'split': 'train'})
      ) AS v(data_source, prompt, reward_model, extra_info)
    ) TO '${parquet}' (FORMAT parquet)`);
    conn.closeSync();
    const a = await oracle.call({ op: "verl_dataset", parquet });
    expect(a.error).toBeUndefined();
    expect(a.len).toBe(2);
    expect(a.rows[0].raw_prompt).toEqual([{ role: "user", content: "What is 2+2?" }]);
    expect(a.rows.map((r: any) => r.index)).toEqual([7, 8]);
    expect(a.rows[1]).toMatchObject({ tools_kwargs: {}, interaction_kwargs: {}, data_source: "t" });
  }, SLOW);
});
