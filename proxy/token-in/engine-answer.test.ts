import { describe, expect, test } from "bun:test";
import { engineAnswerReader, StepCollector } from "./engine-answer.ts";

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
    expect(reader.read(choice(["token_id:0", "token_id:151645"]))!.ids).toEqual([0, 151645]);
    for (const bad of ["token_id:", "token_id:-1", "token_id:1.5", "token_id:12x", "token_id: 5", "token_id:007", "token_id:12345678901", "token_id:1e3", 7, null]) {
      expect(reader.read(choice(["token_id:3", bad]))!.unreadable).toContain(`logprobs.tokens[1] is ${JSON.stringify(bad)}`);
    }
    expect(reader.read(choice("token_id:3"))!.unreadable).toBe(`vLLM's logprobs.tokens is "token_id:3", not a list`);
  });
});

describe("SGLang's /generate read as sampled steps", () => {
  const IDS = [151667, 198, 785, 151668, 9707, 151645];
  const row = (i: number) => [-0.1 * (i + 1), IDS[i], null];
  /** The events of a stream in steps of `step` ids: everything so far (SGLang's default) or only what is new (--incremental-streaming-output). */
  const events = (step: number, incremental: boolean) => {
    const out: any[] = [];
    for (let from = 0; from < IDS.length; from += step) {
      const n = Math.min(from + step, IDS.length);
      const start = incremental ? from : 0;
      out.push({ text: "", output_ids: IDS.slice(start, n), meta_info: { prompt_tokens: 9, completion_tokens: n, output_token_logprobs: IDS.slice(start, n).map((_, i) => row(start + i)), finish_reason: n === IDS.length ? { type: "stop", matched: 151645 } : null } });
    }
    return out;
  };

  for (const incremental of [false, true]) {
    test(`streamed ${incremental ? "incrementally" : "cumulatively"}: each id once, with its own logprob, in order`, () => {
      for (const step of [1, 2, 4]) {
        const reader = engineAnswerReader("sglang");
        const steps = events(step, incremental).map((e) => reader.read(e)!);
        expect(steps.flatMap((s) => s.ids)).toEqual(IDS);
        expect(steps.flatMap((s) => s.logprobs)).toEqual(IDS.map((_, i) => -0.1 * (i + 1)));
        expect(steps.at(-1)!.finish).toEqual({ reason: "stop", stopToken: true, stopReason: 151645 });
        expect(reader.usage()).toEqual({ prompt_tokens: 9, completion_tokens: IDS.length });
      }
    });
  }

  test("an event that adds nothing (a repeated or empty one) adds no ids; one without counts is read as everything so far", () => {
    const reader = engineAnswerReader("sglang");
    const [first, second] = events(3, false);
    expect(reader.read(first)!.ids).toEqual(IDS.slice(0, 3));
    expect(reader.read(first)!.ids).toEqual([]);
    const { completion_tokens: _, ...uncounted } = second.meta_info;
    expect(reader.read({ ...second, meta_info: uncounted })!.ids).toEqual(IDS.slice(3));
  });
});

describe("steps waiting for the chat route merged as vLLM's output collector merges them", () => {
  test("the ids, logprobs and alternatives joined in order; the first step's prompt, the last's finish and weight versions; the steps as added are left as they were", () => {
    const first = { ids: [1, 2], logprobs: [-0.5, -0.25], top: [[{ token: 1, logprob: -0.5 }], [{ token: 2, logprob: -0.25 }]], promptIds: [7, 8] };
    const second = { ids: [3], logprobs: [Number.NaN], top: [[{ token: 3, logprob: -1 }]], weightVersions: ["v1"] };
    const finish = { reason: "stop", stopToken: true, stopReason: null };
    const third = { ids: [151645], logprobs: [-0.125], top: [[{ token: 151645, logprob: -0.125 }]], finish, weightVersions: [{ version: "v2", start: 0, end: 4 }] };
    const pending = new StepCollector();
    expect(pending.finished).toBe(false);
    pending.add(first);
    pending.add(second);
    expect(pending.finished).toBe(false);
    pending.add(third);
    expect(pending.finished).toBe(true);
    expect(pending.take()).toEqual({ ids: [1, 2, 3, 151645], logprobs: [-0.5, -0.25, Number.NaN, -0.125], top: [...first.top, ...second.top, ...third.top], promptIds: [7, 8], finish, weightVersions: third.weightVersions });
    expect(first.ids).toEqual([1, 2]);
    expect(first.logprobs).toEqual([-0.5, -0.25]);
    expect(first.top.length).toBe(2);
    // Taken, it is empty; a step added alone comes back as it came.
    expect(pending.take()).toBeUndefined();
    pending.add(second);
    expect(pending.take()).toBe(second);
  });
});
