import { describe, expect, test } from "bun:test";
import { anthropicToChatRequest } from "./request.ts";
import { chatToAnthropicMessage } from "./response.ts";
import { createAnthropicStreamTranslator } from "./stream.ts";
import { TranslationError } from "../chat-types.ts";

describe("anthropicToChatRequest", () => {
  test("system blocks, cache_control ignored, sampling fields, tools, tool_choice", () => {
    const chat = anthropicToChatRequest({
      model: "claude-sonnet",
      max_tokens: 100,
      temperature: 0.5,
      top_p: 0.9,
      stop_sequences: ["###"],
      stream: true,
      metadata: { user_id: "u1" },
      system: [
        { type: "text", text: "A", cache_control: { type: "ephemeral" } },
        { type: "text", text: "B" },
      ],
      tools: [
        { name: "bash", description: "run", input_schema: { type: "object", properties: { cmd: { type: "string" } } }, cache_control: { type: "ephemeral" } },
        { type: "web_search_20250305", name: "web_search" },
      ],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      messages: [{ role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }] }],
    });
    expect(chat.messages).toEqual([
      { role: "system", content: "A\n\nB" },
      { role: "user", content: "hi" },
    ]);
    expect(chat).toMatchObject({ model: "claude-sonnet", max_tokens: 100, temperature: 0.5, top_p: 0.9, stop: ["###"], stream: true, user: "u1", tool_choice: "required", parallel_tool_calls: false });
    expect(chat.stream_options).toEqual({ include_usage: true });
    expect(chat.tools).toEqual([{ type: "function", function: { name: "bash", description: "run", parameters: { type: "object", properties: { cmd: { type: "string" } } } } }]);
    expect(JSON.stringify(chat)).not.toContain("cache_control");
  });

  test("tool_use, tool_result (string, blocks, image), thinking kept or dropped, ids exact", () => {
    const body = {
      model: "m",
      max_tokens: 10,
      messages: [
        { role: "user", content: "list files" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "need ls", signature: "sig" },
            { type: "text", text: "Running." },
            { type: "tool_use", id: "toolu_01ABC", name: "bash", input: { cmd: "ls" } },
            { type: "tool_use", id: "toolu_02DEF", name: "read", input: {} },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_01ABC", content: "a.txt" },
            { type: "tool_result", tool_use_id: "toolu_02DEF", is_error: true, content: [{ type: "text", text: "nope" }, { type: "image", source: { type: "base64", media_type: "image/png", data: "aGk=" } }] },
            { type: "text", text: "go on" },
          ],
        },
      ],
    };
    const chat = anthropicToChatRequest(body);
    expect(chat.messages[1]).toEqual({
      role: "assistant",
      content: "Running.",
      reasoning_content: "need ls",
      tool_calls: [
        { id: "toolu_01ABC", type: "function", function: { name: "bash", arguments: '{"cmd":"ls"}' } },
        { id: "toolu_02DEF", type: "function", function: { name: "read", arguments: "{}" } },
      ],
    });
    expect(chat.messages[2]).toEqual({ role: "tool", tool_call_id: "toolu_01ABC", content: "a.txt" });
    expect(chat.messages[3]).toEqual({ role: "tool", tool_call_id: "toolu_02DEF", content: "nope" });
    expect(chat.messages[4]).toEqual({
      role: "user",
      content: [
        { type: "image_url", image_url: { url: "data:image/png;base64,aGk=" } },
        { type: "text", text: "go on" },
      ],
    });
    const dropped = anthropicToChatRequest(body, { thinking: "drop" });
    expect(dropped.messages[1]?.reasoning_content).toBeUndefined();
  });

  test("url images and clear errors", () => {
    const chat = anthropicToChatRequest({ model: "m", messages: [{ role: "user", content: [{ type: "image", source: { type: "url", url: "https://x/y.png" } }] }] });
    expect(chat.messages[0]?.content).toEqual([{ type: "image_url", image_url: { url: "https://x/y.png" } }]);
    expect(() => anthropicToChatRequest({ model: "m" })).toThrow(TranslationError);
    expect(() => anthropicToChatRequest({ model: "m", messages: [{ role: "user", content: [{ type: "video" }] }] })).toThrow("messages[0].content[0].type");
  });
});

describe("chatToAnthropicMessage", () => {
  test("text, reasoning, tool calls with exact ids, stop reasons, usage", () => {
    const msg = chatToAnthropicMessage(
      {
        id: "chatcmpl-1",
        choices: [
          {
            message: { content: "ok", reasoning_content: "hmm", tool_calls: [{ id: "chatcmpl-tool-9", type: "function", function: { name: "bash", arguments: '{"cmd":"ls"}' } }] },
            finish_reason: "tool_calls",
          },
        ],
        usage: { prompt_tokens: 12, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 2 } },
      },
      { model: "claude-x" },
    );
    expect(msg.id).toBe("msg_chatcmpl-1");
    expect(msg.model).toBe("claude-x");
    expect(msg.content).toEqual([
      { type: "thinking", thinking: "hmm", signature: "" },
      { type: "text", text: "ok", citations: null },
      { type: "tool_use", id: "chatcmpl-tool-9", name: "bash", input: { cmd: "ls" } },
    ]);
    expect(msg.stop_reason).toBe("tool_use");
    expect(msg.usage).toMatchObject({ input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 2 });
    const len = chatToAnthropicMessage({ choices: [{ message: { content: "x" }, finish_reason: "length" }] }, { model: "m" });
    expect(len.stop_reason).toBe("max_tokens");
    const seq = chatToAnthropicMessage({ choices: [{ message: { content: "x" }, finish_reason: "stop", stop_reason: "###" }] }, { model: "m", stopSequences: ["###"] });
    expect([seq.stop_reason, seq.stop_sequence]).toEqual(["stop_sequence", "###"]);
    const end = chatToAnthropicMessage({ choices: [{ message: { content: "x" }, finish_reason: "stop" }] }, { model: "m" });
    expect(end.stop_reason).toBe("end_turn");
  });
});

describe("createAnthropicStreamTranslator", () => {
  test("interleaved reasoning, text and two tool calls get sequential indices", () => {
    const t = createAnthropicStreamTranslator({ model: "claude-x" });
    const events = [
      ...t.push({ id: "c1", prompt_token_ids: [1, 2, 3], choices: [{ delta: { role: "assistant", reasoning_content: "think" } }] }),
      ...t.push({ choices: [{ delta: { content: "Hel" } }] }),
      ...t.push({ choices: [{ delta: { content: "lo" } }] }),
      ...t.push({ choices: [{ delta: { tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "bash", arguments: "" } }] } }] }),
      ...t.push({ choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '{"cmd":' } }] } }] }),
      ...t.push({ choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '"ls"}' } }] } }] }),
      ...t.push({ choices: [{ delta: { tool_calls: [{ index: 1, id: "call_b", function: { name: "read", arguments: "{}" } }] } }] }),
      ...t.push({ choices: [{ delta: {}, finish_reason: "tool_calls" }] }),
      ...t.push({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 7 } }),
      ...t.finish(),
    ];
    expect(events.map((e) => `${e.type}${"index" in e ? `:${e.index}` : ""}`)).toEqual([
      "message_start",
      "ping",
      "content_block_start:0",
      "content_block_delta:0",
      "content_block_stop:0",
      "content_block_start:1",
      "content_block_delta:1",
      "content_block_delta:1",
      "content_block_stop:1",
      "content_block_start:2",
      "content_block_delta:2",
      "content_block_delta:2",
      "content_block_stop:2",
      "content_block_start:3",
      "content_block_delta:3",
      "content_block_stop:3",
      "message_delta",
      "message_stop",
    ]);
    expect((events[0] as any).message.usage.input_tokens).toBe(3);
    expect((events[9] as any).content_block).toEqual({ type: "tool_use", id: "call_a", name: "bash", input: {} });
    expect((events[10] as any).delta).toEqual({ type: "input_json_delta", partial_json: '{"cmd":' });
    expect((events[16] as any).delta.stop_reason).toBe("tool_use");
    expect((events[16] as any).usage).toMatchObject({ input_tokens: 3, output_tokens: 7 });
  });

  test("fail closes the open block and emits an error event", () => {
    const t = createAnthropicStreamTranslator({ model: "m" });
    t.push({ choices: [{ delta: { content: "x" } }] });
    const events = t.fail("upstream went away", "overloaded_error");
    expect(events).toEqual([{ type: "content_block_stop", index: 0 }, { type: "error", error: { type: "overloaded_error", message: "upstream went away" } }]);
    expect(t.finish()).toEqual([]);
  });
});
