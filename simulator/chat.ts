/**
 * `POST /v1/chat/completions`, as the engine of the simulator's flavour (vLLM 0.33.0 or SGLang
 * 0.5.23, qwen3 reasoning parser, hermes tool parser) answers it: the prompt rendered by model/
 * (vLLM's preprocessing, Qwen3's own chat template, the whole text tokenized), the policy's turn
 * sampled as Qwen3 writes it and parsed back by model/'s parsers, the answer written by the
 * flavour (flavours/: its id fields, logprobs, usage, errors).
 */
import { ChatRequestError, ChatTemplateError } from "../model/index.ts";
import { describeIssues } from "./errors.ts";
import { generate } from "./generate.ts";
import { hashId, hashIds, hashString, mix } from "./hash.ts";
import { sampledLogprobs } from "./logprobs.ts";
import type { SimContext } from "./context.ts";
import { decideTurn, type TurnDecision } from "./policy.ts";
import { ChatRequestSchema, readBody, stopList } from "./request.ts";
import { sleep, sseResponse } from "./sse.ts";
import { loadSimModel } from "./model.ts";
import type { SimMessage, SimTool } from "./types.ts";
import { whileGenerating } from "./flavours/pause.ts";
import type { ChatAnswer, SampledChoice } from "./flavours/types.ts";

/**
 * Handles one chat completion request.
 *
 * @example
 * await handleChat(context, new Request("http://sim/v1/chat/completions", { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }) }));
 */
export async function handleChat(ctx: SimContext, request: Request): Promise<Response> {
  const parsed = await readBody(request, ctx.flavour.error);
  if (parsed instanceof Response) return parsed;
  const result = ChatRequestSchema.safeParse(parsed);
  if (!result.success) {
    const { message, param } = describeIssues(result.error);
    return ctx.flavour.error(400, message, param);
  }
  const body = result.data;
  const refused = ctx.flavour.checkChat(body, request) ?? (await whileGenerating(ctx, request.signal));
  if (refused) return refused;
  const model = await loadSimModel(ctx.modelSpec);
  const tokenizer = model.tokenizer;
  const messages = body.messages as SimMessage[];
  const tools = (body.tools ?? []) as SimTool[];
  const enableThinking = body.chat_template_kwargs?.enable_thinking ?? (body.reasoning_effort != null && body.reasoning_effort !== "auto" ? body.reasoning_effort !== "none" : undefined);
  let promptIds: number[];
  try {
    promptIds = model.renderChatIds(body);
  } catch (error) {
    if (error instanceof ChatRequestError) return ctx.flavour.error(400, error.message, error.param);
    if (error instanceof ChatTemplateError) return ctx.flavour.error(400, error.message);
    throw error;
  }
  const rollout = request.headers.get("x-forge-rollout") ?? undefined;
  const context = mix(ctx.seed, body.seed ?? 0, hashIds(promptIds), rollout ? hashString(rollout) : 0);
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? undefined;
  const topCount = body.logprobs ? Math.max(body.top_logprobs ?? 0, 0) : 0;

  const choices: SampledChoice[] = [];
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
    // Qwen3's template leaves thinking on unless enable_thinking is false; Qwen3-Coder never thinks.
    const g = generate(tokenizer, decision.turn, { thinking: ctx.thinks && enableThinking !== false, format: ctx.toolFormat, maxTokens, stop: stopList(body.stop) });
    const choiceContext = mix(context, index);
    const logprobs = sampledLogprobs(g.ids, choiceContext, topCount);
    const callId = (i: number) => hashId("call_", choiceContext, i);
    let calls = 0;
    const parser = model.outputParser({ ...body, tools: body.tools, promptTokenIds: promptIds, newToolCallId: () => callId(calls++) });
    choices.push({ index, g, logprobs, callId, parser });
    // The proxy's start-up probe (x-forge-probe) is not a rollout's call: tests compare samples with records.
    if (request.headers.get("x-forge-probe") !== "1") ctx.record({ prompt_token_ids: promptIds, token_ids: g.ids, logprobs: logprobs.map((l) => l.logprob), text: tokenizer.decode(g.ids), ...(rollout ? { rollout } : {}) });
    ctx.log(
      `policy simulator: chat ${promptIds.length}+${g.ids.length} tokens, ${decision.task ? `task ${decision.task} step ${decision.step}${decision.failing ? " (failing variant)" : ""}` : "default policy"}, finish ${g.stopReason !== null ? "stop string" : g.finishReason}`,
    );
  }
  const created = Math.floor(Date.now() / 1000);
  const completionTokens = choices.reduce((sum, c) => sum + c.g.ids.length, 0);
  const usage = { prompt_tokens: promptIds.length, total_tokens: promptIds.length + completionTokens, completion_tokens: completionTokens };
  // vLLM answers with its served name when the request names none; SGLang echoes the request's.
  const answer: ChatAnswer = { request, body, tokenizer, promptIds, choices, model: body.model ?? ctx.model, created, usage };
  // What the simulated policy chose, per choice (for logs and tests; a real model has no such header).
  const policyHeader = { "x-forge-simulator-policy": decisions.join(", ") };
  if (body.stream) {
    const response = sseResponse(async function* () {
      await sleep(ctx.ttftMs, request.signal);
      yield* ctx.flavour.chatStream(answer, ctx);
    }, request.signal);
    response.headers.set("x-forge-simulator-policy", policyHeader["x-forge-simulator-policy"]);
    return response;
  }
  return Response.json(ctx.flavour.chatJson(answer, ctx), { headers: { "x-forge-simulator": "1", ...policyHeader } });
}

/** `task=NAME step=N variant=ok|failing`, or `default step=N`. */
export function describeDecision(decision: TurnDecision): string {
  return decision.task ? `task=${decision.task} step=${decision.step} variant=${decision.failing ? "failing" : "ok"}` : `default step=${decision.step}`;
}
