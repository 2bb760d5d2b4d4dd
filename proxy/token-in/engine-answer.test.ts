import { describe, expect, test } from "bun:test";
import { engineAnswerReader } from "./engine-answer.ts";

/** A vLLM /v1/completions choice as token-in mode asks for it (logprobs 0, return_tokens_as_token_ids). */
const choice = (tokens: unknown, extra: Record<string, unknown> = {}) => ({
  choices: [{ index: 0, text: "", logprobs: { text_offset: [0], token_logprobs: [-0.5, -0.25], tokens, top_logprobs: [{ "token_id:151667": -0.5, "token_id:9": -3 }, { "token_id:198": -0.25 }] }, finish_reason: null, stop_reason: null, token_ids: null, prompt_token_ids: null, ...extra }],
});

describe("vLLM's completions answer read as sampled steps", () => {
  test("the ids come from the logprobs' tokens written token_id:N, the alternatives as ids; no prompt is echoed", () => {
    const step = engineAnswerReader("vllm", { top: true }).read(choice(["token_id:151667", "token_id:198"]))!;
    expect(step.ids).toEqual([151667, 198]);
    expect(step.logprobs).toEqual([-0.5, -0.25]);
    expect(step.top).toEqual([
      [
        { token: 151667, logprob: -0.5 },
        { token: 9, logprob: -3 },
      ],
      [{ token: 198, logprob: -0.25 }],
    ]);
    expect(step.promptIds).toBeUndefined();
    expect(step.unreadable).toBeUndefined();
  });

  test("token_ids, where an engine sends them, are the ids (and the prompt it echoes comes with the first)", () => {
    const step = engineAnswerReader("vllm", { top: false }).read(choice(["<think>", "\n"], { token_ids: [151667, 198], prompt_token_ids: [1, 2, 3] }))!;
    expect(step.ids).toEqual([151667, 198]);
    expect(step.promptIds).toEqual([1, 2, 3]);
    expect(step.unreadable).toBeUndefined();
  });

  test("a chunk without logprobs (the finish alone) adds no ids; the usage chunk is no step", () => {
    const reader = engineAnswerReader("vllm", { top: false });
    const finish = reader.read({ choices: [{ index: 0, text: "", logprobs: null, finish_reason: "stop", stop_reason: null, token_ids: null }] })!;
    expect(finish.ids).toEqual([]);
    expect(finish.finish).toEqual({ reason: "stop", stopReason: null, stopToken: true });
    expect(reader.read({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })).toBeUndefined();
    expect(reader.usage()).toEqual({ prompt_tokens: 3, completion_tokens: 2 });
  });

  test("tokens that are not token_id:N (an engine that ignored return_tokens_as_token_ids, or a broken one) make the answer unreadable, naming the token", () => {
    const reader = engineAnswerReader("vllm", { top: false });
    expect(reader.read(choice(["<think>", "\n"]))!.unreadable).toMatch(/^vLLM's logprobs\.tokens\[0\] is "<think>", not "token_id:N": the engine ignored return_tokens_as_token_ids \(token-in mode needs vLLM ≥ 0\.13\.0/);
    for (const bad of ["token_id:", "token_id:-1", "token_id:1.5", "token_id:12x", "token_id: 5", "token_id:007", 7, null]) {
      expect(reader.read(choice(["token_id:3", bad]))!.unreadable).toContain(`logprobs.tokens[1] is ${JSON.stringify(bad)}`);
    }
    expect(reader.read(choice("token_id:3"))!.unreadable).toBe(`vLLM's logprobs.tokens is "token_id:3", not a list`);
  });
});
