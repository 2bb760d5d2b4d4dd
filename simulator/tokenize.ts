/**
 * vLLM's `POST /tokenize` (a prompt, or chat messages rendered with the chat template) and
 * `POST /detokenize`, at the server root. The proxy answers Anthropic `count_tokens` with it.
 */
import { z } from "zod";
import { ChatRequestError, ChatTemplateError } from "../model/index.ts";
import { describeIssues, errorResponse } from "./errors.ts";
import { loadSimModel, type SimTokenizer } from "./model.ts";
import type { SimContext } from "./context.ts";
import { ChatRequestSchema, readBody } from "./request.ts";

const MAX_MODEL_LEN = 131072;

const PromptTokenizeSchema = z.looseObject({ prompt: z.string({ error: "expected the prompt text" }), return_token_strs: z.boolean().nullish() });
const ChatTokenizeSchema = z.looseObject({
  messages: ChatRequestSchema.shape.messages,
  tools: ChatRequestSchema.shape.tools,
  add_generation_prompt: z.boolean().nullish(),
  continue_final_message: z.boolean().nullish(),
  chat_template_kwargs: ChatRequestSchema.shape.chat_template_kwargs,
  return_token_strs: z.boolean().nullish(),
});
const DetokenizeSchema = z.looseObject({ tokens: z.array(z.number().int().min(0), { error: "expected a list of token ids" }) });

/**
 * @example
 * await handleTokenize(ctx, new Request("http://sim/tokenize", { method: "POST", body: '{"prompt": "Hello"}' })); // {count: 1, tokens: [9707], ...}
 */
export async function handleTokenize(ctx: Pick<SimContext, "modelSpec">, request: Request): Promise<Response> {
  const body = await readBody(request);
  if (body instanceof Response) return body;
  const model = await loadSimModel(ctx.modelSpec);
  const tokenizer = model.tokenizer;
  const isChat = "messages" in (body as object);
  const parsed = isChat ? ChatTokenizeSchema.safeParse(body) : PromptTokenizeSchema.safeParse(body);
  if (!parsed.success) return errorResponse(400, describeIssues(parsed.error).message, describeIssues(parsed.error).param);
  let tokens: number[];
  if (isChat) {
    try {
      tokens = model.renderChatIds(parsed.data as z.infer<typeof ChatTokenizeSchema>);
    } catch (error) {
      if (error instanceof ChatRequestError) return errorResponse(400, error.message, error.param);
      if (error instanceof ChatTemplateError) return errorResponse(400, error.message);
      throw error;
    }
  } else {
    tokens = tokenizer.encode((parsed.data as z.infer<typeof PromptTokenizeSchema>).prompt);
  }
  const strs = parsed.data.return_token_strs ? tokenStrings(tokenizer, tokens) : null;
  return Response.json({ count: tokens.length, max_model_len: MAX_MODEL_LEN, tokens, token_strs: strs }, { headers: { "x-forge-simulator": "1" } });
}

export async function handleDetokenize(request: Request): Promise<Response> {
  const body = await readBody(request);
  if (body instanceof Response) return body;
  const parsed = DetokenizeSchema.safeParse(body);
  if (!parsed.success) return errorResponse(400, describeIssues(parsed.error).message, describeIssues(parsed.error).param);
  const tokenizer = (await loadSimModel()).tokenizer;
  return Response.json({ prompt: tokenizer.decode(parsed.data.tokens) }, { headers: { "x-forge-simulator": "1" } });
}

function tokenStrings(tokenizer: SimTokenizer, ids: number[]): string[] {
  return ids.map((id) => tokenizer.decode([id]));
}
