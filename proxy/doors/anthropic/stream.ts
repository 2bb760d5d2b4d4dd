/**
 * Chat Completions SSE chunks → Anthropic Messages stream events, as a stateful translator.
 *
 * Blocks are opened and closed one at a time (as Anthropic streams them): a change of kind
 * (thinking → text → tool_use) or a new tool call closes the open block and opens the next
 * index. Tool arguments are forwarded as `input_json_delta` exactly as they arrive.
 */
import { sseEvent } from "../../../lib/index.ts";
import type { ChatChunk } from "../chat-types.ts";
import { reasoningOf } from "../chat-types.ts";
import type { AnthropicContext } from "./response.ts";
import { anthropicMessageId, anthropicStopReason, anthropicUsage } from "./response.ts";

export interface AnthropicStreamEvent {
  type: string;
  [field: string]: unknown;
}

export interface AnthropicStreamTranslator {
  /** Events for one upstream chunk (the first also yields message_start and a ping). */
  push(chunk: ChatChunk): AnthropicStreamEvent[];
  /** Events that end the message: closes the open block, message_delta, message_stop. */
  finish(): AnthropicStreamEvent[];
  /** An `error` event, after closing what is open, for an upstream failure mid-stream. */
  fail(message: string, errorType?: string): AnthropicStreamEvent[];
  /**
   * The `error` event sent instead of `finish()`'s events when those were made but cannot be
   * sent (the call could not be recorded): the harness must not see message_stop.
   */
  withdraw(message: string): AnthropicStreamEvent[];
}

type Open = { kind: "thinking" | "text"; index: number } | { kind: "tool"; index: number; toolIndex: number };

/**
 * Create a translator for one streamed response.
 *
 * @example
 * const t = createAnthropicStreamTranslator({ model: "claude-x" });
 * const events = [
 *   ...t.push({ id: "c1", choices: [{ delta: { content: "Hi" } }] }),
 *   ...t.push({ choices: [{ delta: {}, finish_reason: "stop" }] }),
 *   ...t.finish(),
 * ];
 * // message_start, ping, content_block_start(0,text), content_block_delta(text_delta "Hi"),
 * // content_block_stop(0), message_delta(end_turn), message_stop
 */
export function createAnthropicStreamTranslator(ctx: AnthropicContext): AnthropicStreamTranslator {
  let started = false;
  let finished = false;
  let nextIndex = 0;
  let open: Open | undefined;
  let finish: string | null | undefined;
  let stopReason: string | number | null | undefined;
  let usage: ChatChunk["usage"];
  let promptTokens = 0;
  let sawToolCall = false;
  // Chat tool-call index → Anthropic block index (for late argument deltas).
  const toolBlocks = new Map<number, number>();

  const start = (chunk: ChatChunk | undefined): AnthropicStreamEvent[] => {
    if (started) return [];
    started = true;
    // vLLM sends prompt_token_ids in the first chunk when asked; the count is known up front.
    promptTokens = chunk?.prompt_token_ids?.length ?? chunk?.usage?.prompt_tokens ?? 0;
    return [
      {
        type: "message_start",
        message: {
          id: anthropicMessageId(chunk?.id),
          type: "message",
          role: "assistant",
          model: ctx.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          stop_details: null,
          container: null,
          usage: { input_tokens: promptTokens, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
        },
      },
      { type: "ping" },
    ];
  };

  const close = (): AnthropicStreamEvent[] => {
    if (!open) return [];
    const ev = { type: "content_block_stop", index: open.index };
    open = undefined;
    return [ev];
  };

  const openBlock = (kind: "thinking" | "text"): AnthropicStreamEvent[] => {
    if (open?.kind === kind) return [];
    const out = close();
    const index = nextIndex++;
    open = { kind, index };
    const block = kind === "text" ? { type: "text", text: "", citations: null } : { type: "thinking", thinking: "", signature: "" };
    out.push({ type: "content_block_start", index, content_block: block });
    return out;
  };

  const push = (chunk: ChatChunk): AnthropicStreamEvent[] => {
    if (finished) return [];
    const out = start(chunk);
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return out;
    const delta = choice.delta ?? {};
    const reasoning = reasoningOf(delta);
    if (reasoning !== "") {
      out.push(...openBlock("thinking"));
      out.push({ type: "content_block_delta", index: open!.index, delta: { type: "thinking_delta", thinking: reasoning } });
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      out.push(...openBlock("text"));
      out.push({ type: "content_block_delta", index: open!.index, delta: { type: "text_delta", text: delta.content } });
    }
    for (const tc of delta.tool_calls ?? []) {
      sawToolCall = true;
      const toolIndex = tc.index ?? 0;
      let blockIndex = toolBlocks.get(toolIndex);
      if (blockIndex === undefined) {
        out.push(...close());
        blockIndex = nextIndex++;
        toolBlocks.set(toolIndex, blockIndex);
        open = { kind: "tool", index: blockIndex, toolIndex };
        out.push({
          type: "content_block_start",
          index: blockIndex,
          content_block: { type: "tool_use", id: tc.id ?? `toolu_${blockIndex}`, name: tc.function?.name ?? "", input: {} },
        });
      }
      const args = tc.function?.arguments;
      // A delta for an already-closed tool block (never sent by vLLM/OpenAI) is still
      // addressed to its own index so the SDK's per-index accumulation stays right.
      if (typeof args === "string" && args !== "") {
        out.push({ type: "content_block_delta", index: blockIndex, delta: { type: "input_json_delta", partial_json: args } });
      }
    }
    if (choice.finish_reason) {
      finish = choice.finish_reason;
      stopReason = choice.stop_reason;
    }
    return out;
  };

  const end = (): AnthropicStreamEvent[] => {
    if (finished) return [];
    const out = start(undefined);
    out.push(...close());
    finished = true;
    const stop = anthropicStopReason(finish, stopReason, ctx.stopSequences);
    if (sawToolCall && stop.stop_reason === "end_turn") stop.stop_reason = "tool_use";
    const u = anthropicUsage(usage);
    out.push({
      type: "message_delta",
      delta: { stop_reason: stop.stop_reason, stop_sequence: stop.stop_sequence, stop_details: null },
      usage: {
        input_tokens: usage ? u.input_tokens : promptTokens,
        output_tokens: u.output_tokens,
        cache_creation_input_tokens: u.cache_creation_input_tokens,
        cache_read_input_tokens: u.cache_read_input_tokens,
      },
    });
    out.push({ type: "message_stop" });
    return out;
  };

  const fail = (message: string, errorType = "api_error"): AnthropicStreamEvent[] => {
    if (finished) return [];
    const out = started ? close() : [];
    finished = true;
    out.push({ type: "error", error: { type: errorType, message } });
    return out;
  };

  // finish()'s block stops and message_stop were never sent: the error stands in for them all.
  const withdraw = (message: string): AnthropicStreamEvent[] => [{ type: "error", error: { type: "api_error", message } }];

  return { push, finish: end, fail, withdraw };
}

/**
 * One Anthropic event as SSE text (`event:` line named after the type, as Anthropic sends).
 *
 * @example
 * anthropicSse({ type: "ping" }) // 'event: ping\ndata: {"type":"ping"}\n\n'
 */
export function anthropicSse(event: AnthropicStreamEvent): string {
  return sseEvent(JSON.stringify(event), event.type);
}
