import { describe, expect, test } from "bun:test";
import { create, ModelCallSchema, Protocol } from "../schemas/index.ts";
import { createContentStore } from "../records/index.ts";
import { requestMessages, responseMessage } from "./messages.ts";

const enc = (x: unknown) => new TextEncoder().encode(typeof x === "string" ? x : JSON.stringify(x));
const sse = (events: unknown[]) => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n";

describe("messages from recorded bodies", () => {
  test("chat: request messages with tool calls and images; streamed answer with a tool call assembled from deltas", () => {
    const call = create(ModelCallSchema, {
      protocol: Protocol.CHAT,
      stream: true,
      requestBody: enc({
        messages: [
          { role: "system", content: "sys" },
          { role: "user", content: [{ type: "text", text: "look: " }, { type: "image_url", image_url: { url: "data:..." } }] },
          { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "ls", arguments: "{}" } }] },
          { role: "tool", tool_call_id: "c1", content: "a.txt" },
        ],
      }),
      responseBody: enc(
        sse([
          { choices: [{ delta: { role: "assistant", content: "I'll " } }] },
          { choices: [{ delta: { content: "read it" } }] },
          { choices: [{ delta: { tool_calls: [{ index: 0, id: "c2", function: { name: "cat", arguments: '{"p' } }] } }] },
          { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: 'ath":"a.txt"}' } }] } }] },
        ]),
      ),
    });
    expect(requestMessages(call, createContentStore())).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "look: <image>" },
      { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "ls", arguments: "{}" } }] },
      { role: "tool", content: "a.txt", tool_call_id: "c1" },
    ]);
    expect(responseMessage(call)).toEqual({
      role: "assistant",
      content: "I'll read it",
      tool_calls: [{ id: "c2", type: "function", function: { name: "cat", arguments: '{"path":"a.txt"}' } }],
    });
  });

  test("anthropic: system, tool_use and tool_result blocks; streamed answer", () => {
    const call = create(ModelCallSchema, {
      protocol: Protocol.ANTHROPIC_MESSAGES,
      stream: true,
      requestBody: enc({
        system: [{ type: "text", text: "sys" }],
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: [{ type: "text", text: "ok" }, { type: "tool_use", id: "t1", name: "ls", input: { d: "." } }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "a.txt" }] },
        ],
      }),
      responseBody: enc(
        sse([
          { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
          { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "done" } },
          { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "t2", name: "cat", input: {} } },
          { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '{"p":1}' } },
        ]),
      ),
    });
    expect(requestMessages(call, createContentStore())).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "hi" },
      { role: "assistant", content: "ok", tool_calls: [{ id: "t1", type: "function", function: { name: "ls", arguments: '{"d":"."}' } }] },
      { role: "tool", content: "a.txt", tool_call_id: "t1" },
    ]);
    expect(responseMessage(call)).toEqual({ role: "assistant", content: "done", tool_calls: [{ id: "t2", type: "function", function: { name: "cat", arguments: '{"p":1}' } }] });
  });

  test("responses: instructions, function_call items; non-stream output", () => {
    const call = create(ModelCallSchema, {
      protocol: Protocol.RESPONSES,
      requestBody: enc({
        instructions: "sys",
        input: [
          { role: "user", content: [{ type: "input_text", text: "hi" }] },
          { type: "function_call", call_id: "f1", name: "shell", arguments: '{"cmd":"ls"}' },
          { type: "function_call_output", call_id: "f1", output: "a.txt" },
        ],
      }),
      responseBody: enc({ output: [{ type: "message", content: [{ type: "output_text", text: "fine" }] }] }),
    });
    expect(requestMessages(call, createContentStore())).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "hi" },
      { role: "assistant", content: "", tool_calls: [{ id: "f1", type: "function", function: { name: "shell", arguments: '{"cmd":"ls"}' } }] },
      { role: "tool", content: "a.txt", tool_call_id: "f1" },
    ]);
    expect(responseMessage(call)).toEqual({ role: "assistant", content: "fine" });
  });

  test("a body that is not JSON names the call", () => {
    const call = create(ModelCallSchema, { callId: "c-9", rolloutId: "r", protocol: Protocol.CHAT, requestBody: enc("{oops") });
    expect(() => requestMessages(call, createContentStore())).toThrow("call c-9 (rollout r): request_body is not JSON");
  });
});
