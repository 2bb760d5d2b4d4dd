import { beforeAll, describe, expect, test } from "bun:test";
import { loadModel, type Model } from "../../model/index.ts";
import { contextAfter, logprobTokenText } from "./logprob-tokens.ts";

let model: Model;
beforeAll(async () => {
  model = await loadModel();
});

describe("logprobTokenText: a token's text as vLLM's engine decodes it for logprobs", () => {
  const decode = (ids: number[]) => model.tokenizer.decode(ids);
  /** Each sampled id's text, the answer's ids before it as context. */
  const texts = (ids: number[]) => ids.map((id, i) => logprobTokenText(decode, id, contextAfter([], ids.slice(0, i))));

  test("a whole token is its own text; the pieces of a cut character are \"\" until the one that completes it, which has the character", () => {
    const ids = model.tokenizer.encode("数据 🦀 ok");
    // " 🦀" is three byte-level tokens, each alone decoded with U+FFFD at its end.
    expect(ids.map((id) => decode([id]).endsWith("\ufffd"))).toEqual([false, true, true, true, false]);
    expect(texts(ids)).toEqual(["数据", "", "", " 🦀", " ok"]);
  });

  test("a cut character with nothing before it to complete it (the answer's first token) is \"\"", () => {
    const [, piece] = model.tokenizer.encode("数据 🦀");
    expect(decode([piece!]).endsWith("\ufffd")).toBe(true);
    expect(logprobTokenText(decode, piece!, [])).toBe("");
  });

  test("the context is the last four ids, across what was written before", () => {
    expect(contextAfter([1, 2, 3], [4, 5])).toEqual([2, 3, 4, 5]);
    expect(contextAfter([], [1])).toEqual([1]);
    expect(contextAfter([1, 2, 3, 4, 5, 6], [])).toEqual([3, 4, 5, 6]);
  });
});
