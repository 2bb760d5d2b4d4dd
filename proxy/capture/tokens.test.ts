import { describe, expect, test } from "bun:test";
import { captureAndStrip, harnessWants, newCapture, trainRequest } from "./tokens.ts";

const none = { tokenIds: false, logprobs: false, usage: false };

describe("trainRequest", () => {
  test("asks for ids, logprobs and stream usage, keeping the harness's own fields", () => {
    expect(trainRequest("chat", { model: "m", stream: true })).toEqual({ model: "m", stream: true, return_token_ids: true, logprobs: true, stream_options: { include_usage: true } });
    expect(trainRequest("completions", { model: "m", logprobs: 3 })).toEqual({ model: "m", logprobs: 3, return_token_ids: true });
    expect(trainRequest("completions", { model: "m" }).logprobs).toBe(0);
  });
  test("harnessWants reads what the harness asked for", () => {
    expect(harnessWants("chat", { return_token_ids: true, logprobs: true, stream: true, stream_options: { include_usage: true } })).toEqual({ tokenIds: true, logprobs: true, usage: true });
    expect(harnessWants("completions", { logprobs: 0 }).logprobs).toBe(true);
    expect(harnessWants("chat", {}).usage).toBe(true); // non-stream answers always carry usage
  });
});

describe("captureAndStrip", () => {
  test("chat stream chunks: ids and logprobs accumulate, fields stripped", () => {
    const cap = newCapture();
    const first: any = { model: "m", prompt_token_ids: [1, 2], choices: [{ index: 0, delta: { role: "assistant" }, token_ids: [] }] };
    expect(captureAndStrip("chat", first, cap, none)).toBe(true);
    expect(first).toEqual({ model: "m", choices: [{ index: 0, delta: { role: "assistant" } }] });
    const next: any = { choices: [{ index: 0, delta: { content: "x" }, token_ids: [7], logprobs: { content: [{ logprob: -0.5 }] }, finish_reason: "stop" }] };
    captureAndStrip("chat", next, cap, none);
    expect(next.choices[0].logprobs).toBeNull();
    const usage: any = { choices: [], usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3, prompt_tokens_details: { cached_tokens: 1 } } };
    captureAndStrip("chat", usage, cap, none);
    expect(usage).toEqual({ choices: [] });
    expect(cap).toMatchObject({ promptTokenIds: [1, 2], completionTokenIds: [7], completionLogprobs: [-0.5], finishReason: "stop", sawCompletionIds: true, model: "m" });
    expect(cap.usage).toEqual({ prompt_tokens: 2, completion_tokens: 1, total_tokens: 3, cached_tokens: 1 });
  });
  test("completions put prompt ids on the choice; only choice 0 is recorded; wanted fields stay", () => {
    const cap = newCapture();
    const body: any = {
      choices: [
        { index: 0, text: "a", prompt_token_ids: [5], token_ids: [6], logprobs: { token_logprobs: [-1] } },
        { index: 1, text: "b", prompt_token_ids: [5], token_ids: [8], logprobs: { token_logprobs: [-2] } },
      ],
    };
    expect(captureAndStrip("completions", body, cap, { tokenIds: true, logprobs: true, usage: true })).toBe(false);
    expect(body.choices[1].token_ids).toEqual([8]);
    expect(cap).toMatchObject({ promptTokenIds: [5], completionTokenIds: [6], completionLogprobs: [-1] });
  });
  test("an answer without ids leaves the capture empty (nothing is made up)", () => {
    const cap = newCapture();
    expect(captureAndStrip("chat", { choices: [{ index: 0, message: { content: "hi" }, finish_reason: "stop" }] }, cap, none)).toBe(false);
    expect(cap.promptTokenIds).toBeUndefined();
    expect(cap.sawCompletionIds).toBe(false);
  });
});
