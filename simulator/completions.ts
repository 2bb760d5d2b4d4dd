/**
 * `POST /v1/completions`: a raw prompt (text or token ids) continued by the policy. A prompt
 * that is a rendered Qwen3 chat (what a proxy renders itself) is read back into turns and
 * tools, and continued exactly as the chat endpoint samples that turn (think block, content,
 * `<tool_call>` blocks); the text comes back raw, as vLLM's completions endpoint parses nothing.
 * Any other prompt gets a text answer.
 */
import { describeIssues } from "./errors.ts";
import { coveredBytes, generate, visibleText } from "./generate.ts";
import { hashIds, hashString, mix } from "./hash.ts";
import { sampledLogprobs } from "./logprobs.ts";
import type { SimContext } from "./context.ts";
import { decideTurn } from "./policy.ts";
import { CompletionRequestSchema, readBody, stopList, type CompletionRequestBody } from "./request.ts";
import { sleep, sseResponse } from "./sse.ts";
import { loadTokenizer, type SimTokenizer } from "./model.ts";
import type { JsonSchema, SimMessage, SimTool } from "./types.ts";
import { whileGenerating } from "./flavours/pause.ts";
import type { CompletionAnswer } from "./flavours/types.ts";

/**
 * @example
 * await handleCompletion(context, new Request("http://sim/v1/completions", { method: "POST", body: '{"prompt": "Hello"}' }));
 */
export async function handleCompletion(ctx: SimContext, request: Request): Promise<Response> {
  const parsed = await readBody(request, ctx.flavour.error);
  if (parsed instanceof Response) return parsed;
  const result = CompletionRequestSchema.safeParse(parsed);
  if (!result.success) {
    const { message, param } = describeIssues(result.error);
    return ctx.flavour.error(400, message, param);
  }
  const body = result.data;
  const refused = await whileGenerating(ctx, request.signal);
  if (refused) return refused;
  const tokenizer = await loadTokenizer();
  const { promptIds, promptText } = readPrompt(tokenizer, body.prompt);
  // The proxy names the rollout (x-forge-rollout): one conversation keeps its variant, as on the chat route.
  const rollout = request.headers.get("x-forge-rollout") ?? undefined;
  const context = mix(ctx.seed, body.seed ?? 0, hashIds(promptIds), rollout ? hashString(rollout) : 0);
  // vLLM's (and OpenAI's) default for this endpoint is 16 tokens.
  const maxTokens = body.max_tokens ?? 16;
  const topCount = body.logprobs ?? undefined;

  const choices = Array.from({ length: body.n ?? 1 }, (_, index) => {
    const chat = chatPrompt(promptText, ctx);
    const decision = decideTurn({ messages: chat?.turns ?? chatmlTurns(promptText), tools: chat?.tools ?? [], script: ctx.script, seed: ctx.seed, conversationKey: rollout, choiceIndex: index, enableThinking: chat?.thinking });
    const turn = chat ? decision.turn : { content: decision.turn.content, toolCalls: [] };
    const g = generate(tokenizer, turn, { thinking: chat?.thinking ?? false, format: ctx.toolFormat, maxTokens, stop: stopList(body.stop) });
    // One alternative more than asked: vLLM's candidates hold k + 1 where the sampled token is not among the k most likely (logprob-blocks.ts).
    const logprobs = sampledLogprobs(g.ids, mix(context, index), topCount === undefined ? 0 : topCount + 1);
    const text = visibleText(g, 0, coveredBytes(g));
    ctx.record({ prompt_token_ids: promptIds, token_ids: g.ids, logprobs: logprobs.map((l) => l.logprob), text: tokenizer.decode(g.ids), ...(rollout ? { rollout } : {}) });
    ctx.log(`policy simulator: completion ${promptIds.length}+${g.ids.length} tokens, ${decision.task ? `task ${decision.task}` : "default policy"}, finish ${g.finishReason}`);
    return { index, g, logprobs, text, callId: () => "", parser: null };
  });
  const completionTokens = choices.reduce((sum, c) => sum + c.g.ids.length, 0);
  const usage = { prompt_tokens: promptIds.length, total_tokens: promptIds.length + completionTokens, completion_tokens: completionTokens };
  // The prompt's own logprobs, for an echo with logprobs: none for the first token (nothing precedes it).
  const promptLogprobs = body.echo && topCount !== undefined ? [null, ...sampledLogprobs(promptIds.slice(1), mix(context, 0x70), topCount + 1)] : [];
  const answer: CompletionAnswer = { request, body, tokenizer, promptIds, promptText, promptLogprobs, choices, model: body.model ?? ctx.model, created: Math.floor(Date.now() / 1000), usage };
  if (!body.stream) return Response.json(ctx.flavour.completionJson(answer, ctx), { headers: { "x-forge-simulator": "1" } });
  return sseResponse(async function* () {
    await sleep(ctx.ttftMs, request.signal);
    yield* ctx.flavour.completionStream(answer, ctx);
  }, request.signal);
}

const GENERATION_PROMPT = "<|im_start|>assistant\n";
const EMPTY_THINK = "<think>\n\n</think>\n\n";

/**
 * A prompt that is a rendered Qwen3 (or Qwen3-Coder) chat waiting for the assistant: its turns,
 * the tools of its system block, and whether it leaves thinking on (no empty think block after
 * the header; never for a model that does not think).
 *
 * @example
 * chatPrompt("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", { toolFormat: "hermes", thinks: true })?.thinking // true
 */
export function chatPrompt(prompt: string, model: Pick<SimContext, "toolFormat" | "thinks">): { turns: SimMessage[]; tools: SimTool[]; thinking: boolean } | undefined {
  const open = prompt.endsWith(GENERATION_PROMPT);
  if (!open && !prompt.endsWith(GENERATION_PROMPT + EMPTY_THINK)) return undefined;
  const thinking = open && model.thinks;
  const system = prompt.split("<|im_end|>")[0] ?? "";
  if (model.toolFormat === "qwen3_coder") return { turns: chatmlTurns(prompt), tools: xmlTools(system), thinking };
  const tools: SimTool[] = [];
  const block = /<tools>\n([\s\S]*?)\n<\/tools>/.exec(system);
  for (const line of block?.[1]?.split("\n") ?? []) {
    try {
      const tool = JSON.parse(line) as SimTool;
      if (tool?.function?.name) tools.push(tool);
    } catch {
      // Not a tool line.
    }
  }
  return { turns: chatmlTurns(prompt), tools, thinking };
}

/**
 * The tools of Qwen3-Coder's system block, read back from the XML its template writes
 * (`<function>\n<name>…</name>\n<description>…</description>\n<parameters>\n<parameter>\n<name>…</name>\n<type>…</type>…`):
 * names, descriptions, parameter types and the required list, what the policy plans calls with.
 */
export function xmlTools(system: string): SimTool[] {
  const block = /<tools>([\s\S]*?)\n<\/tools>/.exec(system)?.[1] ?? "";
  const tag = (text: string, name: string) => new RegExp(`\\n<${name}>([\\s\\S]*?)</${name}>`).exec(text)?.[1];
  const required = (text: string | undefined) => {
    try {
      const list = JSON.parse(text ?? "[]") as unknown;
      return Array.isArray(list) ? list.filter((x): x is string => typeof x === "string") : [];
    } catch {
      return [];
    }
  };
  return block
    .split("\n<function>")
    .slice(1)
    .flatMap((fn) => {
      const name = /^\n<name>([^<]*)<\/name>/.exec(fn)?.[1];
      if (!name) return [];
      const parameters = /\n<parameters>([\s\S]*)\n<\/parameters>/.exec(fn)?.[1] ?? "";
      const properties: Record<string, JsonSchema> = {};
      for (const p of parameters.split("\n<parameter>").slice(1)) {
        const pname = tag(p, "name");
        if (!pname) continue;
        const type = tag(p, "type");
        const description = tag(p, "description");
        properties[pname] = { ...(type ? { type } : {}), ...(description !== undefined ? { description } : {}) };
      }
      const afterParams = parameters.slice(parameters.lastIndexOf("\n</parameter>") + 1);
      const description = tag(fn.slice(0, fn.indexOf("\n<parameters>") + 1 || undefined), "description");
      return [{ type: "function" as const, function: { name, ...(description !== undefined ? { description } : {}), parameters: { type: "object", properties, required: required(tag(afterParams, "required")) } } }];
    });
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
