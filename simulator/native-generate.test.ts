/**
 * SGLang's native POST /generate in the sglang flavour: its JSON contract (unknown sampling
 * keys refused with serde's text), the answer not streamed and streamed (cumulative), and a
 * rendered Qwen3 chat continued as the chat route samples it.
 */
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createPolicySimulator } from "./app.ts";
import { loadTokenizer, IM_END } from "./model.ts";
import { loadModel, type Model } from "../model/index.ts";

setDefaultTimeout(60_000);

const bash = { type: "function", function: { name: "bash", description: "Run a shell command", parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } } };
const script = { tasks: [{ name: "ls", match: "list the files", steps: [{ bash: "ls -la" }, { finish: "Listed." }] }] };
const sglang = createPolicySimulator({ seed: 4, script, engine: "sglang" });
const vllm = createPolicySimulator({ seed: 4, script });
let model: Model;
beforeAll(async () => {
  model = await loadModel();
  await loadTokenizer();
});

const post = (sim: ReturnType<typeof createPolicySimulator>, body: unknown) =>
  sim.fetch(new Request("http://sim/generate", { method: "POST", headers: { "content-type": "application/json", "x-forge-rollout": "ro-1" }, body: JSON.stringify(body) }));

describe("POST /generate (SGLang 0.5.23's native API)", () => {
  test("a rendered chat continued with a tool call: output_ids end with <|im_end|>, logprob rows, prompt ids echoed", async () => {
    const promptIds = model.renderChatIds({ messages: [{ role: "user", content: "Please list the files." }], tools: [bash] });
    const res = await post(sglang, { input_ids: promptIds, sampling_params: { max_new_tokens: 256, temperature: 1, skip_special_tokens: false }, return_logprob: true, top_logprobs_num: 0, return_prompt_token_ids: true, stream: false });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.prompt_token_ids).toEqual(promptIds);
    expect(body.output_ids.at(-1)).toBe(IM_END);
    expect(body.meta_info.finish_reason).toEqual({ type: "stop", matched: IM_END });
    expect(body.meta_info.prompt_tokens).toBe(promptIds.length);
    expect(body.meta_info.completion_tokens).toBe(body.output_ids.length);
    expect(body.meta_info.output_token_logprobs.map((r: unknown[]) => r[1])).toEqual(body.output_ids);
    expect(body.meta_info.output_token_logprobs_length).toBe(body.output_ids.length);
    const parsed = model.outputParser({ tools: [bash], promptTokenIds: promptIds }).parse(model.tokenizer.decode(body.output_ids.slice(0, -1)));
    expect(parsed.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([["bash", { command: "ls -la" }]]);
    // What was sampled is kept, as for every route.
    expect(sglang.samples.at(-1)!.token_ids).toEqual(body.output_ids);
  });

  test("streamed: cumulative events (text, output_ids, logprob rows so far), finish_reason on the last, then [DONE]", async () => {
    const promptIds = model.renderChatIds({ messages: [{ role: "user", content: "Please list the files." }], tools: [bash] });
    const res = await post(sglang, { input_ids: promptIds, sampling_params: { max_new_tokens: 256 }, return_logprob: true, stream: true });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const events = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: "));
    expect(events.at(-1)).toBe("data: [DONE]");
    const data = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
    for (let i = 1; i < data.length; i++) {
      expect(data[i].output_ids.slice(0, data[i - 1].output_ids.length)).toEqual(data[i - 1].output_ids);
      expect(data[i].text.startsWith(data[i - 1].text)).toBe(true);
    }
    expect(data.slice(0, -1).every((d) => d.meta_info.finish_reason === null)).toBe(true);
    const last = data.at(-1);
    expect(last.meta_info.finish_reason).toEqual({ type: "stop", matched: IM_END });
    expect(last.meta_info.output_token_logprobs.length).toBe(last.output_ids.length);
    expect(last.prompt_token_ids).toBeUndefined();
  });

  test("started with --incremental-streaming-output: each event holds only its new text, ids and logprob rows; the counts stay whole; an echoed prompt is in every event", async () => {
    const promptIds = model.renderChatIds({ messages: [{ role: "user", content: "Please list the files." }], tools: [bash] });
    const body = { input_ids: promptIds, sampling_params: { max_new_tokens: 256 }, return_logprob: true, return_prompt_token_ids: true, stream: true };
    const read = async (sim: ReturnType<typeof createPolicySimulator>) => (await (await post(sim, body)).text()).split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)));
    const whole = await read(sglang);
    const parts = await read(createPolicySimulator({ seed: 4, script, engine: "sglang", incrementalStreamingOutput: true }));
    expect(parts.length).toBe(whole.length);
    let seen = 0;
    parts.forEach((p, i) => {
      expect(p.output_ids).toEqual(whole[i].output_ids.slice(seen));
      expect(p.meta_info.output_token_logprobs).toEqual(whole[i].meta_info.output_token_logprobs.slice(seen));
      expect(p.meta_info.completion_tokens).toBe(whole[i].meta_info.completion_tokens);
      expect(p.prompt_token_ids).toEqual(promptIds);
      seen = whole[i].output_ids.length;
    });
    expect(parts.map((p) => p.text).join("")).toBe(whole.at(-1).text);
  });

  test("max_new_tokens cuts it: finish_reason length; default max_new_tokens is 128", async () => {
    const res = await post(sglang, { text: "Tell me a long story about the sea and the sky, with many details.", sampling_params: { max_new_tokens: 3 } });
    const body = (await res.json()) as any;
    expect(body.output_ids.length).toBe(3);
    expect(body.meta_info.finish_reason).toEqual({ type: "length", length: 3 });
    expect(body.meta_info.output_token_logprobs).toBeUndefined();
  });

  test("the contract: an unknown sampling key, a wrong type, no prompt, a batch", async () => {
    let res = await post(sglang, { input_ids: [1, 2], sampling_params: { max_tokens: 3 } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toStartWith("unknown field `max_tokens`, expected one of `max_new_tokens`, `stop`");
    res = await post(sglang, { input_ids: [1, 2], sampling_params: { temperature: "hot" } });
    expect(((await res.json()) as any).error).toBe('invalid type: string "hot", expected f64');
    res = await post(sglang, { sampling_params: {} });
    expect(res.status).toBe(400);
    res = await post(sglang, { input_ids: [[1], [2]] });
    expect(res.status).toBe(400);
    // Unknown top-level keys are ignored.
    res = await post(sglang, { text: "hi", unknown_key: 1, sampling_params: { max_new_tokens: 2 } });
    expect(res.status).toBe(200);
  });

  test("meta_info.reasoning_tokens (a server with --reasoning-parser qwen3): with require_reasoning, every output token through </think>, all of them when cut inside the think block or when the prompt closed it; 0 without it or without a reasoning parser; streamed, the count so far", async () => {
    const thinking = { ...script, thinking: true };
    const thinker = createPolicySimulator({ seed: 4, script: thinking, engine: "sglang", tokensPerChunk: 2 });
    const coder = createPolicySimulator({ seed: 4, script: thinking, engine: "sglang", toolCallParser: "qwen3_coder" });
    const messages = [{ role: "user" as const, content: "Please list the files." }];
    const promptIds = model.renderChatIds({ messages, tools: [bash] });
    const ask = async (sim: ReturnType<typeof createPolicySimulator>, extra: Record<string, unknown>, input_ids = promptIds) =>
      (await (await post(sim, { input_ids, sampling_params: { max_new_tokens: 256 }, ...extra })).json()) as any;
    // Thinking then a tool call.
    const on = await ask(thinker, { require_reasoning: true });
    const through = on.output_ids.indexOf(151668) + 1;
    expect(on.output_ids[0]).toBe(151667);
    expect(through).toBeGreaterThan(3);
    expect(model.tokenizer.decode(on.output_ids.slice(through))).toContain("<tool_call>");
    expect(on.meta_info.reasoning_tokens).toBe(through);
    // Thinking then content (the task's second step, after the tool's answer).
    const after = [...messages, { role: "assistant" as const, content: model.tokenizer.decode(on.output_ids.slice(0, -1)) }, { role: "user" as const, content: "<tool_response>\na.txt\n</tool_response>" }];
    const done = await ask(thinker, { require_reasoning: true }, model.renderChatIds({ messages: after, tools: [bash] }));
    expect(model.tokenizer.decode(done.output_ids)).toEndWith("</think>\n\nListed.<|im_end|>");
    expect(done.meta_info.reasoning_tokens).toBe(done.output_ids.indexOf(151668) + 1);
    // GenerateReqInput.require_reasoning defaults to false, and the qwen3 parser has no self-opened start.
    expect((await ask(thinker, {})).meta_info.reasoning_tokens).toBe(0);
    expect((await ask(thinker, { require_reasoning: false })).meta_info.reasoning_tokens).toBe(0);
    // Cut inside the think block: every token so far.
    const cut = await ask(thinker, { require_reasoning: true, sampling_params: { max_new_tokens: 3 } });
    expect(cut.meta_info).toMatchObject({ finish_reason: { type: "length", length: 3 }, reasoning_tokens: 3 });
    // Thinking off in the prompt: no </think> comes, so the count runs to the end.
    const off = await ask(thinker, { require_reasoning: true }, model.renderChatIds({ messages, tools: [bash], chat_template_kwargs: { enable_thinking: false } }));
    expect(off.output_ids).not.toContain(151668);
    expect(off.meta_info.reasoning_tokens).toBe(off.output_ids.length);
    // No reasoning parser: no think_end_ids, no count.
    expect((await ask(coder, { require_reasoning: true })).meta_info.reasoning_tokens).toBe(0);
    // Streamed: each event carries the count over the output so far.
    const events = (await (await post(thinker, { input_ids: promptIds, sampling_params: { max_new_tokens: 256 }, require_reasoning: true, stream: true })).text())
      .split("\n\n")
      .filter((e) => e.startsWith("data: {"))
      .map((e) => JSON.parse(e.slice(6)));
    expect(events.map((e) => e.meta_info.reasoning_tokens)).toEqual(events.map((e) => Math.min(e.output_ids.length, through)));
    expect(new Set(events.map((e) => e.meta_info.reasoning_tokens)).size).toBeGreaterThan(2);
    expect(events.at(-1).meta_info.reasoning_tokens).toBe(through);
    // The contract: require_reasoning is a boolean.
    const bad = await post(thinker, { input_ids: promptIds, require_reasoning: "yes" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'invalid type: string "yes", expected a boolean' });
  });

  test("the vLLM flavour has no /generate", async () => {
    const res = await post(vllm, { input_ids: [1, 2] });
    expect(res.status).toBe(404);
  });
});
