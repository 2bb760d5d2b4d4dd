/**
 * `POST /v1/completions`: a raw prompt (text or token ids) continued by the policy. A prompt in
 * ChatML (what a proxy renders itself) is read back into turns so scripts match it too; there
 * is no tool parsing on this endpoint, so the policy answers in text.
 */
import { planDeltas } from "./deltas.ts";
import { describeIssues, errorResponse } from "./errors.ts";
import { generate, spanText } from "./generate.ts";
import { hashIds, mix } from "./hash.ts";
import { sampledLogprobs, tokenText } from "./logprobs.ts";
import type { SimContext } from "./options.ts";
import { decideTurn } from "./policy.ts";
import { CompletionRequestSchema, readBody, stopList, type CompletionRequestBody } from "./request.ts";
import { sleep, sseResponse } from "./sse.ts";
import { IM_END, loadTokenizer, type SimTokenizer } from "./tokenizer.ts";
import type { SimMessage } from "./types.ts";

/**
 * @example
 * await handleCompletion(context, new Request("http://sim/v1/completions", { method: "POST", body: '{"prompt": "Hello"}' }));
 */
export async function handleCompletion(ctx: SimContext, request: Request): Promise<Response> {
  const parsed = await readBody(request);
  if (parsed instanceof Response) return parsed;
  const result = CompletionRequestSchema.safeParse(parsed);
  if (!result.success) {
    const { message, param } = describeIssues(result.error);
    return errorResponse(400, message, param);
  }
  const body = result.data;
  const tokenizer = await loadTokenizer();
  const { promptIds, promptText } = readPrompt(tokenizer, body.prompt);
  const context = mix(ctx.seed, body.seed ?? 0, hashIds(promptIds));
  // vLLM's (and OpenAI's) default for this endpoint is 16 tokens.
  const maxTokens = body.max_tokens ?? 16;
  const topCount = body.logprobs ?? undefined;
  const meta = { id: `cmpl-${crypto.randomUUID().replaceAll("-", "")}`, created: Math.floor(Date.now() / 1000), model: body.model ?? ctx.model };

  const choices = Array.from({ length: body.n ?? 1 }, (_, index) => {
    const decision = decideTurn({ messages: chatmlTurns(promptText), tools: [], script: ctx.script, seed: ctx.seed, choiceIndex: index });
    const g = generate(tokenizer, { content: decision.turn.content, toolCalls: [] }, maxTokens, stopList(body.stop));
    const logprobs = sampledLogprobs(g.ids, mix(context, index), topCount ?? 0);
    const text = spanText(g, 0, g.byteEnds.at(-1) ?? 0, "content");
    ctx.record({ prompt_token_ids: promptIds, token_ids: g.ids, logprobs: logprobs.map((l) => l.logprob), text: tokenizer.decode(g.ids) });
    ctx.log(`policy simulator: completion ${promptIds.length}+${g.ids.length} tokens, ${decision.task ? `task ${decision.task}` : "default policy"}, finish ${g.finishReason}`);
    return { index, g, logprobs, text };
  });
  const completionTokens = choices.reduce((sum, c) => sum + c.g.ids.length, 0);
  const usage = { prompt_tokens: promptIds.length, total_tokens: promptIds.length + completionTokens, completion_tokens: completionTokens, prompt_tokens_details: null };
  const logprobBlock = (c: (typeof choices)[number], start: number, end: number, offset0: number) => {
    if (topCount === undefined) return null;
    const slice = c.logprobs.slice(start, end);
    const offsets: number[] = [];
    let offset = offset0;
    for (const l of slice) {
      offsets.push(offset);
      offset += l.id === IM_END ? 0 : tokenText(tokenizer, l.id).length;
    }
    return {
      tokens: slice.map((l) => tokenText(tokenizer, l.id)),
      token_logprobs: slice.map((l) => l.logprob),
      top_logprobs: slice.map((l) => Object.fromEntries([[tokenText(tokenizer, l.id), l.logprob], ...l.top.map((t) => [tokenText(tokenizer, t.id), t.logprob] as const)])),
      text_offset: offsets,
    };
  };

  if (!body.stream) {
    return Response.json(
      {
        ...meta,
        object: "text_completion",
        choices: choices.map((c) => ({
          index: c.index,
          text: c.text,
          logprobs: logprobBlock(c, 0, c.g.ids.length, 0),
          finish_reason: c.g.finishReason === "tool_calls" ? "stop" : c.g.finishReason,
          stop_reason: c.g.stopReason,
          prompt_logprobs: null,
          ...(body.return_token_ids ? { prompt_token_ids: promptIds, token_ids: c.g.ids } : {}),
        })),
        usage,
        system_fingerprint: "forge-policy-simulator",
      },
      { headers: { "x-forge-simulator": "1" } },
    );
  }
  const includeUsage = body.stream_options?.include_usage === true;
  return sseResponse(async function* () {
    await sleep(ctx.ttftMs, request.signal);
    const plans = choices.map((c) => planDeltas(c.g, ctx.tokensPerChunk, () => ""));
    const offsets = choices.map(() => 0);
    const longest = Math.max(...plans.map((p) => p.length));
    for (let k = 0; k < longest; k++) {
      if (k > 0) await sleep(ctx.chunkDelayMs, request.signal);
      if (request.signal.aborted) return;
      for (const c of choices) {
        const d = plans[c.index]![k];
        if (!d) continue;
        const last = k === plans[c.index]!.length - 1;
        const text = d.content ?? "";
        yield {
          ...meta,
          object: "text_completion",
          choices: [
            {
              index: c.index,
              text,
              logprobs: logprobBlock(c, d.start, d.end, offsets[c.index]!),
              finish_reason: last ? (c.g.finishReason === "tool_calls" ? "stop" : c.g.finishReason) : null,
              stop_reason: last ? c.g.stopReason : null,
              ...(body.return_token_ids ? { token_ids: c.g.ids.slice(d.start, d.end), ...(k === 0 ? { prompt_token_ids: promptIds } : {}) } : {}),
            },
          ],
        };
        offsets[c.index]! += text.length;
      }
    }
    if (includeUsage) yield { ...meta, object: "text_completion", choices: [], usage };
  }, request.signal);
}

/** Reads a ChatML prompt back into turns (the whole prompt is one user turn otherwise). */
export function chatmlTurns(prompt: string): SimMessage[] {
  if (!prompt.includes("<|im_start|>")) return [{ role: "user", content: prompt }];
  const turns: SimMessage[] = [];
  for (const part of prompt.split("<|im_start|>").slice(1)) {
    const newline = part.indexOf("\n");
    const role = (newline < 0 ? part : part.slice(0, newline)).trim();
    const content = newline < 0 ? "" : part.slice(newline + 1).split("<|im_end|>")[0]!;
    if (role === "user" && /^\s*<tool_response>/.test(content)) turns.push({ role: "tool", content });
    else if (role === "system" || role === "user" || role === "assistant") turns.push({ role, content });
  }
  // The open generation prompt (`<|im_start|>assistant\n`) is not a turn.
  if (turns.at(-1)?.role === "assistant" && turns.at(-1)?.content === "") turns.pop();
  return turns.length > 0 ? turns : [{ role: "user", content: prompt }];
}

function readPrompt(tokenizer: SimTokenizer, raw: CompletionRequestBody["prompt"]): { promptIds: number[]; promptText: string } {
  const first = Array.isArray(raw) ? raw[0] : raw;
  if (typeof first === "string") return { promptIds: tokenizer.encode(first), promptText: first };
  const ids = typeof first === "number" ? (raw as number[]) : (first as number[]);
  return { promptIds: ids, promptText: tokenizer.decode(ids) };
}
