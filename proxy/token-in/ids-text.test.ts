import { expect, test } from "bun:test";
import { IDS_PLACEHOLDER, withIdsBytes, withIdsText } from "./ids-text.ts";

test("the ids' text goes where the placeholder is, once; a JSON without it is an error", () => {
  const ids = [151644, 872, 198];
  const json = withIdsText(JSON.stringify({ model: "m", prompt: IDS_PLACEHOLDER, max_tokens: 5 }), JSON.stringify(ids));
  expect(JSON.parse(json)).toEqual({ model: "m", prompt: ids, max_tokens: 5 });
  expect(() => withIdsText(JSON.stringify({ prompt: [1] }), "[1]")).toThrow(/no ids placeholder/);
});

test("as bytes: the same UTF-8 as the text encoded, non-ASCII around the ids included; ids' text that is not ASCII is an error", () => {
  const ids = Array.from({ length: 3000 }, (_, i) => (i * 7919) % 151_000);
  const json = JSON.stringify({ model: "m", stop: ["é", "🙂"], prompt: IDS_PLACEHOLDER, tail: "ü" });
  expect(withIdsBytes(json, JSON.stringify(ids))).toEqual(new TextEncoder().encode(withIdsText(json, JSON.stringify(ids))));
  expect(() => withIdsBytes(JSON.stringify({ prompt: [1] }), "[1]")).toThrow(/no ids placeholder/);
  expect(() => withIdsBytes(json, "[\"é\"]")).toThrow(/not ASCII/);
});
