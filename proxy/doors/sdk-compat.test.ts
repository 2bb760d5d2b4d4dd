// The official SDKs parse what the translators emit: their stream accumulators are the
// strictest readers of event order, indices and shapes that we have offline.
import { describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import type { ChatChunk } from "./chat-types.ts";
import { anthropicSse, createAnthropicStreamTranslator } from "./anthropic/stream.ts";
import { chatToAnthropicMessage } from "./anthropic/response.ts";
import { responsesToChatRequest } from "./responses/request.ts";
import { chatToResponsesResponse } from "./responses/response.ts";
import { createResponsesStreamTranslator, responsesSse } from "./responses/stream.ts";

const chunks: ChatChunk[] = [
  { id: "c1", choices: [{ delta: { role: "assistant", reasoning_content: "Let me look." } }] },
  { choices: [{ delta: { content: "I will " } }] },
  { choices: [{ delta: { content: "list." } }] },
  { choices: [{ delta: { tool_calls: [{ index: 0, id: "call_A1", type: "function", function: { name: "bash", arguments: '{"cmd"' } }] } }] },
  { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: ':"ls"}' } }] } }] },
  { choices: [{ delta: { tool_calls: [{ index: 1, id: "call_B2", type: "function", function: { name: "read", arguments: '{"path":"a"}' } }] } }] },
  { choices: [{ delta: {}, finish_reason: "tool_calls" }] },
  { choices: [], usage: { prompt_tokens: 11, completion_tokens: 9 } },
];

const sseFetch = (body: string, contentType = "text/event-stream") =>
  (async () => new Response(body, { headers: { "content-type": contentType } })) as unknown as typeof fetch;

describe("official SDKs accept the translated output", () => {
  test("@anthropic-ai/sdk MessageStream accumulates the translated stream", async () => {
    const t = createAnthropicStreamTranslator({ model: "claude-x" });
    const sse = [...chunks.flatMap((c) => t.push(c)), ...t.finish()].map(anthropicSse).join("");
    const client = new Anthropic({ apiKey: "k", baseURL: "http://127.0.0.1:1", fetch: sseFetch(sse), maxRetries: 0 });
    const msg = await client.messages.stream({ model: "claude-x", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).finalMessage();
    expect(msg.content).toEqual([
      { type: "thinking", thinking: "Let me look.", signature: "" },
      { type: "text", text: "I will list.", citations: null },
      { type: "tool_use", id: "call_A1", name: "bash", input: { cmd: "ls" } },
      { type: "tool_use", id: "call_B2", name: "read", input: { path: "a" } },
    ] as any);
    expect(msg.stop_reason).toBe("tool_use");
    expect(msg.usage.output_tokens).toBe(9);
    expect(msg.usage.input_tokens).toBe(11);
  });

  test("@anthropic-ai/sdk messages.create reads the translated message", async () => {
    const body = chatToAnthropicMessage({ id: "c", choices: [{ message: { content: "hey" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1 } }, { model: "claude-x" });
    const client = new Anthropic({ apiKey: "k", baseURL: "http://127.0.0.1:1", fetch: sseFetch(JSON.stringify(body), "application/json"), maxRetries: 0 });
    const msg = await client.messages.create({ model: "claude-x", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    expect(msg.content[0]).toMatchObject({ type: "text", text: "hey" });
  });

  test("openai responses.stream accumulates the translated stream; create() reads the object", async () => {
    const request = { model: "m", input: "hi", tools: [{ type: "function", name: "bash", parameters: { type: "object" } }, { type: "function", name: "read", parameters: { type: "object" } }] };
    const { catalogue } = responsesToChatRequest(request);
    const t = createResponsesStreamTranslator({ request, catalogue });
    const sse = [...chunks.flatMap((c) => t.push(c)), ...t.finish()].map(responsesSse).join("");
    const client = new OpenAI({ apiKey: "k", baseURL: "http://127.0.0.1:1/v1", fetch: sseFetch(sse), maxRetries: 0 });
    const final = await client.responses.stream(request as any).finalResponse();
    expect(final.output.map((o) => o.type)).toEqual(["reasoning", "message", "function_call", "function_call"]);
    expect(final.output_text).toBe("I will list.");
    const calls = final.output.filter((o) => o.type === "function_call") as any[];
    expect(calls.map((c) => [c.call_id, c.arguments])).toEqual([["call_A1", '{"cmd":"ls"}'], ["call_B2", '{"path":"a"}']]);

    const seen: string[] = [];
    const raw = new OpenAI({ apiKey: "k", baseURL: "http://127.0.0.1:1/v1", fetch: sseFetch(sse), maxRetries: 0 });
    const stream = (await raw.responses.create({ ...(request as any), stream: true })) as unknown as AsyncIterable<{ type: string }>;
    for await (const ev of stream) seen.push(ev.type);
    expect(seen.at(-1)).toBe("response.completed");

    const obj = chatToResponsesResponse({ id: "c", choices: [{ message: { content: "hey" }, finish_reason: "stop" }] }, { request, catalogue });
    const plain = new OpenAI({ apiKey: "k", baseURL: "http://127.0.0.1:1/v1", fetch: sseFetch(JSON.stringify(obj), "application/json"), maxRetries: 0 });
    const r = await plain.responses.create(request as any);
    expect(r.output_text).toBe("hey");
  });
});
