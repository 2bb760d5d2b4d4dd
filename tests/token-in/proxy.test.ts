/**
 * Token-in mode through the real proxy against the policy simulator in both engine flavours
 * (vLLM 0.33.0's /v1/completions with a token-id prompt, SGLang 0.5.23's /generate with
 * input_ids; docs/token-in.md):
 *
 * - a multi-step tool loop over Chat (streamed and not), the harness echoing arguments compact
 *   and dropping the reasoning, as harnesses do: the prompt the ENGINE received for call n+1
 *   begins with exactly call n's prompt + completion ids (the simulator's own samples), the
 *   harness gets the tool calls and the reasoning, the records say which call each continues,
 *   and the trajectory is one sample with 0 drift tokens;
 * - Anthropic Messages (streamed) and Responses: tool calls reach the harness in its protocol and
 *   the next call continues the chain;
 * - calls that do not extend a chain start a new one, recorded with why: another conversation,
 *   a rewritten history (compaction), an edited answer, other tools, continue_final_message; a
 *   retry gets its chain's prompt again;
 * - failures: an engine without the token-id route, an upstream that is no engine, an unknown
 *   parser, a missing model directory, token-in outside train mode.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy, tokenInOptions } from "../../proxy/index.ts";
import { TokenInSettingsError } from "../../proxy/testing.ts";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { ChainStart } from "../../schemas/index.ts";
import { parseExperimentText } from "../../schemas/index.ts";
import { proxyCommand } from "../../proxy/cli.ts";
import { chatCall, echo, expectOneChain, expectOneSample, STOCK_OPENING, STOCK_TASK, STOCK_TOOLS, firstToolUse, messagesEvents, samplesOf, startsWith, stockLoop, type Msg } from "./calls.ts";

const SLOW = 120_000;
const tools = STOCK_TOOLS;
const script = { thinking: true, tasks: [STOCK_TASK, { name: "title", match: "Generate a title", steps: [{ say: "Stock total" }] }] };

/** One Chat call of the loop below (docs of chatCall: tests/token-in/calls.ts). */
const chat = (h: ProxyHarness, r: { api_key: string; openai_base_url: string }, body: Record<string, unknown>, stream: boolean) => chatCall(h, r, { model: "qwen3", tools, ...body }, stream);

/**
 * A five-call tool loop through `h` (its simulator speaking `engine`): the engine's prompt n+1 =
 * prompt n + completion n + the new messages; the records one chain, one sample, 0 drift.
 */
async function expectFiveCallLoop(h: ProxyHarness, engine: "vllm" | "sglang", route?: "completions" | "generate"): Promise<void> {
    const r = await h.register({ task_id: "stock" });
    const answers = await stockLoop((body, stream) => chat(h, r, body, stream));
    // The harness got tool calls (names, arguments as JSON) and the reasoning, as vLLM's chat route gives them.
    expect(answers.map((a) => a.toolCalls.map((c) => [c.name, Object.keys(JSON.parse(c.arguments))]))).toEqual([[["read", ["path"]]], [["bash", ["command"]]], [["write", ["path", "content"]]], [["bash", ["command"]]], []]);
    expect(answers[0]!.reasoning.trim()).toBe("Read it first.");
    expect(answers[0]!.content.trim()).toBe("I'll look at the file first.");
    expect(answers[4]!.content.trim()).toBe("total.txt holds 42.");

    // At the engine: each prompt begins with exactly the previous prompt and completion.
    const samples = samplesOf(h, r.rollout_id);
    expect(samples.length).toBe(5);
    for (let i = 1; i < samples.length; i++) {
      const held = [...samples[i - 1]!.prompt_token_ids, ...samples[i - 1]!.token_ids];
      expect(startsWith(samples[i]!.prompt_token_ids, held)).toBe(true);
      expect(samples[i]!.prompt_token_ids.length).toBeGreaterThan(held.length);
    }

    // The records: one chain, each call naming the call it continues and what was rendered.
    const calls = await expectOneChain(h, r.rollout_id, samples);
    calls.forEach((c, i) => {
      const before = i === 0 ? 0 : samples[i - 1]!.prompt_token_ids.length + samples[i - 1]!.token_ids.length;
      expect(c.renderedTokens).toBe(samples[i]!.prompt_token_ids.length - before);
      const sent = JSON.parse(new TextDecoder().decode(c.engineRequest));
      // The record keeps the body without its prompt: SGLang's /generate, vLLM's /v1/completions, or vLLM's generate route (its engine decoding nothing).
      if (engine === "sglang") expect([sent.input_ids, typeof sent.sampling_params]).toEqual([undefined, "object"]);
      else if (route === "generate") expect([sent.token_ids, sent.sampling_params.detokenize, sent.output_mode]).toEqual([undefined, false, "tokens"]);
      else expect([sent.prompt, typeof sent.max_tokens]).toEqual([undefined, "number"]);
      const sentAnswer = JSON.parse(new TextDecoder().decode(c.chainAnswer));
      expect(sentAnswer.tool_calls.map((t: any) => t.name)).toEqual(answers[i]!.toolCalls.map((t) => t.name));
    });

    await expectOneSample(h, r.rollout_id, samples);
}

// vLLM's /v1/completions (--token-in-route completions), SGLang's /generate, and vLLM's /inference/v1/generate (--token-in-route generate).
for (const [engine, route] of [["vllm", "completions"], ["sglang", undefined], ["vllm", "generate"]] as const) {
  describe(`token-in mode, ${engine} flavour${route ? `, ${route} route` : ""}`, () => {
    let h: ProxyHarness;
    beforeAll(async () => {
      h = await startProxyHarness({ sim: { script, engine }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3", route }) } });
    });
    afterAll(async () => {
      await h?.close();
    });

    test(
      "a five-call tool loop: the engine's prompt n+1 = prompt n + completion n + the new messages; one sample, 0 drift",
      () => expectFiveCallLoop(h, engine, route),
      SLOW,
    );

    test("continuous_usage_stats: every chunk carries the usage so far, as vLLM's chat route writes it", async () => {
      const r = await h.register({ task_id: "stock-usage" });
      const stream = (await h.client(r).chat.completions.create({ model: "qwen3", tools, messages: [...STOCK_OPENING], stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } } as any)) as any;
      const usages: { choices: number; usage: Record<string, unknown> }[] = [];
      for await (const chunk of stream) usages.push({ choices: chunk.choices.length, usage: chunk.usage });
      const [sample] = samplesOf(h, r.rollout_id);
      const prompt = sample!.prompt_token_ids.length;
      const sampled = sample!.token_ids.length;
      // The think block's tokens (<think> and </think> left out): what vLLM's qwen3 reasoning parser counts.
      const ids = sample!.token_ids;
      const reasoning = ids.indexOf(151668) - ids.indexOf(151667) - 1;
      expect(reasoning).toBeGreaterThan(0);
      // The role chunk: nothing sampled yet; then the count so far in each chunk (UsageInfo dumped exclude_unset).
      expect(usages[0]!.usage).toEqual({ prompt_tokens: prompt, total_tokens: prompt, completion_tokens: 0, completion_tokens_details: { reasoning_tokens: 0 } });
      const perChunk = usages.filter((u) => u.choices > 0).map((u) => u.usage);
      expect(perChunk.every((u) => Object.keys(u).join() === "prompt_tokens,total_tokens,completion_tokens,completion_tokens_details")).toBe(true);
      const counts = perChunk.map((u) => u.completion_tokens as number);
      expect(counts.every((n, i) => i === 0 || n >= counts[i - 1]!)).toBe(true);
      expect(counts.at(-1)).toBe(sampled);
      const reasoningCounts = perChunk.map((u) => (u.completion_tokens_details as { reasoning_tokens: number }).reasoning_tokens);
      expect(reasoningCounts.every((n, i) => i === 0 || n >= reasoningCounts[i - 1]!)).toBe(true);
      expect(reasoningCounts.at(-1)).toBe(reasoning);
      // The usage chunk at the end (a chunk without choices: dumped exclude_none).
      expect(usages.at(-1)).toEqual({ choices: 0, usage: { prompt_tokens: prompt, total_tokens: prompt + sampled, completion_tokens: sampled, completion_tokens_details: { reasoning_tokens: reasoning } } });
    });

    test(
      "Anthropic Messages (streamed) and Responses: the tool call reaches the harness, the next call continues the chain",
      async () => {
        const r = (await h.register({ task_id: "stock-doors" })) as any;
        const user = "stock.csv lists items and counts. Write the total to total.txt.";
        const events = await messagesEvents(r, "qwen3", tools, [{ role: "user", content: user }]);
        const { block: toolUse, input } = firstToolUse(events);
        expect(toolUse?.name).toBe("read");
        expect(input).toEqual({ path: "stock.csv" });
        expect(events.some((e) => e.type === "content_block_start" && e.content_block.type === "thinking")).toBe(true);
        const second = await messagesEvents(r, "qwen3", tools, [
          { role: "user", content: user },
          { role: "assistant", content: [{ type: "text", text: "I'll look at the file first." }, { type: "tool_use", id: toolUse!.id, name: "read", input }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: toolUse!.id, content: "item,count\nbolts,12\n" }] },
        ]);
        expect(JSON.stringify(second).includes('"name":"bash"')).toBe(true);

        const r2 = (await h.register({ task_id: "stock-responses" })) as any;
        const responses = (input: unknown[]) =>
          fetch(`${r2.openai_base_url}/responses`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${r2.api_key}` },
            body: JSON.stringify({ model: "qwen3", instructions: "You are a coding agent.", tools: tools.map((t) => ({ type: "function", ...t.function })), input }),
          }).then((x) => x.json() as Promise<any>);
        const first = await responses([{ role: "user", content: user }]);
        const call = first.output.find((o: any) => o.type === "function_call");
        expect([call?.name, JSON.parse(call?.arguments ?? "{}")]).toEqual(["read", { path: "stock.csv" }]);
        // Codex reads the think block's size from the usage the derender counted (completion_tokens_details).
        const [firstSample] = samplesOf(h, r2.rollout_id);
        const thought = firstSample!.token_ids.indexOf(151668) - firstSample!.token_ids.indexOf(151667) - 1;
        expect(thought).toBeGreaterThan(0);
        expect(first.usage.output_tokens_details.reasoning_tokens).toBe(thought);
        const next = await responses([
          { role: "user", content: user },
          ...first.output.filter((o: any) => o.type !== "reasoning"),
          { type: "function_call_output", call_id: call.call_id, output: "item,count\nbolts,12\n" },
        ]);
        expect(next.output.find((o: any) => o.type === "function_call")?.name).toBe("bash");

        for (const id of [r.rollout_id, r2.rollout_id]) {
          const calls = await h.calls(id);
          expect(calls.map((c) => [c.chainStart, c.chainParent])).toEqual([[ChainStart.FIRST, ""], [0, calls[0]!.callId]]);
          const samples = samplesOf(h, id);
          expect(startsWith(samples[1]!.prompt_token_ids, [...samples[0]!.prompt_token_ids, ...samples[0]!.token_ids])).toBe(true);
        }
      },
      SLOW,
    );

    test(
      "calls that do not extend a chain start one, recorded with why; a retry gets its chain's prompt again",
      async () => {
        const r = await h.register({ task_id: "stock-rewrites" });
        const system = { role: "system", content: "You are a coding agent." };
        const user = { role: "user", content: "stock.csv lists items and counts. Write the total to total.txt." };
        const a1 = await chat(h, r, { messages: [system, user] }, false);
        const m2 = [system, user, echo(a1), { role: "tool", tool_call_id: a1.toolCalls[0]!.id, content: "item,count\nbolts,12\n" }];
        const a2 = await chat(h, r, { messages: m2 }, true);
        // A retry of call 2: the same prompt again, continuing the same call.
        await chat(h, r, { messages: m2 }, false);
        // A title call: another conversation.
        await chat(h, r, { messages: [{ role: "system", content: "Generate a title for this conversation." }, { role: "user", content: "stock.csv" }], tools: undefined }, false);
        // Compaction: the history replaced by a summary.
        const compacted = [system, { role: "user", content: "Summary so far: stock.csv was read (bolts 12). Go on: stock.csv total to total.txt." }];
        await chat(h, r, { messages: compacted }, false);
        // The answer of call 2 edited before it is sent back.
        const m4 = [...m2, { ...echo(a2), tool_calls: [{ id: "x", type: "function", function: { name: "bash", arguments: '{"command":"ls"}' } }] }, { role: "tool", tool_call_id: "x", content: "stock.csv" }];
        await chat(h, r, { messages: m4 }, false);
        // The same history with other tools.
        await chat(h, r, { messages: [...m2, echo(a2), { role: "tool", tool_call_id: a2.toolCalls[0]!.id, content: "42" }], tools: tools.slice(0, 2) }, false);
        // The last message continued, not answered.
        await chat(h, r, { messages: [system, user, { role: "assistant", content: "I'll" }], continue_final_message: true, add_generation_prompt: false }, false);

        const calls = await h.calls(r.rollout_id);
        const samples = samplesOf(h, r.rollout_id);
        expect(calls.map((c) => c.chainStart)).toEqual([
          ChainStart.FIRST,
          0,
          0,
          ChainStart.NEW_CONVERSATION,
          ChainStart.HISTORY_REWRITTEN,
          ChainStart.ANSWER_CHANGED,
          ChainStart.SETTINGS_CHANGED,
          ChainStart.NOT_APPENDABLE,
        ]);
        // The retry: the same prompt as call 2, the same parent.
        expect(samples[2]!.prompt_token_ids).toEqual(samples[1]!.prompt_token_ids);
        expect(calls[2]!.chainParent).toBe(calls[0]!.callId);
        expect(calls[2]!.chainId).toBe(calls[0]!.callId);
        // A new chain: its own id, no parent, the whole prompt rendered, a detail naming the message.
        for (const c of calls.slice(3)) {
          expect([c.chainId, c.chainParent]).toEqual([c.callId, ""]);
          expect(c.renderedTokens).toBe(samples[calls.indexOf(c)]!.prompt_token_ids.length);
          expect(c.chainStartDetail).not.toBe("");
        }
        expect(calls[4]!.chainStartDetail).toContain("message 1 (user) differs");
        expect(calls[5]!.chainStartDetail).toContain("is not the answer the harness was sent");
        // Call 5 was a new chain of its own; it does not disturb the main chain, which call 6 looked at.
        expect(calls[6]!.chainStartDetail).toContain("tools or template variables changed");
      },
      SLOW,
    );
  });
}

test(
  "a restarted proxy restores an open rollout's chains from its records: the next call continues its chain, a retry and a second chain too",
  async () => {
    const h = await startProxyHarness({ sim: { script }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3" }) } });
    try {
      const r = await h.register({ task_id: "stock" });
      const messages: Msg[] = [{ role: "user", content: "stock.csv lists items and counts. Write the total to total.txt." }];
      const a1 = await chat(h, r, { messages }, false);
      const title = [{ role: "system", content: "Generate a title for this conversation." }, { role: "user", content: "stock.csv" }];
      const t1 = await chat(h, r, { messages: title, tools: undefined }, false);
      await h.restart();
      const m2 = [...messages, echo(a1), { role: "tool", tool_call_id: a1.toolCalls[0]!.id, content: "item,count\n" }];
      await chat(h, r, { messages: m2 }, true);
      await h.restart();
      // A retry of the last call after a second restart: its prompt again, its parent again.
      await chat(h, r, { messages: m2 }, false);
      // The title chain, not the most recent one, came back too.
      await chat(h, r, { messages: [...title, echo(t1), { role: "user", content: "Shorter." }], tools: undefined }, false);

      const calls = await h.calls(r.rollout_id);
      const [c1, c2, c3, c4, c5] = calls;
      expect(calls.map((c) => [c.chainStart, c.chainId, c.chainParent])).toEqual([
        [ChainStart.FIRST, c1!.callId, ""],
        [ChainStart.NEW_CONVERSATION, c2!.callId, ""],
        [0, c1!.callId, c1!.callId],
        [0, c1!.callId, c1!.callId],
        [0, c2!.callId, c2!.callId],
      ]);
      expect([c3, c4, c5].map((c) => c!.chainStartDetail)).toEqual(["", "", ""]);
      const samples = samplesOf(h, r.rollout_id);
      expect(startsWith(samples[2]!.prompt_token_ids, [...samples[0]!.prompt_token_ids, ...samples[0]!.token_ids])).toBe(true);
      expect(samples[3]!.prompt_token_ids).toEqual(samples[2]!.prompt_token_ids);
      expect(startsWith(samples[4]!.prompt_token_ids, [...samples[1]!.prompt_token_ids, ...samples[1]!.token_ids])).toBe(true);
      // Only what the template writes for the new messages was rendered.
      expect(c3!.renderedTokens).toBe(samples[2]!.prompt_token_ids.length - samples[0]!.prompt_token_ids.length - samples[0]!.token_ids.length);
    } finally {
      await h.close();
    }
  },
  SLOW,
);

/** One Chat call through a proxy started with `options`, which the engine's answer fails: the 502's message and the error the call was recorded with. */
async function refusedCall(options: Parameters<typeof startProxyHarness>[0]): Promise<{ message: string; recorded: string }> {
  const h = await startProxyHarness(options);
  try {
    const r = await h.register({ task_id: "stock" });
    const response = await fetch(`${r.openai_base_url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${r.api_key}` },
      body: JSON.stringify({ model: "qwen3", messages: [{ role: "user", content: "stock.csv" }] }),
    });
    expect(response.status).toBe(502);
    const message = ((await response.json()) as any).error.message as string;
    const [call] = await h.calls(r.rollout_id);
    return { message, recorded: call!.error };
  } finally {
    await h.close();
  }
}

describe("--token-in-route auto (the default): the generate route where the engine serves it", () => {
  /** A harness with the default route, its "found" lines kept. */
  const autoHarness = async (sim: NonNullable<Parameters<typeof startProxyHarness>[0]>["sim"], upstreams?: string[]) => {
    const lines: string[] = [];
    const h = await startProxyHarness({ sim, proxy: { mode: "train", tokenIn: { ...tokenInOptions({ modelDir: "qwen3" }), log: (l) => lines.push(l) }, ...(upstreams ? { upstreams } : {}) } });
    return { h, lines };
  };

  test(
    "vLLM with --enable-scale-out: asked once, the five-call loop goes to /inference/v1/generate",
    async () => {
      const { h, lines } = await autoHarness({ script });
      try {
        await expectFiveCallLoop(h, "vllm", "generate");
        expect(lines).toEqual([expect.stringMatching(/\/inference\/v1\/generate is served .*token-in calls go there/)]);
      } finally {
        await h.close();
      }
    },
    SLOW,
  );

  test(
    "vLLM without it (a 403 at /inference/v1/generate): the five-call loop goes to /v1/completions",
    async () => {
      const { h, lines } = await autoHarness({ script, enableScaleOut: false });
      try {
        await expectFiveCallLoop(h, "vllm", "completions");
        expect(lines).toEqual([expect.stringMatching(/answered 403 \(vLLM started without --enable-scale-out\): token-in calls go to \/v1\/completions/)]);
      } finally {
        await h.close();
      }
    },
    SLOW,
  );

  test(
    "an engine restarted without the flag after the probe: that call fails naming it, the next asks again and goes to /v1/completions",
    async () => {
      // One upstream address in front of a vLLM with the route, then of one without it.
      const withRoute = await startPolicySimulator({ seed: 7, script });
      const without = await startPolicySimulator({ seed: 7, script, enableScaleOut: false });
      let behind = withRoute;
      const front = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => { const url = new URL(req.url); return fetch(behind.url + url.pathname + url.search, { method: req.method, headers: req.headers, body: req.body }); } });
      const { h, lines } = await autoHarness(undefined, [`http://127.0.0.1:${front.port}/v1`]);
      try {
        const r = await h.register({ task_id: "stock" });
        const call = () => fetch(`${r.openai_base_url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${r.api_key}` }, body: JSON.stringify({ model: "qwen3", tools, messages: [...STOCK_OPENING] }) });
        expect((await call()).status).toBe(200);
        behind = without;
        const refused = await call();
        expect(refused.status).toBe(502);
        expect(((await refused.json()) as any).error.message).toContain("which it served when --token-in-route auto asked");
        expect((await call()).status).toBe(200);
        // The engine request kept (its prompt left out): the generate route's GenerateRequest, then a CompletionRequest.
        const routes = (await h.calls(r.rollout_id)).map((c) => (JSON.parse(new TextDecoder().decode(c.engineRequest)).output_mode === "tokens" ? "generate" : "completions"));
        expect(routes).toEqual(["generate", "generate", "completions"]);
        expect(lines.map((l) => /is served|answered 403/.exec(l)?.[0])).toEqual(["is served", "answered 403"]);
      } finally {
        await h.close();
        front.stop(true);
        await withRoute.stop();
        await without.stop();
      }
    },
    SLOW,
  );
});

describe("token-in failures: clear errors", () => {
  // An engine without the token-id route, and vLLM's generate route on an engine started without it: a 502 naming what is needed.
  const refusals: [string, Parameters<typeof startProxyHarness>[0], string[]][] = [
    [
      "an engine without the token-id route (a vLLM-flavoured simulator called as SGLang answers 404 at /generate) fails the call naming the route",
      { sim: { script }, proxy: { mode: "train", engine: "sglang", engineProbe: false, tokenIn: tokenInOptions({ modelDir: "qwen3" }) } },
      ["404 at /generate", "docs/token-in.md"],
    ],
    [
      "--token-in-route generate against a vLLM started without --enable-scale-out (a 403 at /inference/v1/generate) fails the call naming the flag",
      { sim: { script, enableScaleOut: false }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3", route: "generate" }) } },
      ["403 at /inference/v1/generate", "--enable-scale-out", "--token-in-route"],
    ],
  ];
  for (const [name, options, says] of refusals) {
    test(
      name,
      async () => {
        const { message, recorded } = await refusedCall(options);
        for (const part of says) expect(message).toContain(part);
        expect(recorded).toContain("token-in mode");
      },
      SLOW,
    );
  }

  test(
    "an image given by URL is refused naming the fix (inline data: URLs; images are token-in: tests/token-in/images.test.ts)",
    async () => {
      const h = await startProxyHarness({ sim: { script }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3" }) } });
      try {
        const r = await h.register({ task_id: "stock" });
        const png = "https://example.com/screen.png";
        const response = await fetch(`${r.openai_base_url}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${r.api_key}` },
          body: JSON.stringify({ model: "qwen3", messages: [{ role: "user", content: [{ type: "text", text: "stock.csv" }, { type: "image_url", image_url: { url: png } }] }] }),
        });
        expect(response.status).toBe(400);
        expect(((await response.json()) as any).error.message).toMatch(/image 1 of the request is a URL \(https:\/\/example.com\/screen.png\).*send images inline as data: URLs, or use engine mode/);
        expect(h.sims[0]!.samples.filter((s) => s.rollout === r.rollout_id)).toEqual([]);
      } finally {
        await h.close();
      }
    },
    SLOW,
  );

  test(
    "an upstream that is neither vLLM nor SGLang is refused at start",
    async () => {
      // An OpenAI-compatible server that says nothing of its engine, and returns ids on its chat route.
      const server = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: (req) =>
          new URL(req.url).pathname === "/v1/models"
            ? Response.json({ object: "list", data: [{ id: "m", object: "model" }] })
            : Response.json({ error: { message: "not here" } }, { status: 404 }),
      });
      const dir = mkdtempSync(join(tmpdir(), "forge-token-in-other-"));
      try {
        const started = startProxy({ listen: "127.0.0.1:0", upstreams: [`http://127.0.0.1:${server.port}/v1`], dataDir: dir, mode: "train", engineProbe: false, healthIntervalMs: 0, tokenIn: tokenInOptions({ modelDir: "qwen3" }) });
        await expect(started).rejects.toThrow(/token-in mode sends the engine token-id prompts, which only vLLM .* and SGLang .* take/);
      } finally {
        server.stop(true);
        rmSync(dir, { recursive: true, force: true });
      }
    },
    SLOW,
  );

  test("an unknown parser, a missing model directory: errors naming the setting, what is known and the fix", async () => {
    expect(() => tokenInOptions({ modelDir: "qwen3", toolParser: "hermes2" })).toThrow(TokenInSettingsError);
    expect(() => tokenInOptions({ modelDir: "qwen3", toolParser: "hermes2" })).toThrow(/--tool-call-parser: no tool-call parser "hermes2"; known: .*hermes/);
    expect(() => tokenInOptions({ modelDir: "qwen3", reasoningParser: "deepseek" })).toThrow(/--reasoning-parser: no reasoning parser "deepseek"; known: .*qwen3.* \(or none\)/);
    expect(tokenInOptions({ modelDir: "qwen3", reasoningParser: "none" }).model.reasoningParser).toBeNull();
    expect(tokenInOptions({ modelDir: "qwen3", toolParser: "qwen3_coder" }).model.toolParser).toBe("qwen3_coder");
    const empty = mkdtempSync(join(tmpdir(), "forge-token-in-model-"));
    try {
      expect(() => tokenInOptions({ modelDir: empty })).toThrow(new RegExp(`--model-dir: ${join(empty, "tokenizer.json")} is missing`));
      writeFileSync(join(empty, "tokenizer.json"), "{}");
      expect(() => tokenInOptions({ modelDir: empty })).toThrow(/tokenizer_config.json is missing/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
    expect(() => tokenInOptions({ modelDir: "qwen3", maxModelLen: 0 })).toThrow(/--max-model-len: expected a positive integer/);
  });

  test("forge proxy flags: --token-in needs --model-dir and train mode; model flags need --token-in", async () => {
    const data = mkdtempSync(join(tmpdir(), "forge-token-in-cli-"));
    try {
      const base = ["--upstream", "http://127.0.0.1:9/v1", "--data", data];
      await expect(proxyCommand([...base, "--token-in"])).rejects.toThrow(/--token-in needs --model-dir DIR/);
      await expect(proxyCommand([...base, "--token-in", "--model-dir", "qwen3", "--mode", "eval"])).rejects.toThrow(/runs in train mode/);
      await expect(proxyCommand([...base, "--model-dir", "qwen3"])).rejects.toThrow(/--model-dir is a token-in setting: add --token-in/);
      await expect(proxyCommand([...base, "--token-in", "--model-dir", "qwen3", "--tool-call-parser", "nope"])).rejects.toThrow(/--tool-call-parser: no tool-call parser "nope"/);
      await expect(proxyCommand([...base, "--token-in", "--model-dir", join(data, "nowhere")])).rejects.toThrow(/--model-dir: .*tokenizer.json is missing/);
      await expect(proxyCommand([...base, "--token-in-route", "generate"])).rejects.toThrow(/--token-in-route is a token-in setting: add --token-in/);
      await expect(proxyCommand([...base, "--token-in", "--model-dir", "qwen3", "--token-in-route", "chat"])).rejects.toThrow(/--token-in-route: expected auto .*, completions or generate .*got "chat"/);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });

  test("the proxy refuses token-in outside train mode; the experiment refuses tokenIn without tokenMode, and token-in in eval", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-token-in-eval-"));
    try {
      await expect(startProxy({ listen: "127.0.0.1:0", upstreams: ["http://127.0.0.1:9/v1"], dataDir: dir, mode: "eval", healthIntervalMs: 0, tokenIn: tokenInOptions({ modelDir: "qwen3" }) })).rejects.toThrow(/use it with mode train/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const yaml = (policy: string) => `apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: { name: x }\nspec:\n  policy:\n${policy}\n  harness: { name: forge-react }\n  environment: { tasks: ./tasks }\n`;
    expect(() => parseExperimentText(yaml("    model: m\n    mode: eval\n    tokenMode: token-in"), "x.yaml")).toThrow(/tokenMode.*needs mode: train/s);
    expect(() => parseExperimentText(yaml("    model: m\n    mode: train\n    tokenIn: { toolParser: hermes }"), "x.yaml")).toThrow(/set tokenMode: token-in/);
    expect(() => parseExperimentText(yaml("    model: m\n    mode: train\n    tokenMode: token-in\n    upstreams: [http://gpu:8000/v1]"), "x.yaml")).toThrow(/modelDir.*served model's directory/s);
    expect(parseExperimentText(yaml("    model: m\n    mode: train\n    tokenMode: token-in"), "x.yaml").spec.policy.tokenMode).toBe("token-in");
  });
});


test(
  "SGLang started with --incremental-streaming-output (each streamed event holds only what is new): the same tool loop, every id read",
  async () => {
    const h = await startProxyHarness({ sim: { script, engine: "sglang", incrementalStreamingOutput: true }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3" }) } });
    try {
      await expectFiveCallLoop(h, "sglang");
    } finally {
      await h.close();
    }
  },
  SLOW,
);
