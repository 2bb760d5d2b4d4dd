import { afterAll, expect, test } from "bun:test";
import { countChatTokens, tokenizeUrl } from "./count-tokens.ts";

// A stand-in for vLLM's /tokenize: records the body and answers with a count.
const seen: unknown[] = [];
const vllm = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    if (new URL(req.url).pathname !== "/tokenize") return new Response("not found", { status: 404 });
    const body = (await req.json()) as { messages: unknown[] };
    seen.push(body);
    return Response.json({ count: 42, max_model_len: 4096, tokens: Array.from({ length: 42 }, (_, i) => i) });
  },
});
const bare = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("no", { status: 404 }) });
afterAll(() => {
  vllm.stop(true);
  bare.stop(true);
});

const chat = { model: "qwen3", messages: [{ role: "user" as const, content: "hello there" }], tools: [{ type: "function" as const, function: { name: "bash", parameters: {} } }] };

test("uses the upstream's /tokenize with the chat messages and tools", async () => {
  const n = await countChatTokens(chat, { upstreamBaseUrl: `http://127.0.0.1:${vllm.port}/v1` });
  expect(n).toEqual({ input_tokens: 42, source: "upstream" });
  expect(seen[0]).toMatchObject({ model: "qwen3", messages: chat.messages, tools: chat.tools, add_generation_prompt: true });
});

test("falls back to a labelled estimate when /tokenize is missing", async () => {
  const n = await countChatTokens(chat, { upstreamBaseUrl: `http://127.0.0.1:${bare.port}/v1` });
  expect(n.source).toBe("estimate");
  expect(n.input_tokens).toBeGreaterThan(0);
  expect(tokenizeUrl("http://h:1/v1/")).toBe("http://h:1/tokenize");
});
