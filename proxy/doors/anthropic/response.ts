/**
 * Chat Completions response → Anthropic Messages `message` object.
 */
import type { ChatResponse, ChatUsage } from "../chat-types.ts";
import { reasoningOf } from "../chat-types.ts";

export type AnthropicStopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use";

export interface AnthropicContext {
  /** The model name the harness asked for (echoed back, not the upstream's name). */
  model: string;
  /** The request's stop_sequences, to tell a stop sequence from a natural end. */
  stopSequences?: string[];
}

/**
 * Map a Chat finish_reason (and vLLM's `stop_reason`, the matched stop string) to Anthropic's.
 *
 * @example
 * anthropicStopReason("tool_calls", null, []) // { stop_reason: "tool_use", stop_sequence: null }
 * anthropicStopReason("stop", "###", ["###"]) // { stop_reason: "stop_sequence", stop_sequence: "###" }
 */
export function anthropicStopReason(
  finish: string | null | undefined,
  stopReason: string | number | null | undefined,
  stopSequences: string[] = [],
): { stop_reason: AnthropicStopReason; stop_sequence: string | null } {
  if (finish === "length") return { stop_reason: "max_tokens", stop_sequence: null };
  if (finish === "tool_calls" || finish === "function_call") return { stop_reason: "tool_use", stop_sequence: null };
  if (typeof stopReason === "string" && stopSequences.includes(stopReason)) {
    return { stop_reason: "stop_sequence", stop_sequence: stopReason };
  }
  return { stop_reason: "end_turn", stop_sequence: null };
}

/**
 * Anthropic usage from Chat usage (the fields the SDK types require are all present).
 *
 * @example
 * anthropicUsage({ prompt_tokens: 10, completion_tokens: 3 }).input_tokens // 10
 */
export function anthropicUsage(u: ChatUsage | null | undefined) {
  const cached = u?.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    input_tokens: Math.max(0, (u?.prompt_tokens ?? 0) - cached),
    output_tokens: u?.completion_tokens ?? 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
  };
}

/**
 * Parse tool arguments; models sometimes emit invalid JSON, which Anthropic cannot carry
 * (input must be an object), so the raw text is kept under a named key instead of lost.
 *
 * @example
 * parseToolInput('{"a":1}') // { a: 1 }
 * parseToolInput('oops')    // { __unparsed_arguments: "oops" }
 */
export function parseToolInput(args: string): Record<string, unknown> {
  if (args.trim() === "") return {};
  try {
    const v = JSON.parse(args);
    if (v && typeof v === "object" && !Array.isArray(v)) return v;
  } catch {
    // fall through
  }
  return { __unparsed_arguments: args };
}

/**
 * Translate a non-streaming Chat Completions response into an Anthropic message.
 *
 * @example
 * chatToAnthropicMessage(
 *   { id: "c1", choices: [{ message: { content: "hi" }, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 1 } },
 *   { model: "claude-x" },
 * ).content // [{ type: "text", text: "hi", citations: null }]
 */
export function chatToAnthropicMessage(chat: ChatResponse, ctx: AnthropicContext) {
  const choice = chat.choices?.[0];
  const msg = choice?.message ?? {};
  const content: Record<string, unknown>[] = [];
  const reasoning = reasoningOf(msg);
  if (reasoning !== "") content.push({ type: "thinking", thinking: reasoning, signature: "" });
  if (typeof msg.content === "string" && msg.content !== "") content.push({ type: "text", text: msg.content, citations: null });
  for (const call of msg.tool_calls ?? []) {
    content.push({
      type: "tool_use",
      id: call.id,
      name: call.function.name,
      input: parseToolInput(call.function.arguments ?? ""),
    });
  }
  const stop = anthropicStopReason(choice?.finish_reason, choice?.stop_reason, ctx.stopSequences);
  // Some servers report finish_reason "stop" even when tools were called.
  if ((msg.tool_calls?.length ?? 0) > 0 && stop.stop_reason === "end_turn") stop.stop_reason = "tool_use";
  return {
    id: anthropicMessageId(chat.id),
    type: "message" as const,
    role: "assistant" as const,
    model: ctx.model,
    content,
    stop_reason: stop.stop_reason,
    stop_sequence: stop.stop_sequence,
    stop_details: null,
    container: null,
    usage: anthropicUsage(chat.usage),
  };
}

/**
 * An Anthropic-style message id derived from the upstream's id (stable for the record).
 *
 * @example
 * anthropicMessageId("chatcmpl-abc") // "msg_chatcmpl-abc"
 */
export function anthropicMessageId(chatId: string | undefined): string {
  return `msg_${chatId ?? crypto.randomUUID().replaceAll("-", "")}`;
}
