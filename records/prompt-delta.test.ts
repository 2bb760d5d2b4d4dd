import { describe, expect, test } from "bun:test";
import { fullPrompt, promptDelta } from "./prompt-delta.ts";

describe("promptDelta", () => {
  test("chooses the longest common prefix among recent calls and round-trips", () => {
    const recent = [
      { callId: "a", tokens: [1, 2, 3, 4, 5] },
      { callId: "b", tokens: [1, 2, 9] },
    ];
    const prompt = [1, 2, 3, 4, 5, 6, 7];
    const d = promptDelta(prompt, recent);
    expect(d).toEqual({ prefixOf: "a", prefixLen: 5, suffix: [6, 7] });
    expect(fullPrompt(d.prefixOf, d.prefixLen, d.suffix, recent)).toEqual(prompt);
  });
  test("no shared prefix stores the whole prompt", () => {
    expect(promptDelta([7], [{ callId: "a", tokens: [1] }])).toEqual({ prefixOf: "", prefixLen: 0, suffix: [7] });
  });
  test("an unknown parent cannot be rebuilt", () => {
    expect(fullPrompt("zz", 1, [1], [])).toBeUndefined();
  });
});
