import { describe, expect, test } from "bun:test";
import { ProxyHttpError } from "../errors.ts";
import { HIDDEN_MIN_BYTES, parseHidingStrings, rawMessagesOf, restoreHidden } from "./hidden-strings.ts";

const encoder = new TextEncoder();
const long = (tag: string) => `${tag} é\\"${"x".repeat(HIDDEN_MIN_BYTES)} 💡`;
const chat = (extra: object = {}) => ({
  model: "m",
  stream: false,
  messages: [
    { role: "system", content: "short" },
    { role: "user", content: [{ type: "text", text: long("prompt") }, { type: "image_url", image_url: { url: `data:image/png;base64,${"QUJD".repeat(HIDDEN_MIN_BYTES / 2)}` } }] },
    { role: "tool", tool_call_id: "t", content: long("result") },
  ],
  tools: [{ type: "function", function: { name: "f", description: long("top-level values are never hidden") } }],
  ...extra,
});

describe("parseHidingStrings", () => {
  test("long message strings are placeholders; the rest is JSON.parse's; restoreHidden gives JSON.parse's value back", () => {
    const value = chat();
    for (const text of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
      const body = parseHidingStrings(encoder.encode(text));
      expect(body.model).toBe("m");
      expect(body.tools).toEqual(value.tools);
      expect(body.messages[0]).toEqual(value.messages[0]);
      expect(body.messages[1].content[0].text).not.toBe((value.messages[1]!.content[0] as { text: string }).text);
      expect(body.messages[1].content[0].text.length).toBeLessThan(100);
      expect(body.messages.length).toBe(3);
      expect(restoreHidden(body)).toEqual(value);
      expect(restoreHidden(body)).toEqual(value); // once restored, nothing more to do
    }
  });

  test("a scanned body keeps each message's span in its bytes (with long strings hidden, none to hide, or under 32 KB: the content writer's scan); one under 1 KB has none", () => {
    const many = { model: "m", messages: Array.from({ length: 40 }, (_, i) => ({ role: i % 2 ? "tool" : "user", content: `${i} é ${"y".repeat(1200)}` })) };
    const medium = { model: "m", messages: [{ role: "system", content: `é ${"s".repeat(1500)}` }, { role: "user", content: "hi" }, { role: "tool", content: "" }], tools: [] };
    for (const value of [chat(), many, medium]) {
      for (const text of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
        const bytes = encoder.encode(text);
        const body = parseHidingStrings(bytes);
        const raw = rawMessagesOf(body)!;
        expect(raw.bytes).toBe(bytes);
        expect(raw.spans.length).toBe(value.messages.length);
        raw.spans.forEach((span, i) => expect(JSON.parse(new TextDecoder().decode(bytes.subarray(span.start, span.end)))).toEqual(value.messages[i]));
      }
    }
    expect(rawMessagesOf(parseHidingStrings(encoder.encode(JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }))))).toBeUndefined();
  });

  test("small bodies, bodies without long strings, and a long key are parsed as they are", () => {
    const small = { model: "m", messages: [{ role: "user", content: "hi" }] };
    expect(parseHidingStrings(encoder.encode(JSON.stringify(small)))).toEqual(small);
    const keyed = { model: "m", messages: [{ role: "user", [long("key")]: 1, content: "x".repeat(HIDDEN_MIN_BYTES) }] };
    const parsed = parseHidingStrings(encoder.encode(JSON.stringify(keyed)));
    expect(Object.keys(parsed.messages[0])).toEqual(Object.keys(keyed.messages[0]!));
    expect(restoreHidden(parsed)).toEqual(keyed);
  });

  test("bad bodies get parseJsonObject's errors", () => {
    const pad = "y".repeat(HIDDEN_MIN_BYTES + 10);
    for (const text of [`{"messages":[{"content":"${pad}"}]`, `[{"messages":[{"content":"${pad}"}]}]`, `{"messages":{"content":"${pad}"}}`, `{"messages":[{"content":"${pad}"}]} x`]) {
      let error: unknown;
      let parsed: unknown;
      try {
        parsed = parseHidingStrings(encoder.encode(text));
      } catch (e) {
        error = e;
      }
      if (error) expect(error).toBeInstanceOf(ProxyHttpError);
      else expect(parsed).toEqual(JSON.parse(text));
    }
  });

  test("a placeholder-looking string the harness sent is not taken for one", () => {
    const body = { model: "m", messages: [{ role: "user", content: "\u0000forge-hidden:x:0" }, { role: "user", content: long("z") }] };
    const parsed = parseHidingStrings(encoder.encode(JSON.stringify(body)));
    expect(restoreHidden(parsed)).toEqual(body);
  });
});
