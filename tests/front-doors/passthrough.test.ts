/**
 * `upstreamProtocol: "anthropic" | "responses"` (eval-only runs against vendor APIs): the
 * harness's request goes upstream unchanged, with the vendor's auth headers, and its answer
 * comes back unchanged. A loopback stand-in plays the vendor API.
 */
import { afterAll, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { Protocol, TokenStatus } from "../../schemas/index.ts";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";
import { createProxy } from "../../proxy/testing.ts";

const seen: { path: string; headers: Headers; body: any }[] = [];
const message = { id: "msg_vendor", type: "message", role: "assistant", model: "claude-real", content: [{ type: "text", text: "from the vendor" }], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 3, output_tokens: 2 } };
const response = { id: "resp_vendor", object: "response", created_at: 1, status: "completed", model: "gpt-real", output: [{ type: "message", id: "m1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "vendor says hi", annotations: [] }] }], usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } };
const vendor = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const url = new URL(req.url);
    const body = req.method === "POST" ? await req.json() : undefined;
    seen.push({ path: url.pathname + url.search, headers: req.headers, body });
    if (url.pathname === "/v1/messages" && (body as any)?.stream) {
      const events = [
        { type: "message_start", message: { ...message, content: [], stop_reason: null } },
        { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
        { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "streamed" } },
        { type: "content_block_stop", index: 0 },
        { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 1 } },
        { type: "message_stop" },
      ];
      return new Response(events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join(""), { headers: { "content-type": "text/event-stream" } });
    }
    if (url.pathname === "/v1/messages") return Response.json(message);
    if (url.pathname === "/v1/responses") return Response.json(response);
    return new Response("not found", { status: 404 });
  },
});
const harnesses: ProxyHarness[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.close();
  vendor.stop(true);
});

async function start(upstreamProtocol: "anthropic" | "responses") {
  const h = await startProxyHarness({ proxy: { upstreams: [`http://127.0.0.1:${vendor.port}/v1`], mode: "eval", upstreamProtocol, upstreamApiKey: "sk-vendor" } });
  harnesses.push(h);
  return h;
}

test("anthropic passthrough: body unchanged, x-api-key and anthropic headers, answer unchanged, stream too", async () => {
  const h = await start("anthropic");
  const r = (await h.register()) as any;
  const client = new Anthropic({ baseURL: r.anthropic_base_url, apiKey: r.api_key, maxRetries: 0 });
  const body = { model: "claude-real", max_tokens: 10, system: [{ type: "text" as const, text: "s", cache_control: { type: "ephemeral" as const } }], messages: [{ role: "user" as const, content: "hi" }] };
  // Claude Code calls /v1/messages?beta=true; the query goes upstream too.
  const got = await client.messages.create(body, { headers: { "anthropic-beta": "prompt-caching-2024-07-31" }, query: { beta: "true" } });
  expect(got).toMatchObject({ id: "msg_vendor", content: [{ type: "text", text: "from the vendor" }] });
  const req = seen.at(-1)!;
  expect(req.path).toBe("/v1/messages?beta=true");
  expect(req.body).toEqual(body);
  expect(req.headers.get("x-api-key")).toBe("sk-vendor");
  expect(req.headers.get("authorization")).toBeNull();
  expect(req.headers.get("anthropic-version")).toMatch(/^\d{4}-\d{2}-\d{2}$/); // the SDK's own version, forwarded
  expect(req.headers.get("anthropic-beta")).toBe("prompt-caching-2024-07-31");
  const streamed = await client.messages.stream({ ...body, stream: undefined } as any).finalMessage();
  expect(streamed.content).toEqual([{ type: "text", text: "streamed" }] as any);
  const calls = await h.calls(r.rollout_id);
  expect(calls.map((c) => [c.protocol, c.tokenStatus])).toEqual([
    [Protocol.ANTHROPIC_MESSAGES, TokenStatus.NOT_REQUESTED],
    [Protocol.ANTHROPIC_MESSAGES, TokenStatus.NOT_REQUESTED],
  ]);
  expect(JSON.parse(new TextDecoder().decode(calls[0]!.responseBody))).toEqual(message);
  expect(calls[0]!.upstreamRequestBody.length).toBe(0); // the request body went up as is
});

test("responses passthrough: body unchanged with the bearer key; train mode is refused", async () => {
  const h = await start("responses");
  const r = await h.register();
  const got = await new OpenAI({ baseURL: r.openai_base_url, apiKey: r.api_key, maxRetries: 0 }).responses.create({ model: "gpt-real", input: "hi", previous_response_id: "resp_0", store: true });
  expect(got.output_text).toBe("vendor says hi");
  const req = seen.at(-1)!;
  expect(req.path).toBe("/v1/responses");
  expect(req.body).toEqual({ model: "gpt-real", input: "hi", previous_response_id: "resp_0", store: true });
  expect(req.headers.get("authorization")).toBe("Bearer sk-vendor");
  expect((await h.calls(r.rollout_id))[0]!.protocol).toBe(Protocol.RESPONSES);
  await expect(createProxy({ upstreams: ["http://127.0.0.1:1"], dataDir: h.dataDir, upstreamProtocol: "responses" })).rejects.toThrow("mode eval");
});
