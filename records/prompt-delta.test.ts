import { describe, expect, test } from "bun:test";
import { fullPrompt, isViewPrefix, joinIds, promptDelta } from "./prompt-delta.ts";

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
  test("the longest prefix wins and the latest call a tie, whatever the order and lengths of the recent calls", () => {
    // A growing conversation (each call's ids the start of the next), a retry, and a branch.
    const recent = [
      { callId: "c1", tokens: [1, 2] },
      { callId: "c2", tokens: [1, 2, 3, 4] },
      { callId: "branch", tokens: [1, 2, 3, 9, 9, 9, 9, 9] },
      { callId: "retry", tokens: [1, 2, 3, 4] },
      { callId: "short", tokens: [1] },
    ];
    const brute = (prompt: number[], calls: typeof recent) => {
      let best = { prefixOf: "", prefixLen: 0 };
      for (const c of calls) {
        let n = 0;
        while (n < prompt.length && n < c.tokens.length && prompt[n] === c.tokens[n]) n++;
        if (n > 0 && n >= best.prefixLen) best = { prefixOf: c.callId, prefixLen: n };
      }
      return { ...best, suffix: prompt.slice(best.prefixLen) };
    };
    for (const prompt of [[1, 2, 3, 4, 5], [1, 2, 3, 9, 9, 7], [1, 2, 3], [1, 5], [8]]) {
      for (let rot = 0; rot < recent.length; rot++) {
        const calls = [...recent.slice(rot), ...recent.slice(0, rot)];
        expect(promptDelta(prompt, calls)).toEqual(brute(prompt, calls));
      }
    }
  });
  test("no shared prefix stores the whole prompt", () => {
    expect(promptDelta([7], [{ callId: "a", tokens: [1] }])).toEqual({ prefixOf: "", prefixLen: 0, suffix: [7] });
  });
  test("an unknown parent cannot be rebuilt", () => {
    expect(fullPrompt("zz", 1, [1], [])).toBeUndefined();
  });
  test("typed arrays (blocks compared natively) give the same delta as plain arrays, wherever the prompts part", () => {
    const past = Array.from({ length: 5000 }, (_, i) => (i * 7919) % 151_000);
    for (const at of [0, 1, 1023, 1024, 1025, 2048, 4095, 4999, 5000]) {
      const prompt = [...past.slice(0, at), 151_999, ...past.slice(at + 1), 42];
      const plain = promptDelta(prompt, [{ callId: "p", tokens: past }]);
      const typed = promptDelta(new Uint32Array(prompt), [{ callId: "p", tokens: new Uint32Array(past) }]);
      const mixed = promptDelta(new Uint32Array(prompt), [{ callId: "p", tokens: past }]);
      expect(typed).toEqual(plain);
      expect(mixed).toEqual(plain);
      expect(Array.isArray(typed.suffix)).toBe(true);
      expect(fullPrompt(typed.prefixOf, typed.prefixLen, typed.suffix, [{ callId: "p", tokens: new Uint32Array(past) }])).toEqual(prompt);
    }
    expect(Array.from(joinIds(new Uint32Array([1, 2]), [3]))).toEqual([1, 2, 3]);
  });
  test("a known prefix: views of its start are taken as shared without a compare, and the delta is the one compared", () => {
    const chain = new Uint32Array([1, 2, 3, 4, 5, 6]);
    const prompt = joinIds(chain, [7, 8]);
    const recent = [
      { callId: "c1", tokens: chain.subarray(0, 2) },
      { callId: "c2", tokens: chain },
      { callId: "copy", tokens: new Uint32Array([1, 2, 3, 4, 5, 6, 7]) },
      { callId: "retry", tokens: chain.subarray(0, 4) },
    ];
    expect(promptDelta(prompt, recent, chain)).toEqual(promptDelta(prompt, recent));
    expect(promptDelta(prompt, recent, chain).prefixOf).toBe("copy");
    expect(promptDelta(prompt, recent.slice(0, 2), chain)).toEqual({ prefixOf: "c2", prefixLen: 6, suffix: [7, 8] });
    // Only a view from the same start, no longer, is known: an equal copy, a view from elsewhere or past its end is compared.
    expect(isViewPrefix(chain.subarray(0, 3), chain)).toBe(true);
    expect(isViewPrefix(chain, chain.subarray(0, 3))).toBe(false);
    expect(isViewPrefix(chain.subarray(1, 3), chain)).toBe(false);
    expect(isViewPrefix(new Uint32Array([1, 2]), chain)).toBe(false);
    expect(isViewPrefix([1, 2], chain)).toBe(false);
    expect(isViewPrefix(chain, undefined)).toBe(false);
  });
});
