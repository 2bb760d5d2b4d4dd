import { describe, expect, test } from "bun:test";
import { TranslationError } from "../chat-types.ts";
import { responsesToChatRequest } from "./request.ts";
import { chatToResponsesResponse } from "./response.ts";
import { createResponsesStreamTranslator } from "./stream.ts";

const codexLike = {
  model: "gpt-5-codex",
  instructions: "You are Codex.",
  store: false,
  stream: true,
  prompt_cache_key: "thread-123",
  parallel_tool_calls: false,
  tool_choice: "auto",
  reasoning: { effort: "medium", summary: "auto" },
  tools: [
    { type: "function", name: "shell", description: "Run a command", strict: false, parameters: { type: "object", properties: { command: { type: "array", items: { type: "string" } } } } },
    { type: "web_search" },
  ],
  input: [
    { type: "additional_tools", role: "developer", tools: [{ type: "namespace", name: "collab", tools: [{ type: "function", name: "send", parameters: { type: "object" } }] }, { type: "custom", name: "apply_patch", description: "Patch files" }] },
    { type: "message", role: "developer", content: [{ type: "input_text", text: "sandbox: none" }] },
    { type: "message", role: "user", content: [{ type: "input_text", text: "look" }, { type: "input_image", image_url: "data:image/png;base64,aGk=", detail: "high" }] },
    { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "sum" }], content: [{ type: "reasoning_text", text: "raw" }], encrypted_content: null },
    { type: "message", role: "assistant", content: [{ type: "output_text", text: "Checking." }] },
    { type: "function_call", call_id: "call_XYZ", name: "shell", arguments: '{"command":["ls"]}' },
    { type: "function_call", call_id: "call_NS", namespace: "collab", name: "send", arguments: "{}" },
    { type: "function_call_output", call_id: "call_XYZ", output: "a.txt" },
    { type: "function_call_output", call_id: "call_NS", output: [{ type: "input_text", text: "sent" }, { type: "input_image", image_url: "https://x/s.png" }] },
    { type: "custom_tool_call", call_id: "call_P", name: "apply_patch", input: "*** Begin Patch" },
    { type: "custom_tool_call_output", call_id: "call_P", output: "done" },
  ],
};

describe("responsesToChatRequest", () => {
  test("Codex-shaped request: instructions, developer role, items, additional_tools, ids exact", () => {
    const { request, catalogue } = responsesToChatRequest(codexLike);
    expect(request.messages).toEqual([
      { role: "system", content: "You are Codex." },
      { role: "system", content: "sandbox: none" },
      { role: "user", content: [{ type: "text", text: "look" }, { type: "image_url", image_url: { url: "data:image/png;base64,aGk=", detail: "high" } }] },
      {
        role: "assistant",
        content: "Checking.",
        reasoning_content: "raw",
        tool_calls: [
          { id: "call_XYZ", type: "function", function: { name: "shell", arguments: '{"command":["ls"]}' } },
          { id: "call_NS", type: "function", function: { name: "collab__send", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "call_XYZ", content: "a.txt" },
      { role: "tool", tool_call_id: "call_NS", content: "sent" },
      { role: "user", content: [{ type: "image_url", image_url: { url: "https://x/s.png" } }] },
      { role: "assistant", content: null, tool_calls: [{ id: "call_P", type: "function", function: { name: "apply_patch", arguments: '{"input":"*** Begin Patch"}' } }] },
      { role: "tool", tool_call_id: "call_P", content: "done" },
    ]);
    expect(request.tools?.map((t) => t.function.name)).toEqual(["shell", "collab__send", "apply_patch"]);
    expect(catalogue.dropped).toEqual(["web_search"]);
    expect(catalogue.origins.get("collab__send")).toEqual({ kind: "function", name: "send", namespace: "collab" });
    expect(request).toMatchObject({ stream: true, tool_choice: "auto", parallel_tool_calls: false });
    // prompt_cache_key and store stay in the record only; vLLM does not know them.
    expect(request.prompt_cache_key).toBeUndefined();
    expect(request.store).toBeUndefined();
  });

  test("string input, max_output_tokens, errors name the field", () => {
    const { request } = responsesToChatRequest({ model: "m", input: "hi", max_output_tokens: 5, temperature: 0 });
    expect(request).toMatchObject({ messages: [{ role: "user", content: "hi" }], max_tokens: 5, temperature: 0 });
    expect(() => responsesToChatRequest({ model: "m", input: [{ type: "message", role: "robot", content: "x" }] })).toThrow("input[0].role");
    expect(() => responsesToChatRequest({ model: "m", previous_response_id: "resp_1", input: "x" })).toThrow(TranslationError);
    expect(() => responsesToChatRequest({ model: "m", input: "x", tools: [null] })).toThrow("tools[0]: expected a tool object, got null");
    expect(() => responsesToChatRequest({ model: "m", input: [{ type: "additional_tools", tools: ["shell"] }] })).toThrow('input[0].tools[0]: expected a tool object, got "shell"');
    const schema = { type: "object", properties: { ok: { type: "boolean" } } };
    expect(responsesToChatRequest({ model: "m", input: "x", text: { format: { type: "json_schema", name: "out", schema, strict: true } } }).request.response_format).toEqual({ type: "json_schema", json_schema: { name: "out", schema, strict: true } });
  });
});

describe("chatToResponsesResponse", () => {
  test("message, reasoning, function and custom calls; length → incomplete", () => {
    const { catalogue } = responsesToChatRequest(codexLike);
    const r = chatToResponsesResponse(
      {
        id: "c9",
        choices: [
          {
            message: {
              content: "Done",
              reasoning_content: "why",
              tool_calls: [
                { id: "call_1", type: "function", function: { name: "collab__send", arguments: "{}" } },
                { id: "call_2", type: "function", function: { name: "apply_patch", arguments: '{"input":"P"}' } },
              ],
            },
            finish_reason: "tool_calls",
          },
        ],
        usage: { prompt_tokens: 20, completion_tokens: 4 },
      },
      { request: codexLike, catalogue },
    );
    expect(r.status).toBe("completed");
    expect(r.prompt_cache_key).toBe("thread-123");
    expect(r.output.map((o: any) => o.type)).toEqual(["reasoning", "message", "function_call", "custom_tool_call"]);
    expect(r.output[2]).toMatchObject({ call_id: "call_1", name: "send", namespace: "collab", arguments: "{}" });
    expect(r.output[3]).toMatchObject({ call_id: "call_2", name: "apply_patch", input: "P" });
    expect(r.usage).toMatchObject({ input_tokens: 20, output_tokens: 4, total_tokens: 24 });
    const cut = chatToResponsesResponse({ choices: [{ message: { content: "x" }, finish_reason: "length" }] }, { request: { model: "m" }, catalogue });
    expect(cut.status).toBe("incomplete");
    expect(cut.incomplete_details).toEqual({ reason: "max_output_tokens" });
  });
});

describe("createResponsesStreamTranslator", () => {
  test("event order, sequence numbers, argument deltas as they arrive", () => {
    const t = createResponsesStreamTranslator({ request: { model: "m" }, catalogue: { tools: [], origins: new Map(), dropped: [] } });
    const events = [
      ...t.push({ id: "c1", choices: [{ delta: { reasoning_content: "r" } }] }),
      ...t.push({ choices: [{ delta: { content: "Hi" } }] }),
      ...t.push({ choices: [{ delta: { tool_calls: [{ index: 0, id: "call_Q", function: { name: "shell", arguments: '{"a"' } }] } }] }),
      ...t.push({ choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: ":1}" } }] } }] }),
      ...t.push({ choices: [{ delta: {}, finish_reason: "tool_calls" }], usage: { prompt_tokens: 3, completion_tokens: 4 } }),
      ...t.finish(),
    ];
    expect(events.map((e) => e.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.reasoning_text.delta",
      "response.reasoning_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const done = events.at(-1) as any;
    expect(done.response.output.map((o: any) => o.type)).toEqual(["reasoning", "message", "function_call"]);
    expect(done.response.output[2]).toMatchObject({ call_id: "call_Q", arguments: '{"a":1}', status: "completed" });
    expect(done.response.usage.input_tokens).toBe(3);
  });

  test("summary mode, length → response.incomplete, fail → response.failed", () => {
    const ctx = { request: { model: "m" }, catalogue: { tools: [], origins: new Map(), dropped: [] }, reasoningAs: "summary" as const };
    const t = createResponsesStreamTranslator(ctx);
    const a = [...t.push({ choices: [{ delta: { reasoning: "r" } }] }), ...t.push({ choices: [{ delta: {}, finish_reason: "length" }] }), ...t.finish()];
    expect(a.map((e) => e.type)).toContain("response.reasoning_summary_text.delta");
    expect(a.at(-1)?.type).toBe("response.incomplete");
    const f = createResponsesStreamTranslator(ctx);
    f.push({ choices: [{ delta: { content: "x" } }] });
    const failed = f.fail("boom");
    expect(failed.at(-1)).toMatchObject({ type: "response.failed", response: { status: "failed", error: { code: "server_error", message: "boom" } } });
  });
});
