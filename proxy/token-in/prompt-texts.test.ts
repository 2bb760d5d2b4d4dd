import { describe, expect, test } from "bun:test";
import { chainPromptText, keepPromptText } from "./prompt-texts.ts";

describe("a prompt's ids as JSON text, continued from the chain's last prompt", () => {
  test("the next call's prompt (the chain's tokens and what is appended) is written on from the kept text, as JSON.stringify writes it", () => {
    const first = [151644, 872, 198, 9707, 151645];
    const tokens = new Uint32Array([...first, 0, 42, 151645]);
    keepPromptText(tokens, first.length, JSON.stringify(first), undefined);
    const next = [...tokens, 198, 151644, 77091, 198];
    expect(chainPromptText(next, tokens)).toBe(JSON.stringify(next));
    // A retry of the last call: its prompt again.
    expect(chainPromptText(first, tokens)).toBe(JSON.stringify(first));
  });

  test("no kept text (another chain, a text the chain moved on from, a prompt shorter than it): the whole text", () => {
    const tokens = new Uint32Array([1, 2, 3, 4]);
    keepPromptText(tokens, 3, "[1,2,3]", undefined);
    expect(chainPromptText([1, 2], tokens)).toBe("[1,2]");
    expect(chainPromptText([1, 2, 3, 4, 5], new Uint32Array([1, 2, 3, 4]))).toBe("[1,2,3,4,5]");
    const moved = new Uint32Array([1, 2, 3, 4, 5, 6]);
    keepPromptText(moved, 5, "[1,2,3,4,5]", tokens);
    // The chain moved on: the text kept for its old tokens is gone (a wrong one would read "[1,2,3,…").
    expect(chainPromptText([9, 9, 9, 9], tokens)).toBe("[9,9,9,9]");
    expect(chainPromptText([1, 2, 3, 4, 5, 6, 7], moved)).toBe("[1,2,3,4,5,6,7]");
  });

  test("bounded: texts past the shard's budget are dropped, oldest first", () => {
    const big = JSON.stringify(Array.from({ length: 150_000 }, (_, i) => i % 100_000));
    const arrays = Array.from({ length: 8 }, () => new Uint32Array(150_001));
    for (const a of arrays) keepPromptText(a, 150_000, big, undefined);
    // ~0.9 M characters each, 4 Mi in all: the first ones went; a miss writes the whole text.
    const probe = Array.from({ length: 150_001 }, (_, i) => (i === 150_000 ? 7 : 0));
    expect(chainPromptText(probe, arrays[0])).toBe(JSON.stringify(probe));
    expect(chainPromptText(probe, arrays[7])).toBe(`${big.slice(0, -1)},7]`);
  });
});
