/**
 * Chat Completions response → Responses API `response` object.
 */
import type { ChatResponse, ChatToolCall, ChatUsage } from "../chat-types.ts";
import { reasoningOf } from "../chat-types.ts";
import type { ToolCatalogue } from "./tools.ts";

// The echoed request fields are JSON of many shapes.
type Json = any;

export interface ResponsesContext {
  /** The harness's request body: model, instructions, tools, ... are echoed back. */
  request: Json;
  catalogue: ToolCatalogue;
  /** Response id; defaults to one derived from the upstream id. */
  responseId?: string;
  createdAt?: number;
}

/**
 * Responses usage from Chat usage.
 *
 * @example
 * responsesUsage({ prompt_tokens: 10, completion_tokens: 2 }).total_tokens // 12
 */
export function responsesUsage(u: ChatUsage | null | undefined) {
  const input = u?.prompt_tokens ?? 0;
  const output = u?.completion_tokens ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u?.prompt_tokens_details?.cached_tokens ?? 0, cache_write_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: u?.completion_tokens_details?.reasoning_tokens ?? 0 },
    total_tokens: u?.total_tokens ?? input + output,
  };
}

/**
 * The `response` envelope with everything but output/status/usage echoed from the request.
 *
 * @example
 * responseEnvelope({ request: { model: "m" }, catalogue: { tools: [], origins: new Map(), dropped: [] } }, "resp_1", "in_progress").status
 * // "in_progress"
 */
export function responseEnvelope(ctx: ResponsesContext, id: string, status: string) {
  const r = ctx.request ?? {};
  return {
    id,
    object: "response" as const,
    created_at: ctx.createdAt ?? Math.floor(Date.now() / 1000),
    status,
    background: false,
    error: null as null | { code: string; message: string },
    incomplete_details: null as null | { reason: string },
    instructions: r.instructions ?? null,
    max_output_tokens: r.max_output_tokens ?? null,
    metadata: r.metadata ?? {},
    model: String(r.model ?? ""),
    output: [] as Json[],
    parallel_tool_calls: r.parallel_tool_calls ?? true,
    previous_response_id: null,
    prompt_cache_key: r.prompt_cache_key ?? null,
    reasoning: r.reasoning ?? null,
    store: r.store ?? false,
    temperature: r.temperature ?? null,
    text: r.text ?? { format: { type: "text" } },
    tool_choice: r.tool_choice ?? "auto",
    tools: Array.isArray(r.tools) ? r.tools : [],
    top_p: r.top_p ?? null,
    truncation: r.truncation ?? "disabled",
    usage: null as null | ReturnType<typeof responsesUsage>,
    user: r.user ?? null,
  };
}

/**
 * A Chat tool call as the Responses output item the harness declared it as
 * (function_call, with its namespace if any, or custom_tool_call).
 *
 * @example
 * toolCallItem({ id: "call_1", type: "function", function: { name: "shell", arguments: "{}" } },
 *   { tools: [], origins: new Map(), dropped: [] }, "fc_1", "completed")
 * // { type: "function_call", id: "fc_1", call_id: "call_1", name: "shell", arguments: "{}", status: "completed" }
 */
export function toolCallItem(call: ChatToolCall, catalogue: ToolCatalogue, itemId: string, status: string): Json {
  const origin = catalogue.origins.get(call.function.name);
  if (origin?.kind === "custom") {
    return { type: "custom_tool_call", id: itemId, call_id: call.id, name: origin.name, input: customInput(call.function.arguments), status };
  }
  const item: Json = { type: "function_call", id: itemId, call_id: call.id, name: origin?.name ?? call.function.name, arguments: call.function.arguments, status };
  if (origin?.namespace) item.namespace = origin.namespace;
  return item;
}

/**
 * The raw input of a freeform tool from the `{input}` object the Chat model produced.
 *
 * @example
 * customInput('{"input":"ls -la"}') // "ls -la"
 * customInput("not json")           // "not json"
 */
export function customInput(args: string): string {
  try {
    const v = JSON.parse(args);
    if (v && typeof v === "object" && typeof v.input === "string") return v.input;
  } catch {
    // a model that wrote the raw input directly
  }
  return args;
}

/** Item ids are derived from the response id so a record's output is reproducible. */
export function itemId(prefix: string, responseId: string, n: number): string {
  return `${prefix}_${responseId.replace(/^resp_/, "")}_${n}`;
}

/**
 * Translate a non-streaming Chat response into a Responses `response` object.
 *
 * @example
 * const r = chatToResponsesResponse(
 *   { id: "c1", choices: [{ message: { content: "hi" }, finish_reason: "stop" }] },
 *   { request: { model: "m" }, catalogue: { tools: [], origins: new Map(), dropped: [] } },
 * );
 * r.output[0].content[0].text // "hi"; r.status === "completed"
 */
export function chatToResponsesResponse(chat: ChatResponse, ctx: ResponsesContext) {
  const id = ctx.responseId ?? `resp_${chat.id ?? crypto.randomUUID().replaceAll("-", "")}`;
  const choice = chat.choices?.[0];
  const msg = choice?.message ?? {};
  const truncated = choice?.finish_reason === "length";
  const itemStatus = truncated ? "incomplete" : "completed";
  const out = responseEnvelope(ctx, id, truncated ? "incomplete" : "completed");
  let n = 0;
  const reasoning = reasoningOf(msg);
  if (reasoning !== "") {
    out.output.push({ type: "reasoning", id: itemId("rs", id, n++), summary: [], content: [{ type: "reasoning_text", text: reasoning }], status: itemStatus });
  }
  if (typeof msg.content === "string" && msg.content !== "") {
    out.output.push({
      type: "message",
      id: itemId("msg", id, n++),
      role: "assistant",
      status: itemStatus,
      content: [{ type: "output_text", text: msg.content, annotations: [], logprobs: [] }],
    });
  }
  for (const call of msg.tool_calls ?? []) out.output.push(toolCallItem(call, ctx.catalogue, itemId("fc", id, n++), itemStatus));
  if (truncated) out.incomplete_details = { reason: "max_output_tokens" };
  out.usage = responsesUsage(chat.usage);
  return out;
}
