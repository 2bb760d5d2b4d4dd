import { expect, test } from "bun:test";
import { deeperThan, MAX_JSON_DEPTH, refuseDeepJson } from "./body.ts";

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
