/**
 * Chat and Completions through the real proxy to the real policy simulator with the official
 * openai client; the log read back carries exactly the ids the simulator sampled.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CallStatus, Protocol, TokenStatus } from "../../schemas/index.ts";
import { NOT_AN_ENGINE, requestBodiesOf, resolvePrompts, startProxyHarness, upstreamRequestsOf, type ProxyHarness } from "../../proxy/testing.ts";

let h: ProxyHarness;
beforeAll(async () => {
  h = await startProxyHarness();
});
afterAll(async () => {
  await h.close();
});

const last = <T>(xs: T[]) => xs[xs.length - 1]!;

describe("chat completions", () => {
  test("non-streaming: harness sees no train-mode fields; record has the sampled ids", async () => {
    const r = await h.register();
    const answer = await h.client(r).chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: "hello there" }], max_tokens: 16 });
    const sample = last(h.sims[0]!.samples);
    // The content is what follows Qwen3's think block.
    expect(answer.choices[0]!.message.content).toBe(sample.text.replace("<|im_end|>", "").split("</think>")[1]!);
    const raw = answer as any;
    expect(raw.prompt_token_ids).toBeUndefined();
    expect(raw.choices[0].token_ids).toBeUndefined();
    expect(raw.choices[0].logprobs).toBeNull();
    const [call] = await h.calls(r.rollout_id);
    expect(call!.seq).toBe(1);
    expect(call!.protocol).toBe(Protocol.CHAT);
    expect(call!.status).toBe(CallStatus.OK);
    expect(call!.tokenStatus).toBe(TokenStatus.COMPLETE);
    expect(call!.promptTokenIds).toEqual(sample.prompt_token_ids);
    expect(call!.completionTokenIds).toEqual(sample.token_ids);
    expect(call!.completionLogprobs.length).toBe(sample.logprobs.length);
    call!.completionLogprobs.forEach((lp, i) => expect(lp).toBeCloseTo(sample.logprobs[i]!, 5));
    expect(call!.promptLen).toBe(sample.prompt_token_ids.length);
    const [body] = requestBodiesOf([call!]);
    expect(JSON.parse(new TextDecoder().decode(body)).messages[0].content).toBe("hello there");
    // The harness's body is stored once; what went upstream is it plus the train-mode fields.
    expect(call!.upstreamRequestBody.length).toBe(0);
    expect(JSON.parse(new TextDecoder().decode(call!.upstreamRequestPatch))).toEqual({ return_token_ids: true, logprobs: true });
    expect(upstreamRequestsOf([call!])[0]).toEqual({ ...JSON.parse(new TextDecoder().decode(body)), return_token_ids: true, logprobs: true });
    expect(JSON.parse(new TextDecoder().decode(call!.responseBody)).choices[0].message.content).toBe(answer.choices[0]!.message.content);
    expect(call!.requestHeaders.find((x) => x.name === "authorization")!.value).toBe("[redacted]");
    expect(call!.usage!.completionTokens).toBe(sample.token_ids.length);
  });

  test("streaming: chunks pass through, ids captured per chunk", async () => {
    const r = await h.register();
    const stream = await h.client(r).chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: "stream please" }], stream: true });
    let text = "";
    let sawIds = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? "";
      if ((chunk as any).prompt_token_ids || (chunk as any).choices[0]?.token_ids) sawIds = true;
      if ((chunk as any).usage) sawIds = true;
    }
    expect(sawIds).toBe(false);
    const sample = last(h.sims[0]!.samples);
    expect(text).toBe(sample.text.replace("<|im_end|>", "").split("</think>")[1]!);
    const [call] = await h.calls(r.rollout_id);
    expect(call!.stream).toBe(true);
    expect(call!.tokenStatus).toBe(TokenStatus.COMPLETE);
    expect(call!.promptTokenIds).toEqual(sample.prompt_token_ids);
    expect(call!.completionTokenIds).toEqual(sample.token_ids);
    expect(call!.finishReason).toBe("stop");
    expect(call!.ttftMs).toBeGreaterThan(0);
    const sse = new TextDecoder().decode(call!.responseBody);
    expect(sse.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(sse).not.toContain("token_ids");
    expect(upstreamRequestsOf([call!])[0]).toMatchObject({ stream: true, return_token_ids: true, logprobs: true, stream_options: { include_usage: true } });
  });

  test("a harness that asks for token ids and logprobs gets them", async () => {
    const r = await h.register();
    const answer: any = await h.client(r).chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: "ids" }], logprobs: true, return_token_ids: true } as any);
    const sample = last(h.sims[0]!.samples);
    expect(answer.choices[0].token_ids).toEqual(sample.token_ids);
    expect(answer.prompt_token_ids).toEqual(sample.prompt_token_ids);
    expect(answer.choices[0].logprobs.content.length).toBe(sample.token_ids.length);
  });

  test("multi-turn prompts are stored as deltas that resolve to the sampled prompts", async () => {
    const r = await h.register();
    const client = h.client(r);
    const messages: any[] = [{ role: "system", content: "You are terse." }, { role: "user", content: "turn one" }];
    const sampled: number[][] = [];
    for (let turn = 0; turn < 4; turn++) {
      const stream = turn % 2 === 1;
      let content = "";
      if (stream) {
        for await (const chunk of await client.chat.completions.create({ model: "qwen3", messages, stream: true })) content += chunk.choices[0]?.delta?.content ?? "";
      } else {
        content = (await client.chat.completions.create({ model: "qwen3", messages })).choices[0]!.message.content ?? "";
      }
      sampled.push(last(h.sims[0]!.samples).prompt_token_ids);
      messages.push({ role: "assistant", content }, { role: "user", content: `turn ${turn + 2}` });
    }
    const calls = await h.calls(r.rollout_id);
    expect(calls.map((c) => c.seq)).toEqual([1, 2, 3, 4]);
    const prompts = resolvePrompts(calls);
    calls.forEach((c, i) => {
      expect(prompts.get(c.callId)).toEqual(sampled[i]!);
      expect(c.promptLen).toBe(sampled[i]!.length);
    });
    for (const c of calls.slice(1)) {
      expect(c.prefixOf).not.toBe("");
      expect(c.promptTokenIds.length).toBeLessThan(c.promptLen);
    }
    expect(calls[1]!.prefixOf).toBe(calls[0]!.callId);
  });
});

describe("completions", () => {
  test("non-streaming and streaming record the sampled ids", async () => {
    const r = await h.register();
    const client = h.client(r);
    const answer: any = await client.completions.create({ model: "qwen3", prompt: "Once upon a time", max_tokens: 8 });
    const s1 = last(h.sims[0]!.samples);
    expect(answer.choices[0].text).toBe(s1.text.replace("<|im_end|>", ""));
    expect(answer.choices[0].token_ids).toBeUndefined();
    expect(answer.choices[0].prompt_token_ids).toBeUndefined();
    let text = "";
    for await (const chunk of await client.completions.create({ model: "qwen3", prompt: "Once upon a time", max_tokens: 8, stream: true })) text += chunk.choices[0]?.text ?? "";
    const s2 = last(h.sims[0]!.samples);
    expect(text).toBe(s2.text.replace("<|im_end|>", ""));
    const calls = await h.calls(r.rollout_id);
    expect(calls.map((c) => c.protocol)).toEqual([Protocol.COMPLETIONS, Protocol.COMPLETIONS]);
    const prompts = resolvePrompts(calls);
    expect(prompts.get(calls[0]!.callId)).toEqual(s1.prompt_token_ids);
    expect(calls[0]!.completionTokenIds).toEqual(s1.token_ids);
    expect(prompts.get(calls[1]!.callId)).toEqual(s2.prompt_token_ids);
    expect(calls[1]!.completionTokenIds).toEqual(s2.token_ids);
    expect(calls[1]!.completionLogprobs.length).toBe(s2.token_ids.length);
    for (const c of calls) expect(c.tokenStatus).toBe(TokenStatus.COMPLETE);
  });
});

describe("what the upstream is told", () => {
  test("each call carries its rollout id in x-forge-rollout, and never the harness's key", async () => {
    const seen: Headers[] = [];
    // Stands in for the inference server only to observe the request headers.
    const upstream = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(request) {
        if (new URL(request.url).pathname.endsWith("/chat/completions")) seen.push(request.headers);
        return Response.json({
          id: "c1",
          object: "chat.completion",
          created: 0,
          model: "m",
          choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        });
      },
    });
    const local = await startProxyHarness({ simulators: 0, proxy: { upstreams: [`http://127.0.0.1:${upstream.port}/v1`], ...NOT_AN_ENGINE } });
    try {
      const a = await local.register();
      const b = await local.register();
      await local.client(a).chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
      await local.client(b).chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
      expect(seen.map((headers) => headers.get("x-forge-rollout"))).toEqual([a.rollout_id, b.rollout_id]);
      for (const headers of seen) expect(headers.get("authorization") ?? "").not.toContain(a.api_key);
    } finally {
      await local.close();
      upstream.stop(true);
    }
  });
});

describe("a stream's record", () => {
  let slow: ProxyHarness;
  beforeAll(async () => {
    // Events a millisecond apart: the relay gets them in many reads, so its buffer of what was
    // sent grows while earlier views of it are already with the harness.
    slow = await startProxyHarness({ sim: { chunkDelayMs: 1 } });
  });
  afterAll(async () => {
    await slow.close();
  });

  test("holds exactly the bytes the harness received, across the sent buffer's growths", async () => {
    const r = await slow.register();
    const response = await fetch(`${r.openai_base_url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${r.api_key}` },
      body: JSON.stringify({ model: "qwen3", stream: true, logprobs: true, top_logprobs: 20, return_token_ids: true, messages: [{ role: "user", content: `a long answer ${"é€𝄞".repeat(50)}` }] }),
    });
    const received = new Uint8Array(await response.arrayBuffer());
    const [call] = await slow.calls(r.rollout_id);
    expect(call!.status).toBe(CallStatus.OK);
    expect(received.length).toBeGreaterThan(64 * 1024);
    expect(Buffer.from(call!.responseBody).equals(Buffer.from(received))).toBe(true);
  });
});
