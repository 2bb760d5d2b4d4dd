/**
 * The Anthropic Messages front door driven by the official @anthropic-ai/sdk, through the real
 * proxy to the real policy simulator: translated answers, tool calls with exact ids, images
 * stored once as Blobs, and records carrying exactly the ids the simulator sampled.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { createHash } from "node:crypto";
import { Protocol, type ModelCall } from "../../schemas/index.ts";
import { createContentStore, requestBodyOf } from "../../records/index.ts";
import { screenshots } from "../../records/testing.ts";
import { expectTokenExact, requestBodiesOf, startProxyHarness, upstreamRequestsOf, type ProxyHarness } from "../../proxy/testing.ts";

let h: ProxyHarness;
beforeAll(async () => {
  h = await startProxyHarness({
    sim: {
      script: {
        version: 1,
        thinking: true,
        failure_rate: 0,
        tasks: [{ name: "hello", match: "hello.txt", steps: [{ say: "I'll create it.", write: { path: "hello.txt", content: "hi\n" } }, { finish: "Created hello.txt." }] }],
      },
    },
  });
});
afterAll(async () => {
  await h?.close();
});

const decode = (b: Uint8Array) => new TextDecoder().decode(b);
const last = <T>(xs: T[]) => xs[xs.length - 1]!;
const tools: Anthropic.Tool[] = [
  { name: "write", description: "Write a file", input_schema: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] } },
];
const task = "Create hello.txt containing hi.";

async function client(extra: Record<string, string> = {}) {
  const r = (await h.register({ harness: "claude-code" })) as any;
  expect(r.anthropic_base_url).toBe(`${h.proxy.url}/r/${r.rollout_id}`);
  return { r, anthropic: new Anthropic({ baseURL: r.anthropic_base_url, apiKey: r.api_key, maxRetries: 0, defaultHeaders: extra }) };
}

const expectExactTokens = (call: ModelCall, calls: ModelCall[], sample: { prompt_token_ids: number[]; token_ids: number[] }) =>
  expectTokenExact(call, calls, sample, Protocol.ANTHROPIC_MESSAGES);

describe("anthropic messages front door", () => {
  test("non-streaming tool call, then its tool_result: ids kept, records token-exact", async () => {
    const { r, anthropic } = await client({ "x-claude-code-session-id": "cc-session-1" });
    const first = await anthropic.messages.create({ model: "claude-sonnet-4-5", max_tokens: 512, system: [{ type: "text", text: "You are a coding agent.", cache_control: { type: "ephemeral" } }], tools, messages: [{ role: "user", content: task }] });
    const s1 = last(h.sims[0]!.samples);
    expect(first.model).toBe("claude-sonnet-4-5");
    expect(first.stop_reason).toBe("tool_use");
    expect(first.content.map((b) => b.type)).toEqual(["thinking", "text", "tool_use"]);
    const use = first.content.find((b) => b.type === "tool_use") as Anthropic.ToolUseBlock;
    expect(use.name).toBe("write");
    expect(use.input).toEqual({ path: "hello.txt", content: "hi\n" });
    expect(first.usage.output_tokens).toBe(s1.token_ids.length);

    const second = await anthropic.messages.create({
      model: "claude-sonnet-4-5",
      max_tokens: 512,
      tools,
      system: [{ type: "text", text: "You are a coding agent.", cache_control: { type: "ephemeral" } }],
      messages: [
        { role: "user", content: task },
        { role: "assistant", content: first.content as any },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "wrote 3 bytes" }] },
      ],
    });
    const s2 = last(h.sims[0]!.samples);
    expect(second.stop_reason).toBe("end_turn");
    expect(second.content.filter((b) => b.type === "text").map((b) => (b as Anthropic.TextBlock).text).join("")).toBe("\n\nCreated hello.txt."); // the newlines after Qwen3's think block, as vLLM's qwen3 parser leaves them

    const calls = await h.calls(r.rollout_id);
    expect(calls.length).toBe(2);
    expectExactTokens(calls[0]!, calls, s1);
    expectExactTokens(calls[1]!, calls, s2);
    // The record keeps what the harness sent (cache_control too) and what it received.
    expect(decode(requestBodiesOf(calls)[0]!)).toContain("cache_control");
    expect(JSON.parse(decode(calls[0]!.responseBody))).toEqual(JSON.parse(JSON.stringify(first)));
    const up = upstreamRequestsOf(calls)[1]! as any;
    expect(up.return_token_ids).toBe(true);
    expect(up.messages.find((m: any) => m.role === "tool")).toEqual({ role: "tool", tool_call_id: use.id, content: "wrote 3 bytes" });
    expect(up.messages.find((m: any) => m.role === "assistant").tool_calls[0].id).toBe(use.id);
    expect(JSON.stringify(up)).not.toContain("cache_control");
    expect(calls[0]!.session).toEqual({ "x-claude-code-session-id": "cc-session-1" });
    // The second prompt extends the first call's tokens, so it is stored as a delta.
    expect(calls[1]!.prefixOf).toBe(calls[0]!.callId);
  });

  test("streaming (?beta=true): the SDK's MessageStream accumulates the translated events", async () => {
    const { r, anthropic } = await client();
    const events: string[] = [];
    const stream = anthropic.messages.stream({ model: "claude-x", max_tokens: 512, tools, messages: [{ role: "user", content: task }] }, { query: { beta: "true" } });
    stream.on("streamEvent", (e) => events.push(e.type));
    const msg = await stream.finalMessage();
    const sample = last(h.sims[0]!.samples);
    expect(events[0]).toBe("message_start");
    expect(events.at(-1)).toBe("message_stop");
    const use = msg.content.find((b) => b.type === "tool_use") as any;
    expect(use.input).toEqual({ path: "hello.txt", content: "hi\n" });
    expect(msg.stop_reason).toBe("tool_use");
    const calls = await h.calls(r.rollout_id);
    expectExactTokens(calls[0]!, calls, sample);
    expect(calls[0]!.stream).toBe(true);
    const sse = decode(calls[0]!.responseBody);
    expect(sse.startsWith("event: message_start\n")).toBe(true);
    expect(sse).toContain("event: ping\n");
    // The prompt ids of the first upstream chunk give message_start its input tokens up front.
    const start = JSON.parse(sse.split("\n")[1]!.slice("data: ".length));
    expect(start.message.usage.input_tokens).toBe(sample.prompt_token_ids.length);
    expect(sse).toContain('"type":"input_json_delta"');
    expect(sse).not.toContain("token_ids");
  });

  test("a screenshot sent again is stored once per rollout (and segment), decoded; URL images are referenced, not fetched", async () => {
    const { r, anthropic } = await client();
    // A real PNG: the simulator sizes images as the model's processor does.
    const [png] = screenshots(1, 3000, "anthropic-door") as [string];
    const sha = createHash("sha256").update(Buffer.from(png, "base64")).digest("hex");
    const image = { type: "image" as const, source: { type: "base64" as const, media_type: "image/png" as const, data: png } };
    const history: Anthropic.MessageParam[] = [{ role: "user", content: [image, { type: "text", text: "What is on the screen?" }] }];
    const a = await anthropic.messages.create({ model: "claude-x", max_tokens: 64, messages: history });
    history.push({ role: "assistant", content: a.content.filter((b) => b.type === "text") as any }, { role: "user", content: [image, { type: "image", source: { type: "url", url: "http://127.0.0.1:9/never-fetched.png" } }, { type: "text", text: "And now?" }] });
    // The URL goes upstream as a URL, not fetched by the proxy: the simulator, which fetches
    // nothing either (vLLM would fetch it), names it in its 400, and the call is recorded.
    const refused = await anthropic.messages.create({ model: "claude-x", max_tokens: 64, messages: history }).catch((error: Error) => error);
    expect(String(refused)).toContain('cannot size image \\"http://127.0.0.1:9/never-fetched.png\\"');
    const decoded = Buffer.from(png, "base64");
    const copies = (calls: { content: Uint8Array[] }[]) => calls.flatMap((c) => c.content).filter((p) => decoded.equals(p)).length;
    const calls = await h.calls(r.rollout_id);
    // Stored once, as its decoded bytes (request and translated upstream body share it).
    expect(copies(calls)).toBe(1);
    expect(calls.every((c) => !decode(c.requestBody).includes(png) && !decode(c.upstreamRequestBody).includes(png))).toBe(true);
    expect(calls.map((c) => c.blobRefs)).toEqual([[sha], [sha]]);
    const store = createContentStore();
    calls.forEach((c) => requestBodyOf(c, store));
    expect(Buffer.from(store.file(r.rollout_id, sha)!).equals(decoded)).toBe(true);
    // The upstream still receives the image, and the record rebuilds the bodies exactly.
    expect(JSON.stringify(upstreamRequestsOf(calls)[1])).toContain(`data:image/png;base64,${png}`);
    expect(decode(requestBodiesOf(calls)[1]!)).toContain(`"data":"${png}"`);
    // After a restart the proxy writes a new segment, which stores it again once: each segment reads on its own.
    await h.restart();
    await anthropic.messages.create({ model: "claude-x", max_tokens: 64, messages: [{ role: "user", content: [image] }, { role: "assistant", content: "ok" }, { role: "user", content: [image] }] });
    const after = await h.calls(r.rollout_id);
    expect(copies(after)).toBe(2);
    expect(after.at(-1)!.blobRefs).toEqual([sha]);
    expect(decode(requestBodiesOf([after.at(-1)!])[0]!).split(png).length).toBe(3);
  });

  test("count_tokens is answered by the upstream's tokenizer (/tokenize) and equals the sampled prompt", async () => {
    const { r, anthropic } = await client();
    const body = { model: "claude-x", max_tokens: 64, system: "Be brief.", messages: [{ role: "user" as const, content: task }], tools };
    const res = await fetch(`${r.anthropic_base_url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { "x-api-key": r.api_key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-forge-token-count")).toBe("upstream");
    const counted = (await res.json()) as { input_tokens: number };
    // Not a model call: nothing is recorded.
    expect((await h.calls(r.rollout_id)).length).toBe(0);
    const viaSdk = await anthropic.messages.countTokens({ model: "claude-x", system: "Be brief.", messages: body.messages, tools });
    expect(viaSdk.input_tokens).toBe(counted.input_tokens);
    await anthropic.messages.create(body);
    expect(counted.input_tokens).toBe(last(h.sims[0]!.samples).prompt_token_ids.length);
  });

  test("a body that cannot be translated is a 400 naming the field", async () => {
    const { anthropic } = await client();
    const err = await anthropic.messages.create({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: [{ type: "video" } as any] }] }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(String(err.message)).toContain("messages[0].content[0].type");
  });
});
