import { describe, expect, test } from "bun:test";
import { TokenStatus } from "../../schemas/index.ts";
import { captureAndStrip, emptyAfterStrip, harnessWants, newCapture, tokenVerdict } from "./tokens.ts";

const none = { tokenIds: false, logprobs: false, usage: false };

describe("harnessWants", () => {
  test("reads what the harness asked for", () => {
    expect(harnessWants("chat", { return_token_ids: true, logprobs: true, stream: true, stream_options: { include_usage: true } })).toEqual({
      tokenIds: true,
      logprobs: true,
      usage: true,
      sglext: false,
      reasoning: true,
      weightVersions: false,
    });
    expect(harnessWants("chat", { return_weight_versions: true }).weightVersions).toBe(true);
    expect(harnessWants("completions", { logprobs: 0 }).logprobs).toBe(true);
    expect(harnessWants("chat", {}).usage).toBe(true); // non-stream answers always carry usage
    expect(harnessWants("chat", { return_output_ids_in_sglext: true, include_reasoning: false })).toMatchObject({ sglext: true, reasoning: false });
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

describe("SGLang's places", () => {
  test("non-streamed chat: per-choice prompt_token_ids and response_token_ids, stripped", () => {
    const cap = newCapture();
    const body: any = {
      choices: [{ index: 0, message: { content: "hi" }, finish_reason: "stop", matched_stop: 151645, prompt_token_ids: [1, 2], response_token_ids: [3, 151645] }],
      usage: { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 },
      metadata: { weight_version: "default" },
    };
    expect(captureAndStrip("chat", body, cap, { tokenIds: false, logprobs: false, usage: true })).toBe(true);
    expect(body.choices[0]).toEqual({ index: 0, message: { content: "hi" }, finish_reason: "stop", matched_stop: 151645 });
    expect(cap).toMatchObject({ promptTokenIds: [1, 2], completionTokenIds: [3, 151645], sawCompletionIds: true });
    expect(tokenVerdict(cap, { train: true, ok: true }).status).toBe(TokenStatus.COMPLETE);
  });
  test("streamed chat: the sglext chunk gives the ids and is dropped when the harness did not ask", () => {
    const cap = newCapture();
    const chunk: any = { id: "x", object: "chat.completion.chunk", choices: [], usage: null, sglext: { input_ids: [1, 2, 3], output_ids: [[4, 5]] } };
    expect(captureAndStrip("chat", chunk, cap, { tokenIds: false, logprobs: false, usage: false })).toBe(true);
    expect(chunk).toEqual({ id: "x", object: "chat.completion.chunk", choices: [] });
    expect(emptyAfterStrip(chunk)).toBe(true);
    expect(cap).toMatchObject({ promptTokenIds: [1, 2, 3], completionTokenIds: [4, 5] });
    // A harness that asked for sglext ids itself keeps them (and the chunk).
    const kept: any = { choices: [], usage: null, sglext: { input_ids: [1], output_ids: [[2]] } };
    captureAndStrip("chat", kept, newCapture(), { tokenIds: false, logprobs: false, usage: true, sglext: true });
    expect(kept.sglext).toEqual({ input_ids: [1], output_ids: [[2]] });
  });
  test("an error event is captured; reasoning is stripped when the harness turned it off", () => {
    const cap = newCapture();
    captureAndStrip("chat", { error: { object: "error", message: "boom", type: "BadRequest", code: 400 } }, cap, { tokenIds: false, logprobs: false, usage: false });
    expect(cap.upstreamError).toBe("boom");
    const body: any = { choices: [{ index: 0, message: { content: "a", reasoning: "r" } }] };
    expect(captureAndStrip("chat", body, newCapture(), { tokenIds: false, logprobs: false, usage: true, reasoning: false })).toBe(true);
    expect(body.choices[0].message).toEqual({ content: "a" });
  });
  test("an echo's prompt text is put back in front of choice 0's first text only", () => {
    const cap = newCapture();
    const wants = { tokenIds: false, logprobs: false, usage: false, echoPrompt: "Hello" };
    const first: any = { choices: [{ index: 0, text: " world", token_ids: [1] }] };
    const second: any = { choices: [{ index: 0, text: "!", token_ids: [2] }] };
    captureAndStrip("completions", first, cap, wants);
    captureAndStrip("completions", second, cap, wants);
    expect(first.choices[0].text).toBe("Hello world");
    expect(second.choices[0].text).toBe("!");
  });
});

describe("tokenVerdict", () => {
  const capture = (over: Partial<ReturnType<typeof newCapture>>) => ({ ...newCapture(), ...over });
  test("COMPLETE only when ids agree with usage, PARTIAL with the reason otherwise", () => {
    const good = capture({ promptTokenIds: [1, 2], completionTokenIds: [3, 4], completionLogprobs: [-1, -2], sawCompletionIds: true, usage: { prompt_tokens: 2, completion_tokens: 2 } });
    expect(tokenVerdict(good, { train: true, ok: true })).toEqual({ status: TokenStatus.COMPLETE, reason: "", logprobs: [-1, -2] });
    const holey = { ...good, completionTokenIds: [3], completionLogprobs: [-1], usage: { prompt_tokens: 2, completion_tokens: 5 } };
    const v = tokenVerdict(holey, { train: true, ok: true });
    expect(v.status).toBe(TokenStatus.PARTIAL);
    expect(v.reason).toContain("completion ids: 1, usage.completion_tokens: 5");
    expect(tokenVerdict({ ...good, promptTokenIds: [1] }, { train: true, ok: true }).reason).toContain("prompt ids: 1, usage.prompt_tokens: 2");
    expect(tokenVerdict({ ...good, usage: undefined }, { train: true, ok: true }).reason).toContain("no usage");
    expect(tokenVerdict(capture({}), { train: true, ok: true }).status).toBe(TokenStatus.MISSING);
    expect(tokenVerdict(good, { train: true, ok: false, failure: "cut" }).status).toBe(TokenStatus.PARTIAL);
    expect(tokenVerdict(good, { train: false, ok: true }).status).toBe(TokenStatus.NOT_REQUESTED);
  });
  test("logprobs are kept only one per id; an echo's prompt logprobs are cut off the front", () => {
    const base = capture({ promptTokenIds: [1, 2], completionTokenIds: [3, 4], sawCompletionIds: true, usage: { prompt_tokens: 2, completion_tokens: 2 } });
    const echo = tokenVerdict({ ...base, completionLogprobs: [0, -0.5, -1, -2] }, { train: true, ok: true, echo: true });
    expect(echo).toEqual({ status: TokenStatus.COMPLETE, reason: "", logprobs: [-1, -2] });
    const short = tokenVerdict({ ...base, completionLogprobs: [-1] }, { train: true, ok: true });
    expect(short.status).toBe(TokenStatus.COMPLETE);
    expect(short.logprobs).toEqual([]);
    expect(short.reason).toContain("logprobs not recorded: the upstream sent 1 for 2 completion ids");
  });
});
