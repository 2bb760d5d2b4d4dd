import { describe, expect, test } from "bun:test";
import { isIdArray, parseAnswer, type IdsMemo } from "./answer-json.ts";

/** JSON.parse's value with typed arrays as plain arrays, for comparing. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value, (_, v) => (v instanceof Uint32Array ? Array.from(v) : v)));
const ids = (n: number, seed = 1) => Array.from({ length: n }, (_, i) => ((i + seed) * 2654435761) >>> 16);

describe("parseAnswer", () => {
  const vllm = { id: "chatcmpl-1", model: "q", choices: [{ index: 0, message: { role: "assistant", content: "hi" }, token_ids: [1, 2], finish_reason: "stop" }], usage: { prompt_tokens: 5000, completion_tokens: 2 }, prompt_token_ids: ids(5000) };
  const sglang = { id: "x", choices: [{ index: 0, message: { content: "ok" }, prompt_token_ids: ids(3000, 2), response_token_ids: [7] }, { index: 1, prompt_token_ids: ids(3000, 3) }], sglext: { input_ids: ids(4000, 4), output_ids: [[7]] } };
  const cases: [string, unknown, string?][] = [
    ["vLLM chat, compact", vllm],
    ["vLLM chat, pretty-printed", vllm, JSON.stringify(vllm, null, 2)],
    ["SGLang: per-choice prompt ids and sglext.input_ids", sglang],
    ["the key inside a string is text, not ids", { choices: [{ message: { content: `say ,"prompt_token_ids":[${ids(3000).join(",")}]` } }], prompt_token_ids: ids(3000) }],
    ["an escaped key inside a string", { text: `{\\"prompt_token_ids\\": [${ids(3000).join(",")}]}` }],
    ["other keys and values ending like the keys (token_ids, my_input_ids, a value \"input_ids\")", { token_ids: [1], my_input_ids: ids(3000), note: "input_ids", tag: "x_prompt_token_ids", prompt_token_ids: ids(3000, 5) }],
    ["short arrays are left to JSON.parse", { prompt_token_ids: [1, 2, 3], pad: "x".repeat(5000) }],
  ];
  for (const [name, value, text] of cases) {
    test(`${name}: the same value as JSON.parse`, () => {
      const t = text ?? JSON.stringify(value);
      expect(plain(parseAnswer(t))).toEqual(JSON.parse(t));
    });
  }

  test("long prompt ids come back as Uint32Arrays where they were; the rest is plain JSON", () => {
    const parsed = parseAnswer(JSON.stringify(vllm));
    expect(parsed.prompt_token_ids).toBeInstanceOf(Uint32Array);
    expect(Array.from(parsed.prompt_token_ids)).toEqual(vllm.prompt_token_ids);
    expect(parsed.choices[0].token_ids).toEqual([1, 2]);
    const s = parseAnswer(JSON.stringify(sglang));
    expect(s.choices[0].prompt_token_ids).toBeInstanceOf(Uint32Array);
    expect(Array.from(s.choices[1].prompt_token_ids)).toEqual(sglang.choices[1]!.prompt_token_ids!);
    expect(s.sglext.input_ids).toBeInstanceOf(Uint32Array);
    expect(isIdArray(s.sglext.input_ids) && isIdArray([1]) && !isIdArray({ length: 1 })).toBe(true);
  });

  test("a harness that asked for ids gets plain arrays", () => {
    const parsed = parseAnswer(JSON.stringify(vllm), { tokenIds: true });
    expect(Array.isArray(parsed.prompt_token_ids)).toBe(true);
  });

  test("anything but uint32 ids falls back to JSON.parse (same value, plain arrays)", () => {
    for (const bad of [[...ids(3000), -1], [...ids(3000), 1.5], [...ids(3000), 4294967296], [...ids(3000), 1e21], [...ids(3000), null], [...ids(3000), "7"]]) {
      const t = JSON.stringify({ prompt_token_ids: bad });
      const parsed = parseAnswer(t);
      expect(parsed).toEqual(JSON.parse(t));
      expect(Array.isArray(parsed.prompt_token_ids)).toBe(true);
    }
    // ids where none are expected (a placeholder would not land): JSON.parse's value
    const odd = JSON.stringify({ choices: [{ message: { prompt_token_ids: ids(3000) } }] });
    expect(parseAnswer(odd)).toEqual(JSON.parse(odd));
    expect(Array.isArray(parseAnswer(odd).choices[0].message.prompt_token_ids)).toBe(true);
  });

  test("malformed answers throw as JSON.parse does", () => {
    for (const bad of [`{"prompt_token_ids":[${ids(3000).join(",")}`, `{"prompt_token_ids":[${ids(3000).join(",")}]`, `{"prompt_token_ids":[${ids(3000).join(",")},]}`, `{"prompt_token_ids":[01${",1".repeat(3000)}]}`]) {
      expect(() => parseAnswer(bad)).toThrow();
      expect(() => JSON.parse(bad)).toThrow();
    }
  });

  test("a rollout's next answer: the ids it shares with the last one are taken from the memo, the rest parsed; always JSON.parse's value", () => {
    const memo: IdsMemo = {};
    const base = ids(6000, 9);
    const prompts = [
      base,
      [...base, ...ids(300, 10)], // grows (the usual next turn)
      [...base, ...ids(300, 10)], // the same again
      [...base.slice(0, 4000), ...ids(2500, 11)], // parts in the middle (a compacted conversation)
      base.slice(0, 5000), // shorter
      [...base.slice(0, 1234), 0, 4294967295, ...base.slice(1236)], // differs inside one id's digits
      [base[0]! * 10 + 1, ...base.slice(1)], // differs in the first id
      ids(7000, 12), // another conversation
    ];
    for (const prompt of prompts) {
      const text = JSON.stringify({ id: "x", choices: [{ index: 0, message: { content: "c" } }], prompt_token_ids: prompt });
      const parsed = parseAnswer(text, undefined, memo);
      expect(parsed.prompt_token_ids).toBeInstanceOf(Uint32Array);
      expect(Array.from(parsed.prompt_token_ids)).toEqual(prompt);
      expect(memo.ids!.length).toBe(prompt.length);
    }
    // An id text that stops being an id where the memo's went on is not taken from the memo.
    const bad = JSON.stringify({ prompt_token_ids: [...base.slice(0, 3000), 1.5, ...base.slice(3001)] });
    expect(parseAnswer(bad, undefined, memo)).toEqual(JSON.parse(bad));
    const spaced = JSON.stringify({ prompt_token_ids: base }).replaceAll(",", ", ");
    expect(Array.from(parseAnswer(spaced, undefined, memo).prompt_token_ids)).toEqual(base);
    expect(memo.text).toBeUndefined();
  });
});
