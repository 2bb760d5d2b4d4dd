// Seeded fuzzing of the translators: random valid requests of each protocol translate
// without throwing and keep their tool call ids; random Chat SSE streams translate to
// event sequences that satisfy each protocol's invariants.
import { describe, expect, test } from "bun:test";
import type { ChatChunk } from "./chat-types.ts";
import { anthropicToChatRequest } from "./anthropic/request.ts";
import { chatToAnthropicMessage } from "./anthropic/response.ts";
import { anthropicSse, createAnthropicStreamTranslator } from "./anthropic/stream.ts";
import { responsesToChatRequest } from "./responses/request.ts";
import { chatToResponsesResponse } from "./responses/response.ts";
import { createResponsesStreamTranslator, responsesSse } from "./responses/stream.ts";
import { createSseDecoder } from "../../lib/index.ts";

const CASES = 2000;

/** mulberry32: small, fast, reproducible. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  const text = () => pick(["", "a", "hello world", "naïve ünïcode ✓", '{"json":"in text"}', "line\nbreak", "  spaces  ", "😀 emoji"]) + (next() < 0.3 ? String(int(1000)) : "");
  const id = (prefix: string) => `${prefix}${pick(["", "_", "-", "."])}${Math.floor(next() * 1e9).toString(36)}${pick(["", "ABC", "x-y_z"])}`;
  return { next, int, pick, text, id, bool: (p = 0.5) => next() < p };
}
type Rng = ReturnType<typeof rng>;

const argsOf = (r: Rng) => JSON.stringify(r.pick([{}, { cmd: "ls -la" }, { path: "/tmp/a b", n: 3 }, { nested: { a: [1, 2, { b: "ü" }] } }, { s: 'quote " and \\ backslash' }]));
const img = (r: Rng) => (r.bool() ? { type: "base64", media_type: r.pick(["image/png", "image/jpeg"]), data: r.pick(["aGk=", "iVBORw0KGgo="]) } : { type: "url", url: `https://img.test/${r.int(9)}.png` });

function anthropicRequest(r: Rng) {
  const tools = Array.from({ length: r.int(4) }, (_, i) => ({ name: `tool_${i}`, description: r.text(), input_schema: { type: "object", properties: {} }, ...(r.bool(0.3) ? { cache_control: { type: "ephemeral" } } : {}) }));
  const messages: any[] = [];
  const toolUseIds: string[] = [];
  const toolResultIds: string[] = [];
  const turns = 1 + r.int(6);
  for (let t = 0; t < turns; t++) {
    const user: any[] = [];
    for (const pending of toolUseIds.slice(toolResultIds.length)) {
      toolResultIds.push(pending);
      user.push({ type: "tool_result", tool_use_id: pending, ...(r.bool(0.2) ? { is_error: true } : {}), content: r.bool() ? r.text() : [{ type: "text", text: r.text() }, ...(r.bool(0.2) ? [{ type: "image", source: img(r) }] : [])] });
    }
    for (let k = r.int(3); k >= 0; k--) user.push(r.bool(0.8) ? { type: "text", text: r.text(), ...(r.bool(0.2) ? { cache_control: { type: "ephemeral" } } : {}) } : { type: "image", source: img(r) });
    messages.push({ role: "user", content: r.bool(0.2) && user.every((b) => b.type === "text") ? r.text() : user });
    if (t === turns - 1 && r.bool()) break;
    const asst: any[] = [];
    if (r.bool(0.3)) asst.push({ type: "thinking", thinking: r.text(), signature: "sig" });
    if (r.bool(0.7)) asst.push({ type: "text", text: r.text() });
    for (let k = r.int(3); k > 0; k--) {
      const id = r.id("toolu");
      toolUseIds.push(id);
      asst.push({ type: "tool_use", id, name: tools.length ? r.pick(tools).name : "x", input: JSON.parse(argsOf(r)) });
    }
    if (asst.length === 0) asst.push({ type: "text", text: "" });
    messages.push({ role: "assistant", content: asst });
  }
  const system = r.pick([undefined, r.text(), [{ type: "text", text: r.text(), cache_control: { type: "ephemeral" } }, { type: "text", text: r.text() }]]);
  const body: any = { model: "claude-fuzz", max_tokens: 1 + r.int(4096), messages, stream: r.bool() };
  if (system !== undefined) body.system = system;
  if (tools.length) body.tools = tools;
  if (tools.length && r.bool()) body.tool_choice = r.pick([{ type: "auto" }, { type: "any" }, { type: "tool", name: "tool_0" }, { type: "none" }]);
  if (r.bool()) body.temperature = r.next();
  if (r.bool(0.2)) body.stop_sequences = ["###"];
  return { body, toolUseIds, toolResultIds };
}

function responsesRequest(r: Rng) {
  const tools: any[] = Array.from({ length: r.int(3) }, (_, i) => ({ type: "function", name: `fn_${i}`, parameters: { type: "object" } }));
  const input: any[] = [];
  if (r.bool(0.4)) input.push({ type: "additional_tools", role: "developer", tools: [{ type: "namespace", name: "ns", tools: [{ type: "function", name: "child", parameters: {} }] }, { type: "custom", name: "free" }] });
  if (r.bool()) input.push({ type: "message", role: r.pick(["developer", "system"]), content: [{ type: "input_text", text: r.text() }] });
  const callIds: string[] = [];
  const outputIds: string[] = [];
  for (let t = 1 + r.int(5); t > 0; t--) {
    input.push(r.bool(0.3) ? { role: "user", content: r.text() } : { type: "message", role: "user", content: [{ type: "input_text", text: r.text() }, ...(r.bool(0.2) ? [{ type: "input_image", image_url: r.pick(["data:image/png;base64,aGk=", "https://i.test/a.png"]) }] : [])] });
    if (r.bool(0.3)) input.push({ type: "reasoning", id: r.id("rs"), summary: [{ type: "summary_text", text: r.text() }], ...(r.bool() ? { content: [{ type: "reasoning_text", text: r.text() }] } : {}) });
    if (r.bool(0.6)) input.push({ type: "message", role: "assistant", content: [{ type: "output_text", text: r.text(), annotations: [] }] });
    const calls = Array.from({ length: r.int(3) }, () => r.id("call"));
    for (const c of calls) {
      callIds.push(c);
      const kind = r.int(3);
      if (kind === 0) input.push({ type: "function_call", call_id: c, name: "fn_0", arguments: argsOf(r) });
      else if (kind === 1) input.push({ type: "function_call", call_id: c, namespace: "ns", name: "child", arguments: argsOf(r) });
      else input.push({ type: "custom_tool_call", call_id: c, name: "free", input: r.text() });
    }
    for (const c of calls) {
      outputIds.push(c);
      input.push({ type: r.bool(0.8) ? "function_call_output" : "custom_tool_call_output", call_id: c, output: r.bool() ? r.text() : [{ type: "input_text", text: r.text() }] });
    }
  }
  const body: any = { model: "codex-fuzz", input, store: false, stream: r.bool(), prompt_cache_key: r.id("pck") };
  if (r.bool()) body.instructions = r.text();
  if (tools.length) body.tools = tools;
  if (r.bool()) body.max_output_tokens = 1 + r.int(1000);
  if (r.bool()) body.tool_choice = r.pick(["auto", "required", "none"]);
  if (r.bool()) body.parallel_tool_calls = r.bool();
  return { body, callIds, outputIds };
}

interface Plan {
  reasoning: string;
  text: string;
  tools: { id: string; name: string; args: string }[];
  chunks: ChatChunk[];
  finish: string;
}

/** A realistic chat stream: reasoning/text pieces (possibly alternating), then sequential tool calls with arguments split anywhere. */
function chatStream(r: Rng): Plan {
  const chunks: ChatChunk[] = [];
  let reasoning = "";
  let text = "";
  const split = (s: string) => {
    const parts: string[] = [];
    let i = 0;
    while (i < s.length) {
      const n = 1 + r.int(6);
      parts.push(s.slice(i, i + n));
      i += n;
    }
    return parts;
  };
  for (let k = r.int(8); k > 0; k--) {
    const piece = r.text() || "x";
    if (r.bool(0.4)) {
      reasoning += piece;
      chunks.push({ choices: [{ delta: r.bool() ? { reasoning_content: piece } : { reasoning: piece } }] });
    } else {
      text += piece;
      chunks.push({ choices: [{ delta: { content: piece } }] });
    }
  }
  const tools = Array.from({ length: r.int(4) }, (_, i) => ({ id: r.id("chatcmpl-tool-"), name: `fn_${i}`, args: argsOf(r) }));
  tools.forEach((t, i) => {
    const parts = split(t.args);
    const first = r.bool() ? (parts.shift() ?? "") : "";
    chunks.push({ choices: [{ delta: { tool_calls: [{ index: i, id: t.id, type: "function", function: { name: t.name, arguments: first } }] } }] });
    for (const p of parts) chunks.push({ choices: [{ delta: { tool_calls: [{ index: i, function: { arguments: p } }] } }] });
  });
  const finish = tools.length > 0 ? "tool_calls" : r.pick(["stop", "length"]);
  chunks.push({ choices: [{ delta: {}, finish_reason: finish }] });
  chunks.push({ choices: [], usage: { prompt_tokens: r.int(500), completion_tokens: r.int(500) } });
  if (chunks[0]) chunks[0] = { ...chunks[0], id: r.id("chatcmpl-"), prompt_token_ids: [1, 2, 3] };
  return { reasoning, text, tools, chunks, finish };
}

/** Serialise the chunks as SSE, cut the text at random places and decode it again, as the proxy does. */
function throughSse(r: Rng, chunks: ChatChunk[]): ChatChunk[] {
  const wire = `${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("")}data: [DONE]\n\n`;
  const d = createSseDecoder();
  const out: ChatChunk[] = [];
  let i = 0;
  while (i < wire.length) {
    const n = 1 + r.int(200);
    for (const m of d.push(wire.slice(i, i + n))) if (m.data !== "[DONE]") out.push(JSON.parse(m.data));
    i += n;
  }
  for (const m of d.flush()) if (m.data !== "[DONE]") out.push(JSON.parse(m.data));
  return out;
}

describe("fuzz: requests", () => {
  test(`${CASES} Anthropic requests translate and keep tool ids`, () => {
    for (let seed = 0; seed < CASES; seed++) {
      const r = rng(seed);
      const { body, toolUseIds, toolResultIds } = anthropicRequest(r);
      const chat = anthropicToChatRequest(body);
      const calls = chat.messages.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []);
      const results = chat.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id);
      expect(calls).toEqual(toolUseIds);
      expect(results).toEqual(toolResultIds);
      // Every tool message directly follows its call's assistant message or another tool message.
      chat.messages.forEach((m, i) => {
        if (m.role === "tool") expect(["assistant", "tool"]).toContain(chat.messages[i - 1]?.role ?? "");
      });
      expect(JSON.stringify(chat)).not.toContain("cache_control");
    }
  });

  test(`${CASES} Responses requests translate and keep call ids`, () => {
    for (let seed = 0; seed < CASES; seed++) {
      const r = rng(seed + 1_000_000);
      const { body, callIds, outputIds } = responsesRequest(r);
      const { request } = responsesToChatRequest(body);
      expect(request.messages.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? [])).toEqual(callIds);
      expect(request.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id)).toEqual(outputIds);
      expect(request.prompt_cache_key).toBeUndefined();
    }
  });

  test(`${CASES} Chat responses translate back with tool ids and arguments intact`, () => {
    for (let seed = 0; seed < CASES; seed++) {
      const r = rng(seed + 2_000_000);
      const tools = Array.from({ length: r.int(4) }, (_, i) => ({ id: r.id("call"), type: "function" as const, function: { name: `fn_${i}`, arguments: argsOf(r) } }));
      const chat = { id: r.id("c"), choices: [{ message: { content: r.text(), reasoning_content: r.bool() ? r.text() : null, tool_calls: tools }, finish_reason: tools.length ? "tool_calls" : "stop" }] };
      const msg = chatToAnthropicMessage(chat, { model: "m" });
      expect(msg.content.filter((b) => b.type === "tool_use").map((b) => [b.id, JSON.stringify(b.input)])).toEqual(tools.map((t) => [t.id, t.function.arguments]));
      const res = chatToResponsesResponse(chat, { request: { model: "m" }, catalogue: { tools: [], origins: new Map(), dropped: [] } });
      expect(res.output.filter((o: any) => o.type === "function_call").map((o: any) => [o.call_id, o.arguments])).toEqual(tools.map((t) => [t.id, t.function.arguments]));
    }
  });
});

describe("fuzz: streams", () => {
  test(`${CASES} chat streams → Anthropic events satisfy the protocol invariants`, () => {
    for (let seed = 0; seed < CASES; seed++) {
      const r = rng(seed + 3_000_000);
      const plan = chatStream(r);
      const t = createAnthropicStreamTranslator({ model: "m" });
      const events = [...throughSse(r, plan.chunks).flatMap((c) => t.push(c)), ...t.finish()];
      expect(events[0]?.type).toBe("message_start");
      expect(events.at(-1)?.type).toBe("message_stop");
      let open: number | undefined;
      let next = 0;
      const blocks: any[] = [];
      for (const e of events) {
        anthropicSse(e); // serialisable
        if (e.type === "content_block_start") {
          expect(open).toBeUndefined();
          expect(e.index).toBe(next++);
          open = e.index as number;
          blocks.push({ ...(e.content_block as object), json: "" });
        } else if (e.type === "content_block_delta") {
          expect(e.index).toBe(open as number);
          const d = e.delta as any;
          const b = blocks[e.index as number];
          if (d.type === "text_delta") b.text += d.text;
          else if (d.type === "thinking_delta") b.thinking += d.thinking;
          else if (d.type === "input_json_delta") b.json += d.partial_json;
        } else if (e.type === "content_block_stop") {
          expect(e.index).toBe(open as number);
          open = undefined;
        }
      }
      expect(open).toBeUndefined();
      expect(blocks.filter((b) => b.type === "text").map((b) => b.text).join("")).toBe(plan.text);
      expect(blocks.filter((b) => b.type === "thinking").map((b) => b.thinking).join("")).toBe(plan.reasoning);
      expect(blocks.filter((b) => b.type === "tool_use").map((b) => [b.id, b.name, b.json])).toEqual(plan.tools.map((x) => [x.id, x.name, x.args]));
      const delta = events.at(-2) as any;
      expect(delta.delta.stop_reason).toBe(plan.finish === "length" ? "max_tokens" : plan.finish === "tool_calls" ? "tool_use" : "end_turn");
    }
  });

  test(`${CASES} chat streams → Responses events satisfy the protocol invariants`, () => {
    for (let seed = 0; seed < CASES; seed++) {
      const r = rng(seed + 4_000_000);
      const plan = chatStream(r);
      const t = createResponsesStreamTranslator({ request: { model: "m" }, catalogue: { tools: [], origins: new Map(), dropped: [] }, reasoningAs: r.bool() ? "summary" : "reasoning_text" });
      const events = [...throughSse(r, plan.chunks).flatMap((c) => t.push(c)), ...t.finish()];
      expect(events.slice(0, 2).map((e) => e.type)).toEqual(["response.created", "response.in_progress"]);
      let last = -1;
      let openIndex: number | undefined;
      let nextIndex = 0;
      const args = new Map<number, string>();
      let text = "";
      let reasoning = "";
      for (const e of events) {
        responsesSse(e);
        expect(e.sequence_number).toBeGreaterThan(last);
        last = e.sequence_number;
        if (e.type === "response.output_item.added") {
          expect(openIndex).toBeUndefined();
          expect(e.output_index).toBe(nextIndex++);
          openIndex = e.output_index as number;
        } else if (e.type === "response.output_item.done") {
          expect(e.output_index).toBe(openIndex as number);
          openIndex = undefined;
        } else if ("output_index" in e) {
          expect(e.output_index).toBe(openIndex as number);
        }
        if (e.type === "response.function_call_arguments.delta") args.set(e.output_index as number, (args.get(e.output_index as number) ?? "") + e.delta);
        if (e.type === "response.function_call_arguments.done") expect(e.arguments).toBe(args.get(e.output_index as number) ?? "");
        if (e.type === "response.output_text.delta") text += e.delta;
        if (e.type === "response.reasoning_text.delta" || e.type === "response.reasoning_summary_text.delta") reasoning += e.delta;
      }
      expect(openIndex).toBeUndefined();
      expect(text).toBe(plan.text);
      expect(reasoning).toBe(plan.reasoning);
      const final = events.at(-1) as any;
      expect(final.type).toBe(plan.finish === "length" ? "response.incomplete" : "response.completed");
      const calls = final.response.output.filter((o: any) => o.type === "function_call");
      expect(calls.map((c: any) => [c.call_id, c.name, c.arguments])).toEqual(plan.tools.map((x) => [x.id, x.name, x.args]));
      expect([...args.values()]).toEqual(plan.tools.filter((x) => x.args !== "").map((x) => x.args));
    }
  });
});
