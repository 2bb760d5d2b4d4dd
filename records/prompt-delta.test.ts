import { describe, expect, test } from "bun:test";
import { appendIds, fullPrompt, joinIds, promptDelta } from "./prompt-delta.ts";
import { commonPrefix } from "../lib/index.ts";

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
});

describe("appendIds: a growing rollout's ids written once", () => {
  test("a chain's next prompt and a call's completion are written in place after what they continue", () => {
    const first = appendIds([1, 2, 3], [4]);
    // From ids it did not make: copied exactly (an engine-mode prompt is not appended to).
    expect([...first]).toEqual([1, 2, 3, 4]);
    expect(first.buffer.byteLength).toBe(4 * 4);
    const prompt = appendIds(first, [5, 6]);
    const tokens = appendIds(prompt, [7, 8]);
    const next = appendIds(tokens, [9]);
    expect([...prompt]).toEqual([1, 2, 3, 4, 5, 6]);
    expect([...tokens]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect([...next]).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // The first copy made room; the appends after it wrote into it.
    expect(tokens.buffer).toBe(prompt.buffer);
    expect(next.buffer).toBe(prompt.buffer);
    expect(commonPrefix(next, prompt)).toBe(prompt.length);
  });

  test("two appends to one view (a retry, a branch): the second is copied, and no view's ids change", () => {
    const base = appendIds(appendIds([1], [2]), [3]);
    const a = appendIds(base, [10, 11]);
    const b = appendIds(base, [20]);
    expect(b.buffer).not.toBe(a.buffer);
    expect([...base]).toEqual([1, 2, 3]);
    expect([...a]).toEqual([1, 2, 3, 10, 11]);
    expect([...b]).toEqual([1, 2, 3, 20]);
    // Each goes on growing in its own buffer.
    expect([...appendIds(a, [12])]).toEqual([1, 2, 3, 10, 11, 12]);
    expect([...appendIds(b, [21])]).toEqual([1, 2, 3, 20, 21]);
    expect([...a]).toEqual([1, 2, 3, 10, 11]);
  });

  test("a buffer outgrown moves to a bigger one; a view not from a buffer's start is copied", () => {
    let ids = appendIds(appendIds([], [0]), []);
    const expected = [0];
    for (let step = 1; step < 400; step++) {
      const added = Array.from({ length: 37 }, (_, k) => step * 100 + k);
      expected.push(...added);
      ids = appendIds(ids, added);
    }
    expect([...ids]).toEqual(expected);
    const shifted = ids.subarray(1);
    const moved = appendIds(shifted, [1]);
    expect(moved.buffer).not.toBe(ids.buffer);
    expect([...moved]).toEqual([...expected.slice(1), 1]);
  });
});

describe("commonPrefix of two views of the same memory", () => {
  test("the shorter one's length, without comparing; other views are compared", () => {
    const ids = new Uint32Array([1, 2, 3, 4, 5]);
    expect(commonPrefix(ids.subarray(0, 3), ids)).toBe(3);
    expect(commonPrefix(ids.subarray(1, 3), ids)).toBe(0);
    expect(commonPrefix(new Uint32Array([1, 2, 9]), ids)).toBe(2);
  });
});
