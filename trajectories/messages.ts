/**
 * Chat messages rebuilt from a call's recorded request and response bodies, in OpenAI chat shape:
 * the `prompt` column veRL's RLHFDataset reads and the `messages` column of the SFT export.
 */
import { parseSseJson } from "../lib/index.ts";
import { requestBodyOf, type ContentStore } from "../records/index.ts";
import { Protocol, type ModelCall } from "../schemas/index.ts";

export type ToolCall = { id: string; type: "function"; function: { name: string; arguments: string } };
export type ChatMessage = { role: string; content: string; tool_calls?: ToolCall[]; tool_call_id?: string; name?: string };

type Json = any; // request bodies are harness JSON: read defensively

const decoder = new TextDecoder();

function parseJson(bytes: Uint8Array, what: string, call: ModelCall): Json {
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch {
    throw new Error(`call ${call.callId} (rollout ${call.rolloutId}): ${what} is not JSON`);
  }
}

/** Text of a content field: a string, or the text parts of a parts array (images become "<image>", as veRL's dataset marks them). */
function textOf(content: Json): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content
    .map((part: Json) => {
      if (typeof part === "string") return part;
      if (part?.type === "text" || part?.type === "input_text" || part?.type === "output_text") return part.text ?? "";
      if (part?.type === "image_url" || part?.type === "image" || part?.type === "input_image") return "<image>";
      if (part?.type === "tool_result") return textOf(part.content);
      return "";
    })
    .join("");
}

function chatRequest(body: Json): ChatMessage[] {
  return (body.messages ?? []).map((m: Json) => {
    const out: ChatMessage = { role: String(m.role ?? "user"), content: textOf(m.content) };
    if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0)
      out.tool_calls = m.tool_calls.map((t: Json) => ({
        id: String(t.id ?? ""),
        type: "function",
        function: { name: String(t.function?.name ?? ""), arguments: String(t.function?.arguments ?? "") },
      }));
    if (m.tool_call_id) out.tool_call_id = String(m.tool_call_id);
    if (m.name) out.name = String(m.name);
    return out;
  });
}

function anthropicRequest(body: Json): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (body.system) out.push({ role: "system", content: textOf(body.system) });
  for (const m of body.messages ?? []) {
    if (typeof m.content === "string") {
      out.push({ role: m.role, content: m.content });
      continue;
    }
    const blocks: Json[] = m.content ?? [];
    for (const r of blocks.filter((b) => b.type === "tool_result"))
      out.push({ role: "tool", content: textOf(r.content), tool_call_id: String(r.tool_use_id ?? "") });
    const rest = blocks.filter((b) => b.type !== "tool_result");
    const uses = rest.filter((b) => b.type === "tool_use");
    if (rest.length === 0) continue;
    const message: ChatMessage = { role: m.role, content: textOf(rest.filter((b) => b.type !== "tool_use")) };
    if (uses.length > 0)
      message.tool_calls = uses.map((u) => ({ id: String(u.id), type: "function", function: { name: String(u.name), arguments: JSON.stringify(u.input ?? {}) } }));
    out.push(message);
  }
  return out;
}

function responsesRequest(body: Json): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (body.instructions) out.push({ role: "system", content: String(body.instructions) });
  if (typeof body.input === "string") return [...out, { role: "user", content: body.input }];
  for (const item of body.input ?? []) {
    if (item.type === "function_call") {
      const last = out.at(-1);
      const tc: ToolCall = { id: String(item.call_id ?? item.id ?? ""), type: "function", function: { name: String(item.name), arguments: String(item.arguments ?? "") } };
      if (last?.role === "assistant") (last.tool_calls ??= []).push(tc);
      else out.push({ role: "assistant", content: "", tool_calls: [tc] });
    } else if (item.type === "function_call_output") {
      out.push({ role: "tool", content: textOf(item.output), tool_call_id: String(item.call_id ?? "") });
    } else if (item.role) {
      out.push({ role: item.role === "developer" ? "system" : String(item.role), content: textOf(item.content) });
    }
  }
  return out;
}

/**
 * The conversation a call sent, as chat messages. `content` is the store of the call's rollout
 * (`CollectedRollout.content`), which rebuilds a body stored as references.
 *
 * @example
 * requestMessages(call, collected.content); // [{ role: "system", content: "..." }, { role: "user", content: "..." }]
 */
export function requestMessages(call: ModelCall, content: ContentStore): ChatMessage[] {
  const messages = requestMessagesOfBody(call.protocol, parseJson(requestBodyOf(call, content), "request_body", call));
  if (!messages) throw new Error(`call ${call.callId}: protocol ${call.protocol} has no message form`);
  return messages;
}

/**
 * The conversation of an already parsed request body of `protocol`, or undefined for a protocol
 * without a message form.
 *
 * @example
 * requestMessagesOfBody(Protocol.CHAT, { messages: [{ role: "user", content: "hi" }] }); // [{ role: "user", content: "hi" }]
 */
export function requestMessagesOfBody(protocol: Protocol, body: Json): ChatMessage[] | undefined {
  switch (protocol) {
    case Protocol.CHAT:
      return chatRequest(body);
    case Protocol.ANTHROPIC_MESSAGES:
      return anthropicRequest(body);
    case Protocol.RESPONSES:
      return responsesRequest(body);
    case Protocol.COMPLETIONS:
      return [{ role: "user", content: Array.isArray(body.prompt) ? body.prompt.join("") : String(body.prompt ?? "") }];
    default:
      return undefined;
  }
}

/** The JSON events of an SSE body (`[DONE]` skipped). */
function sseEvents(text: string): Json[] {
  return parseSseJson(text).map((e) => e.data);
}

function chatResponse(call: ModelCall): ChatMessage {
  const text = decoder.decode(call.responseBody);
  if (!call.stream) {
    const m = JSON.parse(text).choices?.[0]?.message ?? {};
    return chatRequest({ messages: [{ ...m, role: "assistant" }] })[0]!;
  }
  let content = "";
  const calls: ToolCall[] = [];
  for (const event of sseEvents(text)) {
    const delta = event.choices?.[0]?.delta;
    if (!delta) continue;
    if (typeof delta.content === "string") content += delta.content;
    for (const t of delta.tool_calls ?? []) {
      const i = t.index ?? calls.length;
      const tc = (calls[i] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
      if (t.id) tc.id = t.id;
      if (t.function?.name) tc.function.name += t.function.name;
      if (t.function?.arguments) tc.function.arguments += t.function.arguments;
    }
  }
  const message: ChatMessage = { role: "assistant", content };
  if (calls.length > 0) message.tool_calls = calls.filter(Boolean);
  return message;
}

function anthropicResponse(call: ModelCall): ChatMessage {
  const text = decoder.decode(call.responseBody);
  let blocks: Json[] = [];
  if (!call.stream) blocks = JSON.parse(text).content ?? [];
  else {
    for (const e of sseEvents(text)) {
      if (e.type === "content_block_start") blocks[e.index] = { ...e.content_block, _json: "" };
      else if (e.type === "content_block_delta") {
        const b = blocks[e.index];
        if (!b) continue;
        if (e.delta?.type === "text_delta") b.text = (b.text ?? "") + e.delta.text;
        if (e.delta?.type === "input_json_delta") b._json += e.delta.partial_json;
      }
    }
    blocks = blocks.filter(Boolean).map((b) => (b.type === "tool_use" && b._json ? { ...b, input: JSON.parse(b._json) } : b));
  }
  return anthropicRequest({ messages: [{ role: "assistant", content: blocks }] })[0] ?? { role: "assistant", content: "" };
}

function responsesResponse(call: ModelCall): ChatMessage {
  const text = decoder.decode(call.responseBody);
  let output: Json[] = [];
  if (!call.stream) output = JSON.parse(text).output ?? [];
  else for (const e of sseEvents(text)) if (e.type === "response.completed") output = e.response?.output ?? [];
  const message: ChatMessage = { role: "assistant", content: "" };
  for (const item of output) {
    if (item.type === "message") message.content += textOf(item.content);
    if (item.type === "function_call")
      (message.tool_calls ??= []).push({ id: String(item.call_id ?? item.id), type: "function", function: { name: item.name, arguments: item.arguments ?? "" } });
  }
  return message;
}

/**
 * The assistant message a call answered with, from the recorded response body (JSON or SSE).
 *
 * @example
 * responseMessage(call); // { role: "assistant", content: "...", tool_calls: [...] }
 */
export function responseMessage(call: ModelCall): ChatMessage {
  switch (call.protocol) {
    case Protocol.CHAT:
      return chatResponse(call);
    case Protocol.ANTHROPIC_MESSAGES:
      return anthropicResponse(call);
    case Protocol.RESPONSES:
      return responsesResponse(call);
    case Protocol.COMPLETIONS: {
      const text = decoder.decode(call.responseBody);
      const content = call.stream ? sseEvents(text).map((e) => e.choices?.[0]?.text ?? "").join("") : (JSON.parse(text).choices?.[0]?.text ?? "");
      return { role: "assistant", content };
    }
    default:
      throw new Error(`call ${call.callId}: protocol ${call.protocol} has no message form`);
  }
}
