import { describe, expect, test } from "bun:test";
import { chainPromptJson, keepPromptJson, promptJsonOf } from "./prompt-texts.ts";
import { IDS_PLACEHOLDER } from "./ids-text.ts";

const decoder = new TextDecoder();
/** The JSON text a PromptJson writes into a request, read back from its bytes. */
const written = (json: ReturnType<typeof promptJsonOf>) => decoder.decode(json.spliceInto(JSON.stringify(IDS_PLACEHOLDER)));

describe("a prompt's ids as JSON bytes, continued from the chain's last prompt", () => {
  test("the next call's prompt (the chain's tokens and what is appended) is written on from the kept JSON, as JSON.stringify writes it", () => {
    const first = [151644, 872, 198, 9707, 151645];
    const tokens = new Uint32Array([...first, 0, 42, 151645]);
    keepPromptJson(tokens, promptJsonOf(first), undefined);
    const next = [...tokens, 198, 151644, 77091, 198];
    const json = chainPromptJson(next, tokens);
    expect(json.text()).toBe(JSON.stringify(next));
    expect(written(json)).toBe(JSON.stringify(next));
    // A retry of the last call: its prompt again.
    expect(chainPromptJson(first, tokens).text()).toBe(JSON.stringify(first));
  });

  test("a request is its head, the ids and its tail, in UTF-8 (a stop string in the body is no ASCII)", () => {
    const json = promptJsonOf(new Uint32Array([7, 8, 9]));
    const body = { model: "q", stop: ["。"], token_ids: IDS_PLACEHOLDER, stream: true };
    expect(decoder.decode(json.spliceInto(JSON.stringify(body)))).toBe(JSON.stringify({ ...body, token_ids: [7, 8, 9] }));
    expect(() => json.spliceInto("{}")).toThrow("no ids placeholder");
  });

  test("two calls that continue one prompt (a branch) each get their own ids: the second writes into a buffer of its own", () => {
    const base = promptJsonOf([1, 2, 3]);
    const a = base.continuedTo([1, 2, 3, 4, 5]);
    const b = base.continuedTo([1, 2, 3, 9]);
    expect(written(a)).toBe("[1,2,3,4,5]");
    expect(written(b)).toBe("[1,2,3,9]");
    expect(written(base)).toBe("[1,2,3]");
    // Writing on from each again leaves the others as they were.
    const a2 = a.continuedTo([1, 2, 3, 4, 5, 6]);
    const b2 = b.continuedTo([1, 2, 3, 9, 10, 11]);
    expect([written(a), written(b), written(a2), written(b2)]).toEqual(["[1,2,3,4,5]", "[1,2,3,9]", "[1,2,3,4,5,6]", "[1,2,3,9,10,11]"]);
  });

  test("a chain that grows past its buffer moves to a bigger one; an empty prompt is written on as one with ids", () => {
    let json = promptJsonOf([]);
    expect(written(json)).toBe("[]");
    const ids: number[] = [];
    for (let step = 0; step < 200; step++) {
      for (let k = 0; k < 37; k++) ids.push((step * 7919 + k * 104729) % 151_936);
      json = json.continuedTo(ids);
    }
    expect(json.count).toBe(ids.length);
    expect(written(json)).toBe(JSON.stringify(ids));
    expect(json.text()).toBe(JSON.stringify(ids));
  });

  test("no kept JSON (another chain, the JSON of tokens the chain moved on from, a prompt shorter than it): the whole JSON", () => {
    const tokens = new Uint32Array([1, 2, 3, 4]);
    keepPromptJson(tokens, promptJsonOf([1, 2, 3]), undefined);
    expect(chainPromptJson([1, 2], tokens).text()).toBe("[1,2]");
    expect(chainPromptJson([1, 2, 3, 4, 5], new Uint32Array([1, 2, 3, 4])).text()).toBe("[1,2,3,4,5]");
    const moved = new Uint32Array([1, 2, 3, 4, 5, 6]);
    keepPromptJson(moved, promptJsonOf([1, 2, 3, 4, 5]), tokens);
    // The chain moved on: the JSON kept for its old tokens is gone (a wrong one would read "[1,2,3,…").
    expect(chainPromptJson([9, 9, 9, 9], tokens).text()).toBe("[9,9,9,9]");
    expect(chainPromptJson([1, 2, 3, 4, 5, 6, 7], moved).text()).toBe("[1,2,3,4,5,6,7]");
  });

  test("bounded: JSON past the shard's budget is dropped, oldest first", () => {
    // Kept for tokens its ids are not a prefix of, so that a hit shows in the text written on from it.
    const keptIds = new Array<number>(95_000).fill(123_456);
    const arrays = Array.from({ length: 8 }, () => new Uint32Array(95_001));
    // ~0.73 MiB of buffer each, 4 MiB in all: the first ones went.
    for (const a of arrays) keepPromptJson(a, promptJsonOf(keptIds), undefined);
    const probe = [...new Array<number>(95_000).fill(1), 7];
    // A miss writes the whole JSON; a hit writes on from what was kept.
    expect(chainPromptJson(probe, arrays[0]).text()).toBe(JSON.stringify(probe));
    expect(chainPromptJson(probe, arrays[7]).text()).toBe(JSON.stringify([...keptIds, 7]));
  });
});
