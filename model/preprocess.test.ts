import { describe, expect, test } from "bun:test";
import { preprocessChat, PreprocessCache, type ChatRenderRequest } from "./preprocess.ts";
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
});
