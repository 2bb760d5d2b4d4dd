import { expect, test } from "bun:test";
import { decodeUtf8, decodeUtf8Chunks, deeperThan, MAX_JSON_DEPTH, refuseDeepJson } from "./body.ts";

test("deeperThan counts nesting of objects and arrays, not of strings", () => {
  expect(deeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
  expect(deeperThan({ a: [{ b: [] }] }, 3)).toBe(true);
  expect(deeperThan({ a: "[[[[[[" }, 1)).toBe(false);
  expect(deeperThan(5, 0)).toBe(false);
});

test("refuseDeepJson: 400 past MAX_JSON_DEPTH, on a body JSON.parse built 100k deep", () => {
  const deep = JSON.parse(`{"m":${"[".repeat(100_000)}${"]".repeat(100_000)}}`);
  expect(() => refuseDeepJson(deep)).toThrow(/nested more than 512 levels/);
  let ok: unknown = 1;
  for (let i = 0; i < MAX_JSON_DEPTH - 1; i++) ok = [ok];
  expect(() => refuseDeepJson({ ok })).not.toThrow();
});

test("decodeUtf8Chunks: chunks decode as their joined bytes would, characters across chunks and bad bytes included", () => {
  const enc = (t: string) => new TextEncoder().encode(t);
  const text = enc('{"a":"plain ascii","b":"é中😀","c":"x"}');
  const bad = new Uint8Array([...enc('{"a":"'), 0xe4, 0xb8, 0x22, 0x7d, 0xff]);
  for (const bytes of [text, bad, enc('{"ids":[1,2,3]}')]) {
    for (let cut1 = 0; cut1 <= bytes.length; cut1++) {
      for (const cut2 of [cut1, Math.min(bytes.length, cut1 + 1), bytes.length]) {
        const chunks = [bytes.subarray(0, cut1), bytes.subarray(cut1, cut2), bytes.subarray(cut2)];
        expect(decodeUtf8Chunks(chunks)).toBe(decodeUtf8(bytes));
      }
    }
    expect(decodeUtf8Chunks([bytes])).toBe(decodeUtf8(bytes));
  }
  expect(decodeUtf8Chunks([])).toBe("");
});
