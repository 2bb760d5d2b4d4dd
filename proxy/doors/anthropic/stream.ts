/**
 * Chat Completions SSE chunks → Anthropic Messages stream events, as a stateful translator.
 *
 * Blocks are opened and closed one at a time (as Anthropic streams them): a change of kind
 * (thinking → text → tool_use) or a new tool call closes the open block and opens the next
 * index. Tool arguments are forwarded as `input_json_delta` exactly as they arrive.
 */
import { sseEvent } from "../../../lib/index.ts";
import type { ChatChunk, ChatDeltaToolCall } from "../chat-types.ts";
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
  return new AnthropicStream(ctx);
}

/** One message's stream, as a state machine: not started, a block open (or none), finished. */
class AnthropicStream implements AnthropicStreamTranslator {
  private started = false;
  private finished = false;
  private nextIndex = 0;
  private open: Open | undefined;
  private finishReason: string | null | undefined;
  private stopReason: string | number | null | undefined;
  private usage: ChatChunk["usage"];
  private promptTokens = 0;
  private sawToolCall = false;
  /** Chat tool-call index → Anthropic block index (for late argument deltas). */
  private readonly toolBlocks = new Map<number, number>();

  constructor(private readonly ctx: AnthropicContext) {}

  private start(chunk: ChatChunk | undefined): AnthropicStreamEvent[] {
    if (this.started) return [];
    this.started = true;
    // vLLM sends prompt_token_ids in the first chunk when asked; the count is known up front.
    this.promptTokens = chunk?.prompt_token_ids?.length ?? chunk?.usage?.prompt_tokens ?? 0;
    return [
      {
        type: "message_start",
        message: {
          id: anthropicMessageId(chunk?.id),
          type: "message",
          role: "assistant",
          model: this.ctx.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          stop_details: null,
          container: null,
          usage: { input_tokens: this.promptTokens, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
        },
      },
      { type: "ping" },
    ];
  }

  private close(): AnthropicStreamEvent[] {
    if (!this.open) return [];
    const ev = { type: "content_block_stop", index: this.open.index };
    this.open = undefined;
    return [ev];
  }

  private openBlock(kind: "thinking" | "text"): AnthropicStreamEvent[] {
    if (this.open?.kind === kind) return [];
    const out = this.close();
    const index = this.nextIndex++;
    this.open = { kind, index };
    const block = kind === "text" ? { type: "text", text: "", citations: null } : { type: "thinking", thinking: "", signature: "" };
    out.push({ type: "content_block_start", index, content_block: block });
    return out;
  }

  push(chunk: ChatChunk): AnthropicStreamEvent[] {
    if (this.finished) return [];
    const out = this.start(chunk);
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return out;
    const delta = choice.delta ?? {};
    const reasoning = reasoningOf(delta);
    if (reasoning !== "") {
      out.push(...this.openBlock("thinking"));
      out.push({ type: "content_block_delta", index: this.open!.index, delta: { type: "thinking_delta", thinking: reasoning } });
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      out.push(...this.openBlock("text"));
      out.push({ type: "content_block_delta", index: this.open!.index, delta: { type: "text_delta", text: delta.content } });
    }
    for (const tc of delta.tool_calls ?? []) this.pushToolCall(tc, out);
    if (choice.finish_reason) {
      this.finishReason = choice.finish_reason;
      this.stopReason = choice.stop_reason;
    }
    return out;
  }

  /** A tool call's delta: its block opened at its first, its arguments forwarded as they come. */
  private pushToolCall(tc: ChatDeltaToolCall, out: AnthropicStreamEvent[]): void {
    this.sawToolCall = true;
    const toolIndex = tc.index ?? 0;
    let blockIndex = this.toolBlocks.get(toolIndex);
    if (blockIndex === undefined) {
      out.push(...this.close());
      blockIndex = this.nextIndex++;
      this.toolBlocks.set(toolIndex, blockIndex);
      this.open = { kind: "tool", index: blockIndex, toolIndex };
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

  finish(): AnthropicStreamEvent[] {
    if (this.finished) return [];
    const out = this.start(undefined);
    out.push(...this.close());
    this.finished = true;
    const stop = anthropicStopReason(this.finishReason, this.stopReason, this.ctx.stopSequences);
    if (this.sawToolCall && stop.stop_reason === "end_turn") stop.stop_reason = "tool_use";
    const usage = this.usage;
    const u = anthropicUsage(usage);
    out.push({
      type: "message_delta",
      delta: { stop_reason: stop.stop_reason, stop_sequence: stop.stop_sequence, stop_details: null },
      usage: {
        input_tokens: usage ? u.input_tokens : this.promptTokens,
        output_tokens: u.output_tokens,
        cache_creation_input_tokens: u.cache_creation_input_tokens,
        cache_read_input_tokens: u.cache_read_input_tokens,
      },
    });
    out.push({ type: "message_stop" });
    return out;
  }

  fail(message: string, errorType = "api_error"): AnthropicStreamEvent[] {
    if (this.finished) return [];
    const out = this.started ? this.close() : [];
    this.finished = true;
    out.push({ type: "error", error: { type: errorType, message } });
    return out;
  }

  /** finish()'s block stops and message_stop were never sent: the error stands in for them all. */
  withdraw(message: string): AnthropicStreamEvent[] {
    return [{ type: "error", error: { type: "api_error", message } }];
  }
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
