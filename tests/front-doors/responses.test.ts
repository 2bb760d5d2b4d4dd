/**
 * The Responses front door (what Codex speaks) driven by the official openai client
 * (`client.responses.create`, streaming and not), through the real proxy to the real policy
 * simulator: function calls with exact call ids, additional_tools, prompt_cache_key kept in the
 * record only, images stored once, the WebSocket upgrade refused, records token-exact.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { createHash } from "node:crypto";
import { Protocol, TokenStatus, type ModelCall } from "../../schemas/index.ts";
import { solidPng } from "../../model/testing.ts";
import { expectTokenExact, requestBodiesOf, startProxyHarness, upstreamRequestsOf, type ProxyHarness } from "../../proxy/testing.ts";

let h: ProxyHarness;
beforeAll(async () => {
  h = await startProxyHarness({
    sim: {
      script: {
        version: 1,
        thinking: true,
        failure_rate: 0,
        tasks: [{ name: "hello", match: "hello.txt", steps: [{ say: "Creating it.", bash: "printf 'hi\\n' > hello.txt" }, { finish: "Created hello.txt." }] }],
      },
    },
  });
});
afterAll(async () => {
  await h?.close();
});

const decode = (b: Uint8Array) => new TextDecoder().decode(b);
const last = <T>(xs: T[]) => xs[xs.length - 1]!;
const shell = { type: "function" as const, name: "shell", description: "Run a shell command", strict: false, parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } };
const task = "Create hello.txt containing hi.";

async function client(headers: Record<string, string> = {}) {
  const r = await h.register({ harness: "codex" });
  return { r, openai: new OpenAI({ baseURL: r.openai_base_url, apiKey: r.api_key, maxRetries: 0, defaultHeaders: headers }) };
}

const expectExactTokens = (call: ModelCall, calls: ModelCall[], sample: { prompt_token_ids: number[]; token_ids: number[] }) =>
  expectTokenExact(call, calls, sample, Protocol.RESPONSES);

describe("responses front door", () => {
  test("non-streaming function call, then its output: call ids kept, records token-exact", async () => {
    const { r, openai } = await client({ "session-id": "codex-session-1" });
    const base = { model: "gpt-5-codex", instructions: "You are Codex.", store: false, prompt_cache_key: "thread-abc", tools: [shell] };
    const input: OpenAI.Responses.ResponseInputItem[] = [{ type: "message", role: "user", content: [{ type: "input_text", text: task }] }];
    const first = await openai.responses.create({ ...base, input });
    const s1 = last(h.sims[0]!.samples);
    expect(first.status).toBe("completed");
    expect(first.prompt_cache_key).toBe("thread-abc");
    expect(first.output.map((o) => o.type)).toEqual(["reasoning", "message", "function_call"]);
    const call = first.output.find((o) => o.type === "function_call") as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call.name).toBe("shell");
    expect(JSON.parse(call.arguments)).toEqual({ command: "printf 'hi\\n' > hello.txt" });
    expect(first.usage?.output_tokens).toBe(s1.token_ids.length);

    input.push(...(first.output as any[]), { type: "function_call_output", call_id: call.call_id, output: "exit code 0" });
    const second = await openai.responses.create({ ...base, input });
    const s2 = last(h.sims[0]!.samples);
    // Qwen3 opens with a think block; vLLM's qwen3 parser leaves the newlines after it in the text.
    expect(second.output_text).toBe("\n\nCreated hello.txt.");

    const calls = await h.calls(r.rollout_id);
    expect(calls.length).toBe(2);
    expectExactTokens(calls[0]!, calls, s1);
    expectExactTokens(calls[1]!, calls, s2);
    expect(JSON.parse(decode(requestBodiesOf(calls)[0]!)).prompt_cache_key).toBe("thread-abc");
    const up = upstreamRequestsOf(calls)[1]! as any;
    expect(up.prompt_cache_key).toBeUndefined();
    expect(up.messages.find((m: any) => m.role === "assistant").tool_calls[0].id).toBe(call.call_id);
    expect(up.messages.find((m: any) => m.role === "tool")).toEqual({ role: "tool", tool_call_id: call.call_id, content: "exit code 0" });
    expect(calls[0]!.session).toEqual({ "session-id": "codex-session-1" });
    expect(calls[1]!.prefixOf).toBe(calls[0]!.callId);
  });

  test("streaming, tools in an additional_tools item (Codex's built-in provider): strictly increasing sequence numbers", async () => {
    const { r, openai } = await client();
    const request = {
      model: "gpt-5-codex",
      stream: true as const,
      store: false,
      input: [
        { type: "additional_tools", role: "developer", tools: [shell] },
        { type: "message", role: "developer", content: [{ type: "input_text", text: "sandbox: none" }] },
        { type: "message", role: "user", content: [{ type: "input_text", text: task }] },
      ],
    } as any;
    const stream = await openai.responses.create(request);
    const events: any[] = [];
    for await (const e of stream as any) events.push(e);
    const sample = last(h.sims[0]!.samples);
    expect(events[0].type).toBe("response.created");
    expect(events.at(-1).type).toBe("response.completed");
    events.forEach((e, i) => i > 0 && expect(e.sequence_number).toBeGreaterThan(events[i - 1].sequence_number));
    const args = events.filter((e) => e.type === "response.function_call_arguments.delta").map((e) => e.delta).join("");
    const done = events.at(-1).response.output.find((o: any) => o.type === "function_call");
    expect(args).toBe(done.arguments);
    expect(JSON.parse(done.arguments)).toEqual({ command: "printf 'hi\\n' > hello.txt" });
    expect(events.some((e) => e.type === "response.reasoning_text.delta")).toBe(true);
    const calls = await h.calls(r.rollout_id);
    expectExactTokens(calls[0]!, calls, sample);
    expect(decode(calls[0]!.responseBody)).toStartWith("event: response.created\n");

    // The openai ResponseStream helper accumulates the same events into the final response.
    const final = await openai.responses.stream({ ...request, stream: undefined }).finalResponse();
    expect(final.output.find((o) => o.type === "function_call")).toMatchObject({ name: "shell", call_id: expect.any(String) });
  });

  test("a long prompt streams (the first chunk, with thousands of prompt ids, spans many reads)", async () => {
    const { r, openai } = await client();
    const instructions = Array.from({ length: 3000 }, (_, i) => `rule ${i}: be careful.`).join("\n");
    const stream = await openai.responses.create({ model: "m", instructions, input: task, tools: [shell], stream: true });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    expect(types.at(-1)).toBe("response.completed");
    const [call] = await h.calls(r.rollout_id);
    expect(call!.tokenStatus).toBe(TokenStatus.COMPLETE);
    expect(call!.promptLen).toBeGreaterThan(10_000);
  });

  test("a repeated screenshot is stored once per rollout, decoded", async () => {
    const { r, openai } = await client();
    // A real PNG: the simulator sizes images as Qwen2.5-VL's processor does (undecodable bytes are a 400, as from vLLM).
    const png = solidPng(400, 300).toString("base64");
    const sha = createHash("sha256").update(Buffer.from(png, "base64")).digest("hex");
    const shot = { type: "input_image" as const, image_url: `data:image/png;base64,${png}`, detail: "auto" as const };
    const input: any[] = [{ role: "user", content: [shot, { type: "input_text", text: "Describe the screen." }] }];
    const a = await openai.responses.create({ model: "m", input });
    input.push(...a.output, { role: "user", content: [shot, { type: "input_text", text: "Again." }] });
    await openai.responses.create({ model: "m", input });
    const calls = await h.calls(r.rollout_id);
    const decoded = Buffer.from(png, "base64");
    expect(calls.flatMap((c) => c.content).filter((p) => decoded.equals(p)).length).toBe(1);
    expect(calls.map((c) => c.blobRefs)).toEqual([[sha], [sha]]);
    expect(requestBodiesOf(calls).map((b) => decode(b).split(png).length - 1)).toEqual([1, 2]);
  });

  test("a WebSocket upgrade of GET /v1/responses is refused cleanly (Codex falls back to POST)", async () => {
    const { r } = await client();
    for (const url of [`${r.openai_base_url}/responses`, `${h.proxy.url}/v1/responses`]) {
      const res = await fetch(url, { headers: { authorization: `Bearer ${r.api_key}`, connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==" } });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(((await res.json()) as any).error.code).toBe("websocket_not_supported");
    }
  });

  test("previous_response_id (server-side state) is a 400 naming the field", async () => {
    const { openai } = await client();
    const err = await openai.responses.create({ model: "m", input: "hi", previous_response_id: "resp_1" }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(String(err.message)).toContain("previous_response_id");
  });
});
