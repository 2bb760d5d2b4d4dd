/**
 * Token-in suite (docs/token-in.md), against the real vLLM 0.33.0 and transformers (the Python
 * oracle):
 *
 * - Appended rendering: for every conversation of the rendering corpus (synthetic and recorded
 *   from the harness CLIs) and every assistant message in it, what model/ appends after that
 *   message (`appendedAfter`: its end-of-turn token, the later messages, the generation prompt)
 *   equals what vLLM's render of the whole conversation (its preprocessing, then transformers'
 *   apply_chat_template, then encode) holds after that message: the text is the rendered
 *   prompt's tail, the ids are the prompt ids' tail, and the tail starts right where the
 *   message's turn ends (as many turns closed before it as transformers closes rendering the
 *   conversation up to that message).
 * - Parsing: every output of the parsing corpus, as an engine returns it (the end-of-turn token
 *   last, or cut by max_tokens), derendered by model/ (`derenderChat`, `chatStreamDerenderer`
 *   in steps of 1, 3 and 8 tokens and the whole output as one, as the proxy derenders an engine
 *   stream's events that came in one read; thinking on and off) equals vLLM's own derender of the same tokens (its
 *   disaggregated chat path: detokenizer, then the chat server's parsers), message and deltas.
 * - The sampled ids as the engine gives them: vLLM's completions `logprobs` block with
 *   `return_tokens_as_token_ids` (its serving layer's own `_create_completion_logprobs`) is read
 *   back by the proxy's reader as the ids and logprobs sampled, and the policy simulator writes
 *   that block, chunk by chunk and whole, as vLLM writes it. The harness's logprob entries are
 *   those vLLM's chat route gives for the same candidates (`_create_chat_logprobs`: the first
 *   `top_logprobs`; token texts as its engine decodes them, a token that cuts a UTF-8 character
 *   corrected with the tokens before it).
 *
 * Needs .venv/reference (bash python/build-env.sh); a missing venv fails, never skips.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chatStreamDerenderer, derenderChat, loadModel, type DeltaMessage, type Model } from "../../model/index.ts";
import { startOracle, type Oracle } from "./oracle.ts";
import { CASES, harnessCases } from "./rendering-corpus.ts";
import { engineEnded, ENGINE_ENDINGS, IM_END, OUTPUTS, TOOLS } from "./parsing-corpus.ts";
import { normalizeDelta, type Answer, type Delta } from "./deltas.ts";
import { chatJsonAnswer, chatStreamResponse, engineAnswerReader } from "../../proxy/testing.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { parseSseText } from "../../lib/testing.ts";

const SLOW = 600_000;
let oracle: Oracle;
let model: Model;
const checked = { conversations: 0, appended: 0, appendedTokens: 0, outputs: 0, answers: 0, streams: 0, deltas: 0 };

beforeAll(async () => {
  [oracle, model] = await Promise.all([startOracle(), loadModel()]);
}, SLOW);
afterAll(async () => {
  await oracle?.close();
  console.log(
    `token-in suite: ${checked.appended} appended renderings (${checked.appendedTokens} tokens, after every assistant message of ${checked.conversations} conversations) equal vLLM's + transformers' rendering in context; ` +
      `${checked.outputs} outputs: ${checked.answers} derendered answers and ${checked.streams} streams (${checked.deltas} deltas) equal vLLM 0.33.0's derender`,
  );
});

const count = (text: string, piece: string) => text.split(piece).length - 1;

describe("appended rendering equals the template's rendering in context", () => {
  const cases = [...CASES, ...harnessCases()].filter((c) => c.request.continue_final_message !== true);
  test("the corpus has assistant messages to append after, synthetic and from every recorded harness", () => {
    const withAnswers = cases.filter((c) => (c.request.messages as { role: string }[]).some((m) => m.role === "assistant"));
    expect(withAnswers.length).toBeGreaterThanOrEqual(40);
  });
  for (const c of cases) {
    test(
      c.name,
      async () => {
        const prepared = model.prepare(c.request as never);
        const answers = prepared.conversation.flatMap((m, i) => (m.get("role") === "assistant" ? [i] : []));
        if (answers.length === 0) return;
        const ref = await oracle.call({ op: "vllm_render", request: c.request });
        expect(ref.error).toBeUndefined();
        checked.conversations++;
        for (const at of answers) {
          const appended = model.appendedAfter(prepared, at);
          const tail = appended.closer + appended.text;
          // The rendered prompt ends with exactly this, text and ids.
          expect(ref.text.endsWith(tail)).toBe(true);
          expect(ref.ids.slice(ref.ids.length - appended.ids.length - 1)).toEqual([appended.closerId, ...appended.ids]);
          // And the tail begins where the answer's turn ends: transformers, rendering the
          // conversation up to and with the answer, closes one turn more than the prompt has
          // closed before the tail (the answer's own end-of-turn is the tail's first token).
          const head = ref.text.slice(0, ref.text.length - tail.length);
          const upTo = await oracle.call({ op: "render", messages: ref.conversation.slice(0, at + 1), tools: c.request.tools ?? undefined, add_generation_prompt: false, chat_template_kwargs: c.request.chat_template_kwargs ?? undefined });
          expect(upTo.error).toBeUndefined();
          expect(count(head, appended.closer) + 1).toBe(count(upTo.text, appended.closer));
          expect(upTo.text.endsWith(appended.closer + "\n")).toBe(true);
          checked.appended++;
          checked.appendedTokens += appended.ids.length + 1;
        }
      },
      SLOW,
    );
  }
});


describe("token-in parsing equals vLLM 0.33.0's derender of the same tokens", () => {
  for (const output of OUTPUTS) {
    for (const toolParser of ["hermes", "qwen3_coder"]) {
      for (const [ending, thinking] of ENGINE_ENDINGS) {
        test(
          `${output.name}, ${toolParser}, ${ending}, thinking ${thinking ? "on" : "off"}`,
          async () => {
            const request = { messages: [{ role: "user", content: "q" }], tools: TOOLS, chat_template_kwargs: { enable_thinking: thinking } };
            const promptIds = model.renderChatIds(request);
            const { ids, finish } = engineEnded(model.tokenizer.encode(output.text), ending);
            const options = { ...request, toolParser, promptTokenIds: promptIds };

            const ref = await oracle.call({ op: "vllm_derender", request, ids, prompt_ids: promptIds, tool_parser: toolParser, finish_reason: finish.reason });
            expect(ref.error).toBeUndefined();
            const ours = derenderChat(model, options, ids, finish);
            const got: Answer = { reasoning: ours.message.reasoning, content: ours.message.content, tool_calls: ours.message.toolCalls.map((t) => ({ name: t.name, arguments: t.arguments })) };
            expect(got).toEqual({
              reasoning: ref.message.reasoning ?? null,
              content: ref.message.content ?? null,
              tool_calls: (ref.message.tool_calls ?? []).map((t: any) => ({ name: t.function.name, arguments: t.function.arguments })),
            });
            expect(ours.finishReason).toBe(ref.finish_reason);
            checked.answers++;

            for (const n of [1, 3, 8, ids.length]) {
              const refStream = await oracle.call({ op: "vllm_derender", request, ids, prompt_ids: promptIds, tool_parser: toolParser, stream: n, finish_reason: finish.reason });
              expect(refStream.error).toBeUndefined();
              const stream = chatStreamDerenderer(model, options);
              const steps: { delta: Delta; finish: string | null }[] = [];
              for (let i = 0; i < ids.length; i += n) {
                const last = i + n >= ids.length;
                const step = stream.push(ids.slice(i, i + n), last ? finish : undefined);
                steps.push({ delta: normalizeDelta(step.delta as DeltaMessage | null), finish: step.finishReason ?? null });
              }
              expect(steps).toEqual((refStream.deltas as { delta: any; finish_reason: string | null }[]).map((d) => ({ delta: normalizeDelta(d.delta), finish: d.finish_reason ?? null })));
              checked.streams++;
              checked.deltas += steps.length;
            }
          },
          SLOW,
        );
      }
    }
    checked.outputs++;
  }
});

test("a token that is a byte-order mark (U+FEFF) keeps its text, whole and split, derendered and streamed, as vLLM's detokenizer keeps it", async () => {
  const request = { messages: [{ role: "user", content: "q" }], chat_template_kwargs: { enable_thinking: false } };
  const promptIds = model.renderChatIds(request);
  const finish = { reason: "stop", stopToken: true };
  // "\ufeff" is one token; a BOM after other bytes of a token may be split across tokens.
  for (const text of ["\ufeffhello", "a\ufeffb \ufeff", "<think>\n\ufeff\n</think>\n\n\ufeff"]) {
    const ids = [...model.tokenizer.encode(text), IM_END];
    const ref = await oracle.call({ op: "vllm_derender", request, ids, prompt_ids: promptIds });
    expect(ref.error).toBeUndefined();
    expect(ref.message.content).toContain("\ufeff");
    expect(derenderChat(model, { ...request, promptTokenIds: promptIds }, ids, finish).message.content).toBe(ref.message.content);
    const refStream = await oracle.call({ op: "vllm_derender", request, ids, prompt_ids: promptIds, stream: 1 });
    const stream = chatStreamDerenderer(model, { ...request, promptTokenIds: promptIds });
    const deltas = ids.map((id, i) => normalizeDelta(stream.push([id], i === ids.length - 1 ? finish : undefined).delta as DeltaMessage | null));
    expect(deltas).toEqual((refStream.deltas as { delta: any }[]).map((d) => normalizeDelta(d.delta)));
  }
}, SLOW);

describe("the sampled ids as vLLM 0.33.0 writes them with return_tokens_as_token_ids (what token-in mode asks /v1/completions for)", () => {
  /** vLLM's logprobs block for `steps` (its serving layer's _create_completion_logprobs). */
  const vllmBlock = async (steps: { id: number; logprob: number; top?: [number, number][] }[], num: number, offset: number) => {
    const ref = await oracle.call({ op: "vllm_completion_logprobs", steps, num, offset, as_ids: true });
    expect(ref.error).toBeUndefined();
    return ref.logprobs as { text_offset: number[]; token_logprobs: number[]; tokens: string[]; top_logprobs: Record<string, number>[] };
  };

  test("the proxy's reader takes vLLM's block back to the ids, logprobs and alternatives sampled", async () => {
    const steps = [
      { id: 151667, logprob: -0.0001, top: [[198, -9.5]] as [number, number][] },
      { id: 198, logprob: -0.25, top: [[271, -1.5], [151668, -4]] as [number, number][] },
      { id: 0, logprob: -2.5, top: [[151645, -0.2]] as [number, number][] },
      { id: 151645, logprob: -0.01 },
    ];
    for (const num of [0, 2]) {
      const block = await vllmBlock(steps, num, 17);
      const step = engineAnswerReader("vllm", { top: true }).read({ choices: [{ index: 0, text: "", logprobs: block, finish_reason: null, stop_reason: null, token_ids: null, prompt_token_ids: null }] })!;
      expect(step.unreadable).toBeUndefined();
      expect(step.ids).toEqual(steps.map((s) => s.id));
      expect(step.logprobs).toEqual(steps.map((s) => s.logprob));
      expect(step.top).toEqual(block.top_logprobs.map((alternatives) => Object.entries(alternatives).map(([key, logprob]) => ({ token: Number(key.slice("token_id:".length)), logprob }))));
      expect(step.top!.map((alternatives) => alternatives[0]!.token)).toEqual(steps.map((s) => s.id));
    }
  }, SLOW);

  test("the harness's top_logprobs are what vLLM's chat route gives of the engine's candidates (the first top_logprobs, the sampled token first)", async () => {
    // Candidates as vLLM's engine hands them over for `logprobs: 2`: the sampled token, then the
    // two most likely but it; one entry fewer where the sampled token is one of those two.
    const steps = [
      { id: 151667, logprob: -0.0001, top: [[198, -9.5]] as [number, number][] },
      { id: 198, logprob: -2.25, top: [[271, -0.5], [151668, -1.5]] as [number, number][] },
      { id: 0, logprob: -0.5, top: [[151645, -1.2], [11, -2.5]] as [number, number][] },
      { id: IM_END, logprob: -0.01, top: [[0, -6]] as [number, number][] },
    ];
    for (const num of [0, 1, 2]) {
      // Token-in asks /v1/completions for the harness's top_logprobs as `logprobs`.
      const block = await vllmBlock(steps, num, 0);
      const chat = await oracle.call({ op: "vllm_chat_logprobs", steps, num });
      expect(chat.error).toBeUndefined();
      const context = { model, options: { promptTokenIds: [] } as never, modelName: "qwen3", prompt: [], logprobs: true, topLogprobs: num, reader: engineAnswerReader("vllm", { top: true }), onAnswer: () => {} };
      const body = { choices: [{ index: 0, text: "", logprobs: block, finish_reason: "stop", stop_reason: null, token_ids: null, prompt_token_ids: null }] };
      const answer = JSON.parse(chatJsonAnswer(context, JSON.stringify(body)));
      const vllms = (chat.logprobs.content as { top_logprobs: { token: string; logprob: number }[] }[]).map((e) =>
        e.top_logprobs.map((t) => ({ token: model.tokenizer.decode([Number(t.token.slice("token_id:".length))]), logprob: t.logprob })),
      );
      const proxys = (answer.choices[0].logprobs.content as { top_logprobs: { token: string; logprob: number }[] }[]).map((e) => e.top_logprobs.map((t) => ({ token: t.token, logprob: t.logprob })));
      expect(proxys).toEqual(vllms);
      expect(vllms.map((v) => v.length)).toEqual(steps.map(() => num));
    }
  }, SLOW);

  test("the harness's logprob entries are vLLM's for tokens that cut UTF-8 characters (token texts as its engine decodes them, bytes of those), whole and streamed", async () => {
    const ids = [...model.tokenizer.encode("数据 🦀 ok ṩ, ünï 😀😀 done"), IM_END];
    expect(ids.some((id) => model.tokenizer.decode([id]).endsWith("\ufffd"))).toBe(true);
    // Each position's candidates: the sampled token, then two others (the next sampled tokens: pieces of characters too).
    const steps = ids.map((id, i) => ({ id, logprob: -0.25, top: [[ids[(i + 1) % ids.length]!, -1.5], [ids[(i + 2) % ids.length]!, -2.5]] as [number, number][] }));
    const num = 2;
    const vllms = (await oracle.call({ op: "vllm_chat_logprob_entries", rows: steps.map((s) => [[s.id, s.logprob], ...s.top]), num })) as { content: unknown[]; error?: string };
    expect(vllms.error).toBeUndefined();
    const block = await vllmBlock(steps, num, 0);
    const context = { model, options: { promptTokenIds: [] } as never, modelName: "qwen3", prompt: [], logprobs: true, topLogprobs: num, reader: engineAnswerReader("vllm", { top: true }), onAnswer: () => {} };
    const choice = (logprobs: unknown, last: boolean) => ({ index: 0, text: "", logprobs, finish_reason: last ? "stop" : null, stop_reason: null, token_ids: null, prompt_token_ids: null });
    const whole = JSON.parse(chatJsonAnswer({ ...context, reader: engineAnswerReader("vllm", { top: true }) }, JSON.stringify({ choices: [choice(block, true)] })));
    expect(whole.choices[0].logprobs.content).toEqual(vllms.content);
    for (const per of [1, 3]) {
      let text = "";
      for (let at = 0; at < ids.length; at += per) {
        const end = Math.min(at + per, ids.length);
        const part = { text_offset: block.text_offset.slice(at, end), token_logprobs: block.token_logprobs.slice(at, end), tokens: block.tokens.slice(at, end), top_logprobs: block.top_logprobs.slice(at, end) };
        text += `data: ${JSON.stringify({ choices: [choice(part, end === ids.length)] })}\n\n`;
      }
      const engine = new Response(`${text}data: [DONE]\n\n`).body!;
      const answer = await chatStreamResponse({ ...context, reader: engineAnswerReader("vllm", { top: true }) }, engine).text();
      const streamed = parseSseText(answer)
        .filter((e) => e.data !== "[DONE]")
        .flatMap((e) => JSON.parse(e.data).choices?.[0]?.logprobs?.content ?? []);
      expect(streamed).toEqual(vllms.content);
    }
  }, SLOW);

  test("the policy simulator writes each chunk's block and the whole answer's as vLLM does, and echoes no prompt", async () => {
    const sim = await startPolicySimulator({ seed: 3, tokensPerChunk: 3 });
    try {
      const prompt = model.tokenizer.encode("<|im_start|>user\nWhat is in stock.csv?<|im_end|>\n<|im_start|>assistant\n");
      const body = { model: "qwen3", prompt, max_tokens: 40, logprobs: 0, return_tokens_as_token_ids: true, skip_special_tokens: false };
      /** vLLM's block for what a simulator block names: its ids (read back) and logprobs, from its first offset. */
      const expectVllms = async (block: { text_offset: number[]; token_logprobs: number[]; tokens: string[] }) => {
        const steps = block.tokens.map((t, i) => ({ id: Number(t.slice("token_id:".length)), logprob: block.token_logprobs[i]! }));
        expect(block).toEqual(await vllmBlock(steps, 0, block.text_offset[0] ?? 0));
      };
      const whole = (await (await fetch(`${sim.url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).json()) as any;
      expect(whole.choices[0].token_ids).toBeNull();
      expect(whole.choices[0].prompt_token_ids).toBeNull();
      expect(whole.choices[0].logprobs.tokens.length).toBeGreaterThan(3);
      await expectVllms(whole.choices[0].logprobs);
      const text = await (await fetch(`${sim.url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...body, stream: true }) })).text();
      const chunks = parseSseText(text).filter((e) => e.data !== "[DONE]").map((e) => JSON.parse(e.data).choices[0]).filter((c) => c?.logprobs?.tokens.length > 0);
      expect(chunks.length).toBeGreaterThan(2);
      let next = 0;
      const streamed: string[] = [];
      for (const c of chunks) {
        expect(c.token_ids).toBeNull();
        expect(c.prompt_token_ids).toBeNull();
        // Each chunk starts where vLLM's next_text_offsets left the last: its last offset plus its last token's length.
        expect(c.logprobs.text_offset[0]).toBe(next);
        await expectVllms(c.logprobs);
        next = c.logprobs.text_offset.at(-1) + c.logprobs.tokens.at(-1).length;
        streamed.push(...c.logprobs.tokens);
      }
      expect(streamed).toEqual(whole.choices[0].logprobs.tokens);
    } finally {
      await sim.stop();
    }
  }, SLOW);

  test("the policy simulator's candidates for `logprobs: k` are vLLM's: the sampled token, then the k most likely but it (k + 1 entries where it is not one of them)", async () => {
    const sim = await startPolicySimulator({ seed: 3 });
    try {
      const prompt = model.tokenizer.encode("<|im_start|>user\nWhat is in stock.csv?<|im_end|>\n<|im_start|>assistant\n");
      const k = 3;
      const body = { model: "qwen3", prompt, max_tokens: 80, logprobs: k, return_tokens_as_token_ids: true, skip_special_tokens: false };
      const whole = (await (await fetch(`${sim.url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).json()) as any;
      const block = whole.choices[0].logprobs as { text_offset: number[]; token_logprobs: number[]; tokens: string[]; top_logprobs: Record<string, number>[] };
      const id = (name: string) => Number(name.slice("token_id:".length));
      // The candidates the simulator's engine had: its dict, the sampled token first.
      const steps = block.tokens.map((t, i) => ({ id: id(t), logprob: block.token_logprobs[i]!, top: Object.entries(block.top_logprobs[i]!).slice(1).map(([name, lp]) => [id(name), lp] as [number, number]) }));
      expect(block).toEqual(await vllmBlock(steps, k, 0));
      for (const [i, candidates] of block.top_logprobs.entries()) {
        const [sampled, ...others] = Object.values(candidates);
        expect(sampled).toBe(block.token_logprobs[i]!);
        // k + 1 entries exactly when the sampled token is less likely than all k others.
        expect(Object.keys(candidates).length).toBe(others.length === k && others.every((lp) => lp > sampled!) ? k + 1 : k);
      }
      const sizes = new Set(block.top_logprobs.map((c) => Object.keys(c).length));
      expect([...sizes].sort()).toEqual([k, k + 1]);
    } finally {
      await sim.stop();
    }
  }, SLOW);
});
