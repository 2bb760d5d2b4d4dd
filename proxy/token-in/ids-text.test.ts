import { expect, test } from "bun:test";
import { IDS_PLACEHOLDER, withIdsText } from "./ids-text.ts";

test("the ids' text goes where the placeholder is, once; a JSON without it is an error", () => {
  const ids = [151644, 872, 198];
  const json = withIdsText(JSON.stringify({ model: "m", prompt: IDS_PLACEHOLDER, max_tokens: 5 }), JSON.stringify(ids));
  expect(JSON.parse(json)).toEqual({ model: "m", prompt: ids, max_tokens: 5 });
  expect(() => withIdsText(JSON.stringify({ prompt: [1] }), "[1]")).toThrow(/no ids placeholder/);
});
