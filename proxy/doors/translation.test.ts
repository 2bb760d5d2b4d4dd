import { expect, test } from "bun:test";
import { anthropicFrontDoor } from "./anthropic/door.ts";
import { responsesFrontDoor } from "./responses/door.ts";
import { createSseDecoder } from "../../lib/index.ts";
import { chatSseTransform } from "./translated.ts";

const upstream = [
  { id: "c1", choices: [{ delta: { content: "He" } }] },
  { choices: [{ delta: { content: "y" } }] },
  { choices: [{ delta: {}, finish_reason: "stop" }] },
  { choices: [], usage: { prompt_tokens: 4, completion_tokens: 2 } },
];
const wire = (chunks: unknown[], done = true) => `${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("")}${done ? "data: [DONE]\n\n" : ""}`;

async function run(transform: TransformStream<Uint8Array, Uint8Array>, text: string): Promise<{ event?: string; data: string }[]> {
  const bytes = new TextEncoder().encode(text);
  // Deliver in 7-byte pieces: chunk boundaries must not matter.
  const src = new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < bytes.length; i += 7) c.enqueue(bytes.slice(i, i + 7));
      c.close();
    },
  });
  const out = await new Response(src.pipeThrough(transform)).text();
  const d = createSseDecoder();
  return [...d.push(out), ...d.flush()];
}

test("anthropic front door: stream transform, JSON answer, error body", async () => {
  const call = anthropicFrontDoor({ model: "claude-x", max_tokens: 9, stream: true, messages: [{ role: "user", content: "hi" }] });
  expect(call).toMatchObject({ protocol: "anthropic_messages", model: "claude-x", stream: true });
  const events = await run(chatSseTransform(call.streamTranslator()), wire(upstream));
  expect(events.map((e) => e.event)).toEqual(["message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
  const cut = await run(chatSseTransform(call.streamTranslator()), wire(upstream.slice(0, 2), false));
  expect(cut.at(-1)?.event).toBe("error");
  const err = await run(chatSseTransform(call.streamTranslator()), wire([upstream[0], { error: { message: "boom" } }]));
  expect(JSON.parse(err.at(-1)?.data ?? "{}")).toEqual({ type: "error", error: { type: "api_error", message: "boom" } });
  expect(call.fromChatJson({ choices: [{ message: { content: "x" }, finish_reason: "stop" }] })).toMatchObject({ type: "message", model: "claude-x" });
  expect(call.errorBody(429, "slow down")).toEqual({ type: "error", error: { type: "rate_limit_error", message: "slow down" } });
});

test("responses front door: stream transform ends with response.completed; cut → response.failed", async () => {
  const call = responsesFrontDoor({ model: "gpt-x", input: "hi", stream: true });
  const events = await run(chatSseTransform(call.streamTranslator()), wire(upstream));
  expect(events.at(-1)?.event).toBe("response.completed");
  expect(JSON.parse(events.at(-1)?.data ?? "{}").response.output[0].content[0].text).toBe("Hey");
  // A stream that saw its finish_reason but lost [DONE] still completes.
  expect((await run(chatSseTransform(call.streamTranslator()), wire(upstream, false))).at(-1)?.event).toBe("response.completed");
  expect((await run(chatSseTransform(call.streamTranslator()), wire(upstream.slice(0, 1), false))).at(-1)?.event).toBe("response.failed");
  expect(call.errorBody(400, "bad")).toEqual({ error: { message: "bad", type: "invalid_request_error", param: null, code: null } });
});
