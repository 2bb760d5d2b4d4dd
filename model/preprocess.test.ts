import { describe, expect, test } from "bun:test";
import { noPreviousMessages, preprocessChat, PreprocessCache, type ChatRenderRequest, type RawMessages } from "./preprocess.ts";
import { pyDumps } from "./pyjson.ts";
import { QWEN_VL_IMAGES } from "./model.ts";

const dump = (r: ReturnType<typeof preprocessChat>) => pyDumps([r.conversation, new Map([...r.variables]), r.images]);
const PNG = "data:image/png;base64,AAAA";
const request = (extra: unknown[] = []): ChatRenderRequest => ({
  tools: [{ type: "function", function: { name: "ls", parameters: { type: "object", properties: { path: { type: "string" } } } } }],
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: [{ type: "text", text: "Look:" }, { type: "image_url", image_url: { url: PNG } }] },
    { role: "assistant", content: null, tool_calls: [{ id: "a", type: "function", function: { name: "ls", arguments: '{"path": "."}' } }] },
    { role: "tool", tool_call_id: "a", content: "x.txt" },
    ...extra,
  ],
});

describe("preprocessing with a cache of messages", () => {
  test("a call preprocessed with the cache gives what it gives without it, images included, on a hit too", () => {
    const cache = new PreprocessCache();
    const options = { images: QWEN_VL_IMAGES, cache };
    const first = preprocessChat(request(), options);
    const again = preprocessChat(request([{ role: "user", content: [{ type: "image_url", image_url: { url: PNG + "B" } }] }]), options);
    expect(dump(first)).toBe(dump(preprocessChat(request(), { images: QWEN_VL_IMAGES })));
    expect(dump(again)).toBe(dump(preprocessChat(request([{ role: "user", content: [{ type: "image_url", image_url: { url: PNG + "B" } }] }]), { images: QWEN_VL_IMAGES })));
    expect(again.images).toEqual([PNG, PNG + "B"]);
    // The messages and tools a call resends are the same dicts: preprocessed once.
    expect(again.conversation[2]).toBe(first.conversation[2]!);
    expect(again.variables.get("tools")).toBe(first.variables.get("tools")!);
  });

  test("a message that differs in any field is its own entry; errors are not cached", () => {
    const cache = new PreprocessCache();
    const a = preprocessChat({ messages: [{ role: "tool", tool_call_id: "a", content: "x" }] }, { cache });
    const b = preprocessChat({ messages: [{ role: "tool", tool_call_id: "b", content: "x" }] }, { cache });
    expect(a.conversation[0]!.get("tool_call_id")).toBe("a");
    expect(b.conversation[0]!.get("tool_call_id")).toBe("b");
    for (let i = 0; i < 2; i++) expect(() => preprocessChat({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: PNG } }] }] }, { cache })).toThrow(/not a multimodal model/);
  });

  test("the cache is bounded by its key text", () => {
    const cache = new PreprocessCache(1000);
    const first = preprocessChat({ messages: [{ role: "user", content: "a".repeat(600) }] }, { cache });
    preprocessChat({ messages: [{ role: "user", content: "b".repeat(600) }] }, { cache });
    // The first was dropped to make room: preprocessed again, a new dict.
    expect(preprocessChat({ messages: [{ role: "user", content: "a".repeat(600) }] }, { cache }).conversation[0]).not.toBe(first.conversation[0]!);
  });

  test("a message whose sketch another shares (a long text of the same length and ends) is preprocessed afresh, not given the other's dict", () => {
    const cache = new PreprocessCache();
    const text = (middle: string) => `${"a".repeat(40)}${middle}${"z".repeat(40)}`;
    const a = preprocessChat({ messages: [{ role: "tool", tool_call_id: "x", content: text("1") }] }, { cache });
    const b = preprocessChat({ messages: [{ role: "tool", tool_call_id: "x", content: text("2") }] }, { cache });
    expect(b.conversation[0]!.get("content")).toBe(text("2"));
    expect(preprocessChat({ messages: [{ role: "tool", tool_call_id: "x", content: text("2") }] }, { cache }).conversation[0]).toBe(b.conversation[0]!);
    expect(a.conversation[0]!.get("content")).toBe(text("1"));
  });

  test("a request changed after it was preprocessed does not change what the cache gives for its messages", () => {
    const cache = new PreprocessCache();
    const message = { role: "user", content: "before" };
    const first = preprocessChat({ messages: [message] }, { cache });
    message.content = "after";
    expect(preprocessChat({ messages: [{ role: "user", content: "after" }] }, { cache }).conversation[0]!.get("content")).toBe("after");
    expect(preprocessChat({ messages: [{ role: "user", content: "before" }] }, { cache }).conversation[0]).toBe(first.conversation[0]!);
  });

  test("a message the post-processing refuses (a tool call that is no function) is refused on every call, never kept", () => {
    const cache = new PreprocessCache();
    const bad = { messages: [{ role: "user", content: "hi" }, { role: "assistant", content: "", tool_calls: [{ id: "a", type: "custom", custom: { name: "x" } }] }] };
    for (let i = 0; i < 2; i++) expect(() => preprocessChat(bad, { cache })).toThrow(/only support assistant tool_calls of type 'function'/);
  });

  test("with the previous call's messages: a message the same at its place is that call's dict; one that differs at its place is preprocessed afresh; images in order", () => {
    for (const cache of [new PreprocessCache(), undefined]) {
      const previous = noPreviousMessages();
      const options = { images: QWEN_VL_IMAGES, cache, previous };
      const first = preprocessChat(request(), options);
      const extra = [{ role: "user", content: [{ type: "image_url", image_url: { url: PNG + "B" } }] }];
      const next = preprocessChat(request(extra), options);
      expect(dump(next)).toBe(dump(preprocessChat(request(extra), { images: QWEN_VL_IMAGES })));
      expect(next.images).toEqual([PNG, PNG + "B"]);
      for (let i = 0; i < 4; i++) expect(next.conversation[i]).toBe(first.conversation[i]!);
      // History rewritten at message 1: its own dict, the rest as before.
      const rewritten = request(extra);
      (rewritten.messages as unknown[])[1] = { role: "user", content: "No image." };
      const third = preprocessChat(rewritten, options);
      expect(dump(third)).toBe(dump(preprocessChat(rewritten, { images: QWEN_VL_IMAGES })));
      expect(third.images).toEqual([PNG + "B"]);
      expect(third.conversation[0]).toBe(first.conversation[0]!);
      expect(third.conversation[2]).toBe(first.conversation[2]!);
    }
  });

  test("with the previous call's messages: a message with its keys in another order, a key more or less, or an inherited key is preprocessed afresh", () => {
    const previous = noPreviousMessages();
    const call = { role: "assistant", content: "", tool_calls: [{ id: "a", type: "function", function: { name: "ls", arguments: '{"p": 1}' } }] };
    const first = preprocessChat({ messages: [{ role: "user", content: "Go." }, call] }, { previous });
    const again = (second: unknown) => preprocessChat({ messages: [{ role: "user", content: "Go." }, second] }, { previous });
    // The same message as the previous call sent it: that call's dict.
    expect(again(structuredClone(call)).conversation[1]).toBe(first.conversation[1]!);
    const reordered = { content: "", role: "assistant", tool_calls: call.tool_calls };
    expect(again(reordered).conversation[1]).not.toBe(first.conversation[1]!);
    expect(again({ ...call, name: "x" }).conversation[1]!.get("name")).toBe("x");
    const { content: _, ...fewer } = call;
    expect(again(fewer).conversation[1]!.has("content")).toBe(true);
    // A key on the prototype (never JSON's): not the previous dict.
    const inherited = Object.assign(Object.create({ name: "proto" }), call);
    const before = again(call).conversation[1]!;
    const fresh = again(inherited).conversation[1]!;
    expect(fresh).not.toBe(before);
    expect(fresh.get("name")).toBe("proto");
  });

  test("with the previous call's messages: a request changed after it was preprocessed, or a refused message, does not change what the next call gets", () => {
    const previous = noPreviousMessages();
    const message = { role: "user", content: "before" };
    preprocessChat({ messages: [message] }, { previous });
    message.content = "after";
    expect(preprocessChat({ messages: [{ role: "user", content: "after" }] }, { previous }).conversation[0]!.get("content")).toBe("after");
    const bad = { messages: [{ role: "user", content: "after" }, { role: "assistant", content: "", tool_calls: [{ id: "a", type: "custom", custom: { name: "x" } }] }] };
    for (let i = 0; i < 2; i++) expect(() => preprocessChat(bad, { previous, cache: new PreprocessCache() })).toThrow(/only support assistant tool_calls of type 'function'/);
  });

  test("with the previous call's messages and the messages' bytes: resent ones unchanged are that call's dicts without being read; a changed byte, a shorter history or no bytes fall back to comparing them", () => {
    /** A Chat body's bytes with `messages`, its messages parsed from them (fresh objects, as a door's) and their spans. */
    const sent = (messages: unknown[]): { messages: any[]; raw: RawMessages } => {
      const enc = new TextEncoder();
      const parts = messages.map((m) => enc.encode(JSON.stringify(m)));
      const head = enc.encode('{"model":"m","messages":[');
      const bytes = new Uint8Array(head.length + parts.reduce((n, p) => n + p.length + 1, 0) + 1);
      bytes.set(head, 0);
      let at = head.length;
      const spans = parts.map((p, i) => {
        if (i > 0) bytes[at++] = 0x2c;
        bytes.set(p, at);
        at += p.length;
        return { start: at - p.length, end: at };
      });
      bytes.set(enc.encode("]}"), at);
      return { messages: JSON.parse(new TextDecoder().decode(bytes.subarray(0, at + 2))).messages, raw: { bytes, spans } };
    };
    const history = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Go." },
      { role: "assistant", content: "", tool_calls: [{ id: "a", type: "function", function: { name: "ls", arguments: '{"path": "."}' } }] },
      { role: "tool", tool_call_id: "a", content: "x.txt" },
    ];
    const previous = noPreviousMessages();
    const first = sent(history);
    const one = preprocessChat({ messages: first.messages }, { previous, rawMessages: first.raw });
    // The same messages resent, one more after them: the previous dicts, and no property of the resent ones read but the role.
    const second = sent([...history, { role: "user", content: "And then?" }]);
    const reads: string[] = [];
    const watched = second.messages.map((m, i) => (i < history.length ? new Proxy(m, { get: (t, k) => (reads.push(String(k)), t[k]), ownKeys: (t) => (reads.push("keys"), Reflect.ownKeys(t)) }) : m));
    const two = preprocessChat({ messages: watched }, { previous, rawMessages: second.raw });
    for (let i = 0; i < history.length; i++) expect(two.conversation[i]).toBe(one.conversation[i]!);
    expect(new Set(reads)).toEqual(new Set(["role"]));
    expect(two.conversation[4]!.get("content")).toBe("And then?");
    // A message changed to another of the same length: its bytes differ, so it is compared, and preprocessed afresh.
    const third = sent([history[0], { role: "user", content: "No." }, ...history.slice(2), { role: "user", content: "And then?" }]);
    const three = preprocessChat({ messages: third.messages }, { previous, rawMessages: third.raw });
    expect(three.conversation[1]!.get("content")).toBe("No.");
    expect(three.conversation[0]).toBe(one.conversation[0]!);
    expect(three.conversation[2]).toBe(one.conversation[2]!);
    expect(dump(three)).toBe(dump(preprocessChat({ messages: third.messages })));
    // A shorter history (the harness dropped messages): compared one by one.
    const fourth = sent(history.slice(0, 2));
    expect(dump(preprocessChat({ messages: fourth.messages }, { previous, rawMessages: fourth.raw }))).toBe(dump(preprocessChat({ messages: history.slice(0, 2) })));
    // Without bytes (a translated door's request): compared one by one, and the next call with bytes compares too.
    const fifth = preprocessChat({ messages: structuredClone(history) }, { previous });
    expect(fifth.conversation[1]!.get("content")).toBe("Go.");
    expect(previous.digest).toBeUndefined();
    const sixth = sent(history);
    expect(dump(preprocessChat({ messages: sixth.messages }, { previous, rawMessages: sixth.raw }))).toBe(dump(preprocessChat({ messages: history })));
    expect(previous.digest?.count).toBe(history.length);
  });

  test("with the previous call's tools' bytes the same: that call's tool dicts, not read again; other bytes or none: parsed", () => {
    const tool = (name: string) => ({ type: "function", function: { name, description: "d", parameters: { type: "object", properties: {} } } });
    /** A body with `tools`, parsed, with the tools' span (as the Chat door's scan gives it). */
    const sent = (tools: unknown[]) => {
      const text = JSON.stringify({ model: "m", tools, messages: [{ role: "user", content: "Go." }] });
      const bytes = new TextEncoder().encode(text);
      const start = text.indexOf("[");
      const end = text.indexOf(',"messages"');
      const body = JSON.parse(text);
      return { request: { messages: body.messages, tools: body.tools }, raw: { bytes, spans: [{ start: text.indexOf("[", end) + 1, end: text.length - 2 }], tools: { start, end } } as RawMessages };
    };
    const previous = noPreviousMessages();
    const first = sent([tool("ls"), tool("cat")]);
    const one = preprocessChat(first.request, { previous, rawMessages: first.raw });
    const second = sent([tool("ls"), tool("cat")]);
    const reads: string[] = [];
    const watched = second.request.tools.map((t: object) => new Proxy(t, { get: (o: any, k) => (reads.push(String(k)), o[k]) }));
    const two = preprocessChat({ ...second.request, tools: watched }, { previous, rawMessages: second.raw });
    expect(two.variables.get("tools")).toBe(one.variables.get("tools")!);
    expect(reads).toEqual([]);
    // Another tool list: parsed, and kept for the next call.
    const third = sent([tool("ls"), tool("cut")]);
    const three = preprocessChat(third.request, { previous, rawMessages: third.raw });
    expect(pyDumps(three.variables.get("tools")!)).toBe(pyDumps(preprocessChat(third.request).variables.get("tools")!));
    expect(pyDumps(three.variables.get("tools")!)).toContain("cut");
    expect(preprocessChat(sent([tool("ls"), tool("cut")]).request, { previous, rawMessages: sent([tool("ls"), tool("cut")]).raw }).variables.get("tools")).toBe(three.variables.get("tools")!);
    // Without their bytes: parsed, and nothing kept to compare with.
    expect(pyDumps(preprocessChat(first.request, { previous }).variables.get("tools")!)).toBe(pyDumps(one.variables.get("tools")!));
    expect(previous.tools).toBeUndefined();
  });

  test("with the previous call's messages, a message with a tool call's id is the rollout's own: not shared through the cache; the rest are", () => {
    const cache = new PreprocessCache();
    const messages = [
      { role: "user", content: "Go." },
      { role: "assistant", content: "", tool_calls: [{ id: "a", type: "function", function: { name: "ls", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "a", content: "x" },
    ];
    const one = preprocessChat({ messages }, { cache, previous: noPreviousMessages() });
    const two = preprocessChat({ messages }, { cache, previous: noPreviousMessages() });
    expect(two.conversation[0]).toBe(one.conversation[0]!);
    expect(two.conversation[1]).not.toBe(one.conversation[1]!);
    expect(two.conversation[2]).not.toBe(one.conversation[2]!);
    expect(pyDumps(two.conversation)).toBe(pyDumps(one.conversation));
    // Without them (model.prepare outside token-in), the cache serves every message.
    expect(preprocessChat({ messages }, { cache }).conversation[2]).toBe(preprocessChat({ messages }, { cache }).conversation[2]!);
  });
});
