/**
 * The request bodies the simulator accepts: the fields of vLLM's OpenAI server it acts on,
 * validated; every other field passes (vLLM ignores unknown fields too).
 */
import { z } from "zod";
import { errorResponse } from "./errors.ts";

const count = (what: string, min: number, max: number) =>
  z.number({ error: `expected ${what}` }).int({ error: `expected ${what}` }).min(min, { error: `expected ${what}` }).max(max, { error: `expected ${what}` });

const ToolSchema = z.looseObject({
  type: z.literal("function", { error: 'expected type "function"' }).default("function"),
  function: z.looseObject({
    name: z.string({ error: "expected the tool's name" }).min(1, { error: "expected the tool's name" }),
    description: z.string().nullish(),
    parameters: z.record(z.string(), z.unknown()).nullish(),
  }),
});

const ContentSchema = z.union([z.string(), z.array(z.looseObject({ type: z.string({ error: "expected a content part type" }) })), z.null()], {
  error: "expected a string, a list of content parts, or null",
});

// vLLM's request model (OpenAI's message types): content may be null only for the assistant;
// a tool call's arguments are a JSON string.
const MessageSchema = z.looseObject({
  // vLLM accepts any role (its custom message type); Qwen3's template renders only the known ones.
  role: z.string({ error: "expected a role (system, developer, user, assistant, tool)" }),
  content: ContentSchema.optional(),
  tool_calls: z
    .array(
      z.looseObject({
        id: z.string().optional(),
        type: z.string().optional(),
        function: z.looseObject({
          name: z.string({ error: "expected the function name" }),
          arguments: z.string({ error: "expected the arguments as a JSON string (vLLM's request model rejects other types)" }),
        }),
      }),
    )
    .nullish(),
  tool_call_id: z.string().nullish(),
  reasoning_content: z.string().nullish(),
  reasoning: z.string().nullish(),
}).refine((m) => m.content !== null || m.role === "assistant", {
  error: "expected a string or a list of content parts (only an assistant message may have null content)",
  path: ["content"],
});

const common = {
  model: z.string().nullish(),
  stream: z.boolean({ error: "expected true or false" }).nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish(), continuous_usage_stats: z.boolean().nullish() }).nullish(),
  n: count("an integer from 1 to 16", 1, 16).nullish(),
  seed: z.number().int().nullish(),
  return_token_ids: z.boolean({ error: "expected true or false" }).nullish(),
  return_tokens_as_token_ids: z.boolean({ error: "expected true or false" }).nullish(),
  stop: z.union([z.string(), z.array(z.string())], { error: "expected a string or a list of strings" }).nullish(),
};

export const ChatRequestSchema = z.looseObject({
  ...common,
  messages: z.array(MessageSchema, { error: "expected a list of messages" }).min(1, { error: "expected at least one message" }),
  tools: z.array(ToolSchema, { error: "expected a list of tools" }).min(1, { error: "`tools` must not be an empty array. Either provide at least one tool or omit the field entirely." }).nullish(),
  tool_choice: z.unknown().optional(),
  max_tokens: count("a positive integer", 1, 1 << 30).nullish(),
  max_completion_tokens: count("a positive integer", 1, 1 << 30).nullish(),
  logprobs: z.boolean({ error: "expected true or false" }).nullish(),
  top_logprobs: count("an integer from 0 to 20", 0, 20).nullish(),
  chat_template_kwargs: z.looseObject({ enable_thinking: z.boolean().nullish() }).nullish(),
  add_generation_prompt: z.boolean({ error: "expected true or false" }).nullish(),
  continue_final_message: z.boolean({ error: "expected true or false" }).nullish(),
  reasoning_effort: z.string({ error: "expected a string" }).nullish(),
  include_reasoning: z.boolean({ error: "expected true or false" }).nullish(),
  parallel_tool_calls: z.boolean({ error: "expected true or false" }).nullish(),
});
export type ChatRequestBody = z.infer<typeof ChatRequestSchema>;

export const CompletionRequestSchema = z.looseObject({
  ...common,
  prompt: z.union([z.string(), z.array(z.string()).length(1), z.array(z.number().int().min(0)).min(1), z.array(z.array(z.number().int().min(0)).min(1)).length(1)], {
    error: "expected a string or a list of token ids (one prompt per request)",
  }),
  max_tokens: count("a positive integer", 1, 1 << 30).nullish(),
  logprobs: count("an integer from 0 to 20", 0, 20).nullish(),
  echo: z.boolean({ error: "expected true or false" }).nullish(),
});
export type CompletionRequestBody = z.infer<typeof CompletionRequestSchema>;

/** `stop` as a list (OpenAI accepts a string or a list). */
export function stopList(stop: unknown): string[] {
  if (typeof stop === "string") return [stop];
  return Array.isArray(stop) ? stop.filter((s): s is string => typeof s === "string") : [];
}

/** The body as JSON, or the 400 the engine (`error`: its error writer) sends for a body that is not. */
export async function readBody(request: Request, error: (status: number, message: string) => Response = errorResponse): Promise<unknown | Response> {
  const text = await request.text();
  if (text.trim() === "") return error(400, "policy simulator: the request body is empty; expected a JSON object");
  try {
    const value = JSON.parse(text);
    if (typeof value !== "object" || value === null || Array.isArray(value)) return error(400, "policy simulator: expected a JSON object as the request body");
    return value;
  } catch (cause) {
    return error(400, `policy simulator: the request body is not valid JSON: ${(cause as Error).message}`);
  }
}
