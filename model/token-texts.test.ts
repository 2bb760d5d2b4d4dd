import { beforeAll, expect, test } from "bun:test";
import { loadModel, type Model } from "./index.ts";
import { decodeIds } from "./token-texts.ts";

let model: Model;
beforeAll(async () => {
  model = await loadModel();
}, 60_000);

test("decodeIds is the tokenizer's decode: special tokens kept, split characters, a byte-order mark, bytes that form no character", () => {
  const t = model.tokenizer;
  const texts = ["<think>\nhm\n</think>\n\nHi<|im_end|>", "数据 🦀 ok ṩ, ünï 😀😀 done", "\ufeffhello \ufeff", "<tool_call>\n{}\n</tool_call><|endoftext|>"];
  for (const text of texts) {
    const ids = t.encode(text);
    expect(decodeIds(t, ids)).toBe(t.decode(ids));
    // Cut anywhere: a sequence that ends (or starts) inside a character.
    for (let i = 0; i <= ids.length; i++) {
      expect(decodeIds(t, ids.slice(0, i))).toBe(t.decode(ids.slice(0, i)));
      expect(decodeIds(t, ids.slice(i))).toBe(t.decode(ids.slice(i)));
    }
  }
  expect(decodeIds(t, t.encode("\ufeffhello"))).toBe("\ufeffhello");
});
