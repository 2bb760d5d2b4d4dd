import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";

// Tests start servers and load the tokenizer; a busy 2-core CI machine needs more than 5 s.
setDefaultTimeout(30_000);
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { startPolicySimulator } from "./index.ts";
import { loadTokenizer, IM_END, IM_START, type SimTokenizer } from "./model.ts";
import { type StartedPolicySimulator } from "./server.ts";

const bashTool: ChatCompletionTool = {
  type: "function",
  function: {
    name: "bash",
    description: "Run a shell command",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
  },
};
const writeTool: ChatCompletionTool = {
  type: "function",
  function: {
    name: "write",
    description: "Write a file",
    parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] },
  },
};

const script = {
  tasks: [
    {
      name: "hello",
      match: "hello.txt",
      steps: [
        { say: "Creating it.", write: { path: "hello.txt", content: "Hello, héllo 你好!\n" } },
        { bash: "cat hello.txt" },
        { finish: "Done: hello.txt holds the greeting." },
      ],
    },
  ],
};

let sim: StartedPolicySimulator;
let client: OpenAI;
let tokenizer: SimTokenizer;

beforeAll(async () => {
  const started = performance.now();
  tokenizer = await loadTokenizer();
  console.log(`tokenizer loaded in ${tokenizer.loadMs.toFixed(0)} ms (first await ${(performance.now() - started).toFixed(0)} ms)`);
  sim = await startPolicySimulator({ seed: 11, script });
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: "sim", maxRetries: 0 });
}, 30_000);
afterAll(() => sim.stop());

type Extra = Record<string, unknown>;

describe("chat completions", () => {
  test("non-stream: text, usage, vLLM token ids and logprobs", async () => {
    const res = await client.chat.completions.create({
      model: "forge-sim/qwen3-sim",
      messages: [{ role: "user", content: "Hello" }],
      logprobs: true,
      top_logprobs: 3,
      // vLLM's field; the client passes unknown fields through.
      ...({ return_token_ids: true } as Extra),
    });
    const raw = res as unknown as Extra & { prompt_token_ids: number[]; choices: (Extra & { token_ids: number[] })[] };
    const choice = res.choices[0]!;
    expect(choice.message.content).toContain("Hello");
    expect(choice.finish_reason).toBe("stop");
    expect(raw.prompt_token_ids[0]).toBe(IM_START);
    expect(raw.prompt_token_ids).toContain(9707); // "Hello"
    const ids = raw.choices[0]!.token_ids;
    expect(ids.at(-1)).toBe(IM_END);
    // Qwen3 in thinking mode opens with a think block (empty: this policy does not think);
    // vLLM's qwen3 parser splits the text at it, newlines included.
    const reasoning = (choice.message as { reasoning?: string }).reasoning;
    expect(reasoning).toBe("\n\n");
    expect(choice.message.content).toBe("\n\nYou said: Hello");
    expect(tokenizer.decode(ids.slice(0, -1))).toBe(`<think>${reasoning}</think>${choice.message.content}`);
    expect(choice.logprobs!.content!.length).toBe(ids.length);
    for (const entry of choice.logprobs!.content!) {
      expect(entry.logprob).toBeLessThan(0);
      expect(entry.top_logprobs.length).toBe(3);
    }
    expect(res.usage).toMatchObject({ prompt_tokens: raw.prompt_token_ids.length, completion_tokens: ids.length, total_tokens: raw.prompt_token_ids.length + ids.length });
    expect(sim.samples.at(-1)).toMatchObject({ prompt_token_ids: raw.prompt_token_ids, token_ids: ids });
  });

  test("without return_token_ids / logprobs those fields are null (vLLM 0.33 sends every field)", async () => {
    const res = (await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] })) as unknown as Extra & { choices: Extra[] };
    expect(res.prompt_token_ids).toBeNull();
    expect(res.choices[0]!.token_ids).toBeNull();
    expect(res.choices[0]!.logprobs).toBeNull();
  });

  test("responses are labelled as the simulator", async () => {
    const res = await fetch(`${sim.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }) });
    expect(res.headers.get("x-forge-simulator")).toBe("1");
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(["forge-sim/qwen3-sim"]);
    expect((await fetch(`${sim.url}/health`)).status).toBe(200);
  });

  test("stream: prompt ids on the first chunk, token ids per chunk add up, final usage chunk", async () => {
    const stream = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "Tell me something with ünïcödé and 你好" }],
      stream: true,
      stream_options: { include_usage: true },
      logprobs: true,
      ...({ return_token_ids: true } as Extra),
    });
    let text = "";
    let reasoning = "";
    const ids: number[] = [];
    let logprobCount = 0;
    let promptIds: number[] | undefined;
    let usage: OpenAI.CompletionUsage | undefined | null;
    let finish: string | null = null;
    let first = true;
    for await (const chunk of stream) {
      const raw = chunk as unknown as Extra & { choices: (Extra & { token_ids?: number[] })[] };
      if (first) promptIds = raw.prompt_token_ids as number[];
      else expect(raw.prompt_token_ids).toBeUndefined();
      first = false;
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        text += choice.delta.content ?? "";
        reasoning += (choice.delta as { reasoning?: string }).reasoning ?? "";
        ids.push(...(raw.choices[0]!.token_ids ?? []));
        logprobCount += choice.logprobs?.content?.length ?? 0;
        finish = choice.finish_reason ?? finish;
      }
    }
    expect(promptIds?.[0]).toBe(IM_START);
    expect(ids.at(-1)).toBe(IM_END);
    expect(tokenizer.decode(ids.slice(0, -1))).toBe(`<think>${reasoning}</think>${text}`);
    expect(text).toContain("ünïcödé and 你好");
    expect(logprobCount).toBe(ids.length);
    expect(finish).toBe("stop");
    expect(usage).toMatchObject({ prompt_tokens: promptIds!.length, completion_tokens: ids.length });
  });

  test("max_tokens cuts the answer with finish_reason length", async () => {
    const res = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "a long question with many words in it" }], max_tokens: 3 });
    expect(res.choices[0]!.finish_reason).toBe("length");
    expect(res.usage!.completion_tokens).toBe(3);
  });

  test("stop strings end the text where they start (stop_reason names the string), stream and not", async () => {
    const body = { model: "m", messages: [{ role: "user" as const, content: "alpha beta gamma delta" }], stop: ["gamma"], ...({ return_token_ids: true } as Extra) };
    const res = (await client.chat.completions.create(body)) as OpenAI.ChatCompletion & { choices: { token_ids: number[]; stop_reason: string }[] };
    // The content keeps the two newlines after Qwen3's (empty) think block, as vLLM's qwen3 parser does.
    expect(res.choices[0]!.message.content).toBe("\n\nYou said: alpha beta ");
    expect(res.choices[0]!.finish_reason).toBe("stop");
    expect(res.choices[0]!.stop_reason).toBe("gamma");
    expect(tokenizer.decode(res.choices[0]!.token_ids)).toBe("<think>\n\n</think>\n\nYou said: alpha beta gamma");
    let text = "";
    for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe("\n\nYou said: alpha beta ");
    const completion = await client.completions.create({ model: "m", prompt: "one two three", stop: "two" });
    expect(completion.choices[0]!.text).toBe("You said: one ");
  });

  test("a stop string at </tool_call> still yields the parsed call (like hermes)", async () => {
    const res = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "Create hello.txt now" }], tools: [writeTool], stop: ["</tool_call>"] });
    const call = res.choices[0]!.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall | undefined;
    expect(call?.function.name).toBe("write");
    expect(res.choices[0]!.finish_reason).toBe("tool_calls");
  });

  test("same seed and request → same output and logprobs; another seed differs in logprobs", async () => {
    const body = { model: "m", messages: [{ role: "user" as const, content: "Determinism please" }], logprobs: true };
    const a = await client.chat.completions.create(body);
    const b = await client.chat.completions.create(body);
    expect(b.choices[0]!.message).toEqual(a.choices[0]!.message);
    expect(b.choices[0]!.logprobs).toEqual(a.choices[0]!.logprobs);
    const other = await startPolicySimulator({ seed: 12, script });
    try {
      const c = await new OpenAI({ baseURL: `${other.url}/v1`, apiKey: "x" }).chat.completions.create(body);
      expect(c.choices[0]!.message.content).toBe(a.choices[0]!.message.content);
      expect(c.choices[0]!.logprobs).not.toEqual(a.choices[0]!.logprobs);
    } finally {
      await other.stop();
    }
  });
});

describe("tool calls", () => {
  const task: ChatCompletionMessageParam[] = [
    { role: "system", content: "You are a coding agent. Working directory: /tmp/ws-1" },
    { role: "user", content: "Create hello.txt with a greeting." },
  ];

  test("non-stream tool call in OpenAI format; stream gives the same call", async () => {
    const res = await client.chat.completions.create({ model: "m", messages: task, tools: [bashTool, writeTool] });
    const choice = res.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    // hermes: the content is the text before <tool_call>, newlines included.
    expect(choice.message.content).toBe("\n\nCreating it.\n");
    const call = choice.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(call.function.name).toBe("write");
    expect(JSON.parse(call.function.arguments)).toEqual({ path: "hello.txt", content: "Hello, héllo 你好!\n" });

    const stream = await client.chat.completions.create({ model: "m", messages: task, tools: [bashTool, writeTool], stream: true });
    const deltas: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    let content = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        deltas.push(...(c.delta.tool_calls ?? []));
        content += c.delta.content ?? "";
        finish = c.finish_reason ?? finish;
      }
    }
    expect(deltas[0]).toMatchObject({ index: 0, id: call.id, type: "function", function: { name: "write" } });
    expect(deltas.slice(1).every((d) => d.id === undefined && d.function?.name === undefined)).toBe(true);
    expect(deltas.map((d) => d.function?.arguments ?? "").join("")).toBe(call.function.arguments);
    expect(content).toBe("\n\nCreating it.\n");
    expect(finish).toBe("tool_calls");
  });

  test("prompt(t+1) vs prompt(t) ++ completion(t) over a 3-turn tool conversation, as vLLM renders Qwen3", async () => {
    // The harness sends back each answer whole (reasoning included). Qwen3's template then
    // re-renders a tool-call turn exactly as sampled, except where the text before the call
    // ends in a newline: hermes keeps that newline in the content and the template adds its
    // own, so the prompt leaves the sampled tokens there (a real vLLM does the same).
    const messages: ChatCompletionMessageParam[] = [...task];
    let previous: number[] | undefined;
    const turns: string[] = [];
    const extends_: boolean[] = [];
    for (let turn = 0; turn < 3; turn++) {
      const res = (await client.chat.completions.create({
        model: "m",
        messages,
        tools: [bashTool, writeTool],
        ...({ return_token_ids: true } as Extra),
      })) as OpenAI.ChatCompletion & { prompt_token_ids: number[]; choices: { token_ids: number[] }[] };
      const prompt = res.prompt_token_ids;
      if (previous) extends_.push(Bun.deepEquals(prompt.slice(0, previous.length), previous));
      previous = [...prompt, ...res.choices[0]!.token_ids];
      const message = res.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning?: string };
      turns.push(message.tool_calls?.[0] ? (message.tool_calls[0] as OpenAI.ChatCompletionMessageFunctionToolCall).function.name : `text:${message.content}`);
      messages.push({ role: "assistant", content: message.content, tool_calls: message.tool_calls, ...({ reasoning: message.reasoning } as Extra) });
      for (const call of message.tool_calls ?? []) messages.push({ role: "tool", tool_call_id: call.id, content: turn === 0 ? "wrote 21 bytes" : "Hello, héllo 你好!" });
    }
    expect(turns).toEqual(["write", "bash", "text:\n\nDone: hello.txt holds the greeting."]);
    // Turn 0 said "Creating it." before its call (its newline doubles); turn 1 called at once.
    expect(extends_).toEqual([false, true]);
  });

  test("tool_choice none answers in text", async () => {
    const res = await client.chat.completions.create({ model: "m", messages: task, tools: [bashTool], tool_choice: "none" });
    expect(res.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(res.choices[0]!.message.content).toContain("hello.txt");
  });
});

describe("completions", () => {
  test("non-stream with token ids and logprobs on the choice", async () => {
    const res = (await client.completions.create({ model: "m", prompt: "Hello", max_tokens: 50, logprobs: 2, ...({ return_token_ids: true } as Extra) })) as OpenAI.Completion & {
      choices: { prompt_token_ids: number[]; token_ids: number[] }[];
    };
    const choice = res.choices[0]!;
    expect(choice.prompt_token_ids).toEqual([9707]);
    expect(tokenizer.decode(choice.token_ids.filter((id) => id !== IM_END))).toBe(choice.text);
    expect(choice.logprobs!.tokens!.length).toBe(choice.token_ids.length);
    expect(choice.logprobs!.token_logprobs!.length).toBe(choice.token_ids.length);
    expect(res.usage!.completion_tokens).toBe(choice.token_ids.length);
  });

  test("stream; token-id prompts; default max_tokens of 16", async () => {
    const stream = await client.completions.create({ model: "m", prompt: [9707, 11, 1879], stream: true, max_tokens: 100, ...({ return_token_ids: true } as Extra) });
    let text = "";
    const ids: number[] = [];
    for await (const chunk of stream) {
      const raw = chunk.choices[0] as unknown as { token_ids: number[] };
      text += chunk.choices[0]!.text;
      ids.push(...raw.token_ids);
    }
    expect(tokenizer.decode(ids.filter((id) => id !== IM_END))).toBe(text);
    const long = await client.completions.create({ model: "m", prompt: "word ".repeat(100) });
    expect(long.usage!.completion_tokens).toBe(16);
    expect(long.choices[0]!.finish_reason).toBe("length");
  });
});

describe("/tokenize and /detokenize (vLLM's, at the server root)", () => {
  test("chat messages count exactly the prompt a chat request gets", async () => {
    const messages = [{ role: "user", content: "Count me" }];
    const counted = (await (await fetch(`${sim.url}/tokenize`, { method: "POST", body: JSON.stringify({ model: "m", messages, tools: [bashTool], add_generation_prompt: true }) })).json()) as { count: number; tokens: number[] };
    const chat = (await client.chat.completions.create({ model: "m", messages: messages as ChatCompletionMessageParam[], tools: [bashTool], ...({ return_token_ids: true } as Extra) })) as unknown as { prompt_token_ids: number[] };
    expect(counted.tokens).toEqual(chat.prompt_token_ids);
    expect(counted.count).toBe(chat.prompt_token_ids.length);
    const prompt = (await (await fetch(`${sim.url}/tokenize`, { method: "POST", body: JSON.stringify({ prompt: "Hello" }) })).json()) as { tokens: number[] };
    expect(prompt.tokens).toEqual([9707]);
    const back = (await (await fetch(`${sim.url}/detokenize`, { method: "POST", body: JSON.stringify({ tokens: [151644, 9707] }) })).json()) as { prompt: string };
    expect(back.prompt).toBe("<|im_start|>Hello");
  });
});

describe("bad requests", () => {
  const post = (path: string, body: string) => fetch(`${sim.url}${path}`, { method: "POST", body, headers: { "content-type": "application/json" } });
  test.each([
    ["/v1/chat/completions", "{not json", /not valid JSON/],
    ["/v1/chat/completions", "", /empty/],
    ["/v1/chat/completions", "[]", /JSON object/],
    ["/v1/chat/completions", "{}", /messages/],
    ["/v1/chat/completions", JSON.stringify({ messages: [{ role: 5, content: "x" }] }), /messages\[0\]\.role/],
    ["/v1/chat/completions", JSON.stringify({ messages: [{ role: "user", content: null }] }), /messages\[0\]\.content/],
    ["/v1/chat/completions", JSON.stringify({ messages: [{ role: "assistant", content: null, tool_calls: [{ id: "a", type: "function", function: { name: "f", arguments: { x: 1 } } }] }] }), /arguments/],
    ["/v1/chat/completions", JSON.stringify({ messages: [{ role: "user", content: "x" }], max_tokens: -1 }), /max_tokens/],
    ["/v1/completions", JSON.stringify({ model: "m" }), /prompt/],
  ])("%s %s → 400", async (path, body, message) => {
    const res = await post(path, body);
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: { message: string; type: string; code: number } };
    expect(json.error.message).toMatch(message);
    expect(json.error).toMatchObject({ type: "BadRequestError", code: 400 });
  });

  test("the openai client surfaces the 400", async () => {
    const error = await client.chat.completions.create({ model: "m", messages: [] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain("messages");
  });

  test("unknown route → 404 in OpenAI style", async () => {
    const res = await fetch(`${sim.url}/v1/nothing`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe("NotFoundError");
  });
});

describe("thinking, n, truncation, pacing", () => {
  const thinkingScript = {
    thinking: true,
    tasks: [{ name: "t", match: "think about it", steps: [{ think: "Hmm, ünïcödé thoughts.", bash: "echo thought" }, { finish: "All done." }] }],
  };

  test("thinking policy: vLLM's `reasoning`, SGLang's `reasoning_content`, in the message and in stream deltas", async () => {
    for (const engine of ["vllm", "sglang"] as const) {
      const field = engine === "vllm" ? "reasoning" : "reasoning_content";
      const other = await startPolicySimulator({ seed: 1, script: thinkingScript, engine });
      try {
        const c = new OpenAI({ baseURL: `${other.url}/v1`, apiKey: "x" });
        const body = { model: "m", messages: [{ role: "user" as const, content: "Please think about it" }], tools: [bashTool] };
        const res = (await c.chat.completions.create({ ...body, ...({ return_token_ids: true } as Extra) })) as unknown as Extra & { choices: (Extra & { message: Extra })[] };
        // vLLM 0.33.0's qwen3 parser keeps the newlines inside the think block.
        expect(res.choices[0]!.message[field]).toBe("\nHmm, ünïcödé thoughts.\n");
        const ids = (engine === "vllm" ? res.choices[0]!.token_ids : res.choices[0]!.response_token_ids) as number[];
        expect(tokenizer.decode(ids)).toStartWith("<think>\nHmm, ünïcödé thoughts.\n</think>\n\n<tool_call>");
        let reasoning = "";
        for await (const chunk of await c.chat.completions.create({ ...body, stream: true })) {
          reasoning += ((chunk.choices[0]?.delta as Extra | undefined)?.[field] as string | null | undefined) ?? "";
        }
        expect(reasoning).toBe("\nHmm, ünïcödé thoughts.\n");
        // enable_thinking=false (Qwen3's chat_template_kwargs) turns it off.
        const off = await c.chat.completions.create({ ...body, ...({ chat_template_kwargs: { enable_thinking: false } } as Extra) });
        expect((off.choices[0]!.message as unknown as Extra)[field] ?? undefined).toBeUndefined();
      } finally {
        await other.stop();
      }
    }
  });

  test("vLLM's usage.completion_tokens_details.reasoning_tokens (a server with --reasoning-parser qwen3): the think block's tokens, per chunk with continuous_usage_stats; null for Qwen3-Coder (no reasoning parser)", async () => {
    const thinking = await startPolicySimulator({ seed: 1, script: thinkingScript, tokensPerChunk: 3 });
    const coder = await startPolicySimulator({ seed: 1, script: thinkingScript, toolCallParser: "qwen3_coder" });
    try {
      const post = (url: string, body: Extra) => fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const body = { model: "m", messages: [{ role: "user", content: "Please think about it" }], tools: [bashTool], return_token_ids: true };
      const res = (await (await post(thinking.url, body)).json()) as any;
      const ids = res.choices[0].token_ids as number[];
      const thought = ids.indexOf(151668) - ids.indexOf(151667) - 1;
      expect(thought).toBeGreaterThan(0);
      expect(res.usage).toEqual({ prompt_tokens: res.prompt_token_ids.length, total_tokens: res.prompt_token_ids.length + ids.length, completion_tokens: ids.length, prompt_tokens_details: null, completion_tokens_details: { reasoning_tokens: thought } });
      const two = (await (await post(thinking.url, { ...body, n: 2 })).json()) as any;
      expect(two.usage.completion_tokens_details.reasoning_tokens).toBe(two.choices.reduce((n: number, c: any) => n + c.token_ids.indexOf(151668) - c.token_ids.indexOf(151667) - 1, 0));
      const off = (await (await post(thinking.url, { ...body, chat_template_kwargs: { enable_thinking: false } })).json()) as any;
      expect(off.usage.completion_tokens_details).toEqual({ reasoning_tokens: 0 });

      const text = await (await post(thinking.url, { ...body, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } })).text();
      const chunks = text.split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)));
      expect(chunks[0].usage.completion_tokens_details).toEqual({ reasoning_tokens: 0 });
      const counts = chunks.filter((c) => c.choices.length > 0).map((c) => c.usage.completion_tokens_details.reasoning_tokens as number);
      expect(counts.every((n, i) => i === 0 || n >= counts[i - 1]!)).toBe(true);
      expect(new Set(counts).size).toBeGreaterThan(2);
      expect(counts.at(-1)).toBe(thought);
      expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: res.prompt_token_ids.length, total_tokens: res.prompt_token_ids.length + ids.length, completion_tokens: ids.length, completion_tokens_details: { reasoning_tokens: thought } });

      const coded = (await (await post(coder.url, body)).json()) as any;
      expect(coded.usage.completion_tokens_details).toBeNull();
      const coderText = await (await post(coder.url, { ...body, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } })).text();
      const coderChunks = coderText.split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)));
      expect(coderChunks.slice(0, -1).every((c) => c.usage.completion_tokens_details === null)).toBe(true);
      expect(Object.keys(coderChunks.at(-1)!.usage)).toEqual(["prompt_tokens", "total_tokens", "completion_tokens"]);
    } finally {
      await Promise.all([thinking.stop(), coder.stop()]);
    }
  });

  test("SGLang's usage.reasoning_tokens (a server with --reasoning-parser qwen3): the scheduler's count, every token through </think>, with completion_tokens_details only when nonzero; summed over choices; the same in the stream's usage chunk; 0 with thinking off or no reasoning parser", async () => {
    const sglang = await startPolicySimulator({ seed: 1, script: thinkingScript, engine: "sglang" });
    const coder = await startPolicySimulator({ seed: 1, script: thinkingScript, engine: "sglang", toolCallParser: "qwen3_coder" });
    try {
      const post = (url: string, body: Extra) => fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const messages = [{ role: "user", content: "Please think about it" }];
      const body = { model: "m", messages, tools: [bashTool], return_token_ids: true };
      const usage = (prompt: number, completion: number, reasoning: number) => ({
        prompt_tokens: prompt,
        total_tokens: prompt + completion,
        completion_tokens: completion,
        prompt_tokens_details: null,
        reasoning_tokens: reasoning,
        completion_tokens_details: reasoning ? { reasoning_tokens: reasoning } : null,
      });
      const through = (ids: number[]) => ids.indexOf(151668) + 1;
      // Thinking then a tool call: <think> counted too (the count starts at the first output token).
      const res = (await (await post(sglang.url, body)).json()) as any;
      const ids = res.choices[0].response_token_ids as number[];
      expect(ids[0]).toBe(151667);
      expect(res.choices[0].message.tool_calls).toHaveLength(1);
      expect(through(ids)).toBeGreaterThan(3);
      expect(res.usage).toEqual(usage(res.choices[0].prompt_token_ids.length, ids.length, through(ids)));
      // Thinking then content.
      const after = [...messages, { role: "assistant", content: null, tool_calls: res.choices[0].message.tool_calls }, { role: "tool", tool_call_id: res.choices[0].message.tool_calls[0].id, content: "thought" }];
      const done = (await (await post(sglang.url, { ...body, messages: after })).json()) as any;
      expect(done.choices[0].message.content).toEndWith("All done.");
      expect(done.usage.reasoning_tokens).toBe(through(done.choices[0].response_token_ids));
      expect(done.usage.completion_tokens_details).toEqual({ reasoning_tokens: done.usage.reasoning_tokens });
      // n > 1: the choices' counts summed.
      const two = (await (await post(sglang.url, { ...body, n: 2 })).json()) as any;
      expect(two.usage.reasoning_tokens).toBe(two.choices.reduce((n: number, c: any) => n + through(c.response_token_ids), 0));
      // Cut inside the think block: every token.
      const cut = (await (await post(sglang.url, { ...body, max_tokens: 4 })).json()) as any;
      expect(cut.choices[0].finish_reason).toBe("length");
      expect(cut.usage).toEqual(usage(res.choices[0].prompt_token_ids.length, 4, 4));
      // enable_thinking false: the request does not require reasoning, and the qwen3 parser has no self-opened start.
      const off = (await (await post(sglang.url, { ...body, chat_template_kwargs: { enable_thinking: false } })).json()) as any;
      expect(off.usage).toEqual(usage(off.choices[0].prompt_token_ids.length, off.choices[0].response_token_ids.length, 0));
      // Streamed: the usage chunk carries the same count (no ids on an SGLang stream; the generation is the same).
      const stream = async (extra: Extra) => {
        const text = await (await post(sglang.url, { model: "m", messages, tools: [bashTool], stream: true, stream_options: { include_usage: true }, ...extra })).text();
        return text.split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6))).at(-1).usage;
      };
      expect(await stream({})).toEqual(res.usage);
      expect(await stream({ max_tokens: 4 })).toEqual(cut.usage);
      expect(await stream({ chat_template_kwargs: { enable_thinking: false } })).toEqual(off.usage);
      // No reasoning parser: 0.
      const coded = (await (await post(coder.url, body)).json()) as any;
      expect(coded.usage).toEqual(usage(coded.choices[0].prompt_token_ids.length, coded.choices[0].response_token_ids.length, 0));
    } finally {
      await Promise.all([sglang.stop(), coder.stop()]);
    }
  });

  test("n > 1 gives independent samples, usage sums them", async () => {
    const res = (await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "two please" }], n: 2, logprobs: true, ...({ return_token_ids: true } as Extra) })) as OpenAI.ChatCompletion & {
      choices: { token_ids: number[] }[];
    };
    expect(res.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(res.choices[0]!.logprobs).not.toEqual(res.choices[1]!.logprobs);
    expect(res.usage!.completion_tokens).toBe(res.choices[0]!.token_ids.length + res.choices[1]!.token_ids.length);
  });

  test("max_tokens inside a tool call: stream streams the partial call, non-stream keeps the raw text as content", async () => {
    const task: ChatCompletionMessageParam[] = [{ role: "user", content: "Create hello.txt now" }];
    const res = await client.chat.completions.create({ model: "m", messages: task, tools: [writeTool], max_tokens: 12 });
    expect(res.choices[0]!.finish_reason).toBe("length");
    expect(res.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(res.choices[0]!.message.content).toContain("<tool_call>");
    let finish: string | null = null;
    let ids = 0;
    for await (const chunk of await client.chat.completions.create({ model: "m", messages: task, tools: [writeTool], max_tokens: 12, stream: true, ...({ return_token_ids: true } as Extra) })) {
      for (const c of chunk.choices) {
        finish = c.finish_reason ?? finish;
        // vLLM's role chunk has no token_ids (it is not a decode step).
        ids += (c as unknown as { token_ids?: number[] }).token_ids?.length ?? 0;
      }
    }
    expect(finish).toBe("length");
    expect(ids).toBe(12);
  });

  test("ttftMs and chunkDelayMs pace the stream; a client that leaves mid-stream does not disturb the server", async () => {
    const slow = await startPolicySimulator({ seed: 1, ttftMs: 150, chunkDelayMs: 30 });
    try {
      const started = performance.now();
      const controller = new AbortController();
      const res = await fetch(`${slow.url}/v1/chat/completions`, {
        method: "POST",
        body: JSON.stringify({ messages: [{ role: "user", content: "a reasonably long prompt to echo back slowly" }], stream: true }),
        signal: controller.signal,
      });
      const reader = res.body!.getReader();
      await reader.read();
      expect(performance.now() - started).toBeGreaterThanOrEqual(140);
      const before = performance.now();
      await reader.read();
      await reader.read();
      expect(performance.now() - before).toBeGreaterThanOrEqual(25);
      controller.abort();
      await reader.cancel().catch(() => {});
      const after = await fetch(`${slow.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }) });
      expect(after.status).toBe(200);
    } finally {
      await slow.stop();
    }
  });

  test("tokensPerChunk groups tokens per chunk", async () => {
    const grouped = await startPolicySimulator({ seed: 1, tokensPerChunk: 4 });
    try {
      const stream = await new OpenAI({ baseURL: `${grouped.url}/v1`, apiKey: "x" }).chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "one two three four five six seven eight nine ten" }],
        stream: true,
        ...({ return_token_ids: true } as Extra),
      });
      const sizes: number[] = [];
      for await (const chunk of stream) for (const c of chunk.choices) sizes.push((c as unknown as { token_ids?: number[] }).token_ids?.length ?? 0);
      expect(sizes.slice(1, -1).every((n) => n === 4)).toBe(true);
    } finally {
      await grouped.stop();
    }
  });
});
