/**
 * `POST /v1/chat/completions`, as vLLM (≥ 0.10.2, qwen3 reasoning parser, hermes tool parser)
 * answers it: prompt rendered with Qwen3's template and tokenized, the policy's turn sampled
 * as real Qwen3 token ids, `return_token_ids` / `logprobs` / `stream_options` honoured.
 */
import { renderChatSegments } from "./chatml.ts";
import { planDeltas } from "./deltas.ts";
import { describeIssues, errorResponse } from "./errors.ts";
import { finalMessage, generate, type Generation } from "./generate.ts";
import { hashId, hashIds, hashString, mix } from "./hash.ts";
import { logprobEntry, sampledLogprobs, type TokenLogprob } from "./logprobs.ts";
import type { SimContext } from "./options.ts";
import { decideTurn, type TurnDecision } from "./policy.ts";
import { ChatRequestSchema, readBody, stopList, type ChatRequestBody } from "./request.ts";
import { sleep, sseResponse } from "./sse.ts";
import { loadTokenizer, type SimTokenizer } from "./tokenizer.ts";
import { encodeSegments } from "./prompt-tokens.ts";
import type { SimMessage, SimTool } from "./types.ts";

interface ChoiceSample {
  index: number;
  g: Generation;
  logprobs: TokenLogprob[];
  callId: (i: number) => string;
}

/**
 * Handles one chat completion request.
 *
 * @example
 * await handleChat(context, new Request("http://sim/v1/chat/completions", { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }) }));
 */
export async function handleChat(ctx: SimContext, request: Request): Promise<Response> {
  const parsed = await readBody(request);
  if (parsed instanceof Response) return parsed;
  const result = ChatRequestSchema.safeParse(parsed);
  if (!result.success) {
    const { message, param } = describeIssues(result.error);
    return errorResponse(400, message, param);
  }
  const body = result.data;
  const tokenizer = await loadTokenizer();
  const messages = body.messages as SimMessage[];
  const tools = (body.tools ?? []) as SimTool[];
  const enableThinking = body.chat_template_kwargs?.enable_thinking ?? undefined;
  const promptIds = encodeSegments(tokenizer, renderChatSegments(messages, tools, { enableThinking }));
  const rollout = request.headers.get("x-forge-rollout") ?? undefined;
  const context = mix(ctx.seed, body.seed ?? 0, hashIds(promptIds), rollout ? hashString(rollout) : 0);
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? undefined;
  const topCount = body.logprobs ? Math.max(body.top_logprobs ?? 0, 0) : 0;

  const choices: ChoiceSample[] = [];
  const decisions: string[] = [];
  for (let index = 0; index < (body.n ?? 1); index++) {
    const decision = decideTurn({
      messages,
      tools,
      toolChoice: body.tool_choice,
      script: ctx.script,
      // Not the request's `seed`: a harness that sends a fresh one per call must not flip the
      // conversation's variant between turns (it still changes the sampled logprobs).
      seed: ctx.seed,
      conversationKey: rollout,
      choiceIndex: index,
      enableThinking,
    });
    decisions.push(describeDecision(decision));
    const g = generate(tokenizer, decision.turn, maxTokens, stopList(body.stop));
    const choiceContext = mix(context, index);
    const logprobs = sampledLogprobs(g.ids, choiceContext, topCount);
    choices.push({ index, g, logprobs, callId: (i) => hashId("call_", choiceContext, i) });
    ctx.record({ prompt_token_ids: promptIds, token_ids: g.ids, logprobs: logprobs.map((l) => l.logprob), text: tokenizer.decode(g.ids) });
    ctx.log(
      `policy simulator: chat ${promptIds.length}+${g.ids.length} tokens, ${decision.task ? `task ${decision.task} step ${decision.step}${decision.failing ? " (failing variant)" : ""}` : "default policy"}, finish ${g.finishReason}`,
    );
  }
  const meta = { id: `chatcmpl-${crypto.randomUUID().replaceAll("-", "")}`, created: Math.floor(Date.now() / 1000), model: body.model ?? ctx.model };
  const completionTokens = choices.reduce((sum, c) => sum + c.g.ids.length, 0);
  const usage = { prompt_tokens: promptIds.length, total_tokens: promptIds.length + completionTokens, completion_tokens: completionTokens, prompt_tokens_details: null };
  // What the simulated policy chose, per choice (for logs and tests; a real model has no such header).
  const policyHeader = { "x-forge-simulator-policy": decisions.join(", ") };
  if (body.stream) {
    const response = streamChat(ctx, request.signal, body, tokenizer, promptIds, choices, meta, usage);
    response.headers.set("x-forge-simulator-policy", policyHeader["x-forge-simulator-policy"]);
    return response;
  }

  return Response.json(
    {
      ...meta,
      object: "chat.completion",
      choices: choices.map((c) => {
        const message = finalMessage(c.g);
        return {
          index: c.index,
          message: {
            role: "assistant",
            content: message.content === "" && message.toolCalls.length > 0 ? null : message.content,
            refusal: null,
            ...(message.reasoning !== undefined ? { reasoning_content: message.reasoning } : {}),
            tool_calls: message.toolCalls.map((call, i) => ({ id: c.callId(i), type: "function", function: { name: call.name, arguments: call.arguments } })),
          },
          logprobs: body.logprobs ? { content: c.logprobs.map((l) => logprobEntry(tokenizer, l)) } : null,
          finish_reason: finishReasonOf(c.g, message),
          stop_reason: c.g.stopReason,
          ...(body.return_token_ids ? { token_ids: c.g.ids } : {}),
        };
      }),
      usage,
      prompt_logprobs: null,
      ...(body.return_token_ids ? { prompt_token_ids: promptIds } : {}),
      system_fingerprint: "forge-policy-simulator",
    },
    { headers: { "x-forge-simulator": "1", ...policyHeader } },
  );
}

/** vLLM reports "tool_calls" whenever the tool parser found calls, whatever ended generation. */
function finishReasonOf(g: Generation, message: ReturnType<typeof finalMessage>): string {
  if (message.toolCalls.length > 0) return "tool_calls";
  return g.finishReason === "tool_calls" ? "stop" : g.finishReason;
}

/** `task=NAME step=N variant=ok|failing`, or `default step=N`. */
export function describeDecision(decision: TurnDecision): string {
  return decision.task ? `task=${decision.task} step=${decision.step} variant=${decision.failing ? "failing" : "ok"}` : `default step=${decision.step}`;
}

function streamChat(
  ctx: SimContext,
  signal: AbortSignal,
  body: ChatRequestBody,
  tokenizer: SimTokenizer,
  promptIds: number[],
  choices: ChoiceSample[],
  meta: { id: string; created: number; model: string },
  usage: Record<string, unknown>,
): Response {
  const includeUsage = body.stream_options?.include_usage === true;
  const continuous = includeUsage && body.stream_options?.continuous_usage_stats === true;
  const chunk = (choiceList: unknown[], extra: Record<string, unknown> = {}) => ({ ...meta, object: "chat.completion.chunk", choices: choiceList, ...extra });
  return sseResponse(async function* () {
    await sleep(ctx.ttftMs, signal);
    // vLLM opens with an empty assistant delta per choice; the prompt ids ride on the first chunk.
    for (const c of choices) {
      yield chunk(
        [{ index: c.index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null, ...(body.return_token_ids ? { token_ids: [] } : {}) }],
        body.return_token_ids && c.index === 0 ? { prompt_token_ids: promptIds } : {},
      );
    }
    const plans = choices.map((c) => planDeltas(c.g, ctx.tokensPerChunk, c.callId));
    const generated = choices.map(() => 0);
    const longest = Math.max(...plans.map((p) => p.length));
    for (let k = 0; k < longest; k++) {
      if (k > 0) await sleep(ctx.chunkDelayMs, signal);
      if (signal.aborted) return;
      for (const c of choices) {
        const d = plans[c.index]![k];
        if (!d) continue;
        const last = k === plans[c.index]!.length - 1;
        generated[c.index] = d.end;
        const delta: Record<string, unknown> = {};
        if (d.reasoning !== undefined) delta.reasoning_content = d.reasoning;
        if (d.content !== undefined || (!d.reasoning && !d.toolCalls)) delta.content = d.content ?? "";
        if (d.toolCalls) delta.tool_calls = d.toolCalls;
        const message = last ? finalMessage(c.g) : undefined;
        const finish = message ? finishReasonOf(c.g, message) : null;
        const completionSoFar = generated.reduce((a, b) => a + b, 0);
        yield chunk(
          [
            {
              index: c.index,
              delta,
              logprobs: body.logprobs ? { content: c.logprobs.slice(d.start, d.end).map((l) => logprobEntry(tokenizer, l)) } : null,
              finish_reason: finish,
              ...(last ? { stop_reason: c.g.stopReason } : {}),
              ...(body.return_token_ids ? { token_ids: c.g.ids.slice(d.start, d.end) } : {}),
            },
          ],
          continuous ? { usage: { prompt_tokens: promptIds.length, completion_tokens: completionSoFar, total_tokens: promptIds.length + completionSoFar } } : {},
        );
      }
    }
    if (includeUsage) yield chunk([], { usage });
  }, signal);
}
