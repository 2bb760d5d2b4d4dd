/**
 * Chat Completions SSE chunks → Responses API stream events, as a stateful translator.
 *
 * Output items are opened one at a time (reasoning, message, function_call, ...), each
 * with its added/delta/done events, and every event carries a strictly increasing
 * `sequence_number`. The final `response.completed` (or `.incomplete`) holds all items.
 */
import { sseEvent } from "../../../lib/index.ts";
import type { ChatChunk, ChatDeltaToolCall } from "../chat-types.ts";
import { reasoningOf } from "../chat-types.ts";
import type { ResponsesContext } from "./response.ts";
import { customInput, itemId, responseEnvelope, responsesUsage, toolCallItem } from "./response.ts";

export interface ResponsesStreamEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

export interface ResponsesStreamOptions extends ResponsesContext {
  /** How reasoning_content is shown: raw `reasoning_text` (default) or as a reasoning summary. */
  reasoningAs?: "reasoning_text" | "summary";
}

export interface ResponsesStreamTranslator {
  /** Events for one upstream chunk (the first also yields response.created and .in_progress). */
  push(chunk: ChatChunk): ResponsesStreamEvent[];
  /** Closes the open item and ends with response.completed or response.incomplete. */
  finish(): ResponsesStreamEvent[];
  /** Ends with response.failed carrying the error, for an upstream failure mid-stream. */
  fail(message: string, code?: string): ResponsesStreamEvent[];
  /**
   * response.failed sent instead of `finish()`'s events when those were made but cannot be sent
   * (the call could not be recorded): numbered from where finish() started, so the harness sees
   * no gap, and never response.completed.
   */
  withdraw(message: string, code?: string): ResponsesStreamEvent[];
}

interface TextItem {
  kind: "reasoning" | "message";
  index: number;
  id: string;
  text: string;
}
interface ToolItem {
  kind: "tool";
  index: number;
  id: string;
  toolIndex: number;
  callId: string;
  name: string;
  args: string;
  custom: boolean;
}
type Item = TextItem | ToolItem;

// Event bodies without their sequence number (added when emitted).
type Body = { type: string; [field: string]: unknown };

/**
 * Create a translator for one streamed response.
 *
 * @example
 * const t = createResponsesStreamTranslator({ request: { model: "m" }, catalogue: { tools: [], origins: new Map(), dropped: [] } });
 * const events = [...t.push({ id: "c1", choices: [{ delta: { content: "Hi" } }] }), ...t.finish()];
 * events.map((e) => e.type);
 * // response.created, response.in_progress, response.output_item.added, response.content_part.added,
 * // response.output_text.delta, response.output_text.done, response.content_part.done,
 * // response.output_item.done, response.completed
 */
export function createResponsesStreamTranslator(ctx: ResponsesStreamOptions): ResponsesStreamTranslator {
  return new ResponsesStream(ctx);
}

/** One response's stream, as a state machine: not started, an item open (or none), finished. */
class ResponsesStream implements ResponsesStreamTranslator {
  private readonly summary: boolean;
  private seq = 0;
  private responseId: string;
  private started = false;
  private finished = false;
  private open: Item | undefined;
  private readonly output: unknown[] = [];
  private readonly tools = new Map<number, ToolItem>();
  private finishReason: string | null | undefined;
  private usage: ChatChunk["usage"];
  private promptTokens = 0;
  /** The sequence number finish() started at. */
  private finishedAt = -1;

  constructor(private readonly ctx: ResponsesStreamOptions) {
    this.summary = ctx.reasoningAs === "summary";
    this.responseId = ctx.responseId ?? "";
  }

  private emit(out: ResponsesStreamEvent[], body: Body): void {
    out.push({ ...body, sequence_number: this.seq++ } as ResponsesStreamEvent);
  }

  private start(chunk: ChatChunk | undefined, out: ResponsesStreamEvent[]): void {
    if (this.started) return;
    this.started = true;
    if (this.responseId === "") this.responseId = `resp_${chunk?.id ?? crypto.randomUUID().replaceAll("-", "")}`;
    this.promptTokens = chunk?.prompt_token_ids?.length ?? 0;
    this.emit(out, { type: "response.created", response: responseEnvelope(this.ctx, this.responseId, "in_progress") });
    this.emit(out, { type: "response.in_progress", response: responseEnvelope(this.ctx, this.responseId, "in_progress") });
  }

  private finalItem(item: Item, status: string): unknown {
    if (item.kind === "tool") {
      return toolCallItem({ id: item.callId, type: "function", function: { name: item.name, arguments: item.args } }, this.ctx.catalogue, item.id, status);
    }
    if (item.kind === "message") {
      return { type: "message", id: item.id, role: "assistant", status, content: [{ type: "output_text", text: item.text, annotations: [], logprobs: [] }] };
    }
    return this.summary
      ? { type: "reasoning", id: item.id, summary: [{ type: "summary_text", text: item.text }], status }
      : { type: "reasoning", id: item.id, summary: [], content: [{ type: "reasoning_text", text: item.text }], status };
  }

  private close(out: ResponsesStreamEvent[], status = "completed"): void {
    const item = this.open;
    if (!item) return;
    this.open = undefined;
    const base = { item_id: item.id, output_index: item.index };
    if (item.kind === "tool") {
      if (item.custom) {
        // Freeform input is JSON-wrapped by the Chat model, so it is only known whole at the end.
        const input = customInput(item.args);
        if (input !== "") this.emit(out, { type: "response.custom_tool_call_input.delta", ...base, delta: input });
        this.emit(out, { type: "response.custom_tool_call_input.done", ...base, input });
      } else {
        this.emit(out, { type: "response.function_call_arguments.done", ...base, arguments: item.args });
      }
    } else if (item.kind === "message") {
      const part = { type: "output_text", text: item.text, annotations: [], logprobs: [] };
      this.emit(out, { type: "response.output_text.done", ...base, content_index: 0, text: item.text, logprobs: [] });
      this.emit(out, { type: "response.content_part.done", ...base, content_index: 0, part });
    } else {
      if (this.summary) {
        this.emit(out, { type: "response.reasoning_summary_text.done", ...base, summary_index: 0, text: item.text });
        this.emit(out, { type: "response.reasoning_summary_part.done", ...base, summary_index: 0, part: { type: "summary_text", text: item.text } });
      } else {
        this.emit(out, { type: "response.reasoning_text.done", ...base, content_index: 0, text: item.text });
        this.emit(out, { type: "response.content_part.done", ...base, content_index: 0, part: { type: "reasoning_text", text: item.text } });
      }
    }
    const done = this.finalItem(item, status);
    this.output[item.index] = done;
    this.emit(out, { type: "response.output_item.done", output_index: item.index, item: done });
  }

  private openText(kind: "reasoning" | "message", out: ResponsesStreamEvent[]): TextItem {
    if (this.open && this.open.kind === kind) return this.open as TextItem;
    this.close(out);
    const index = this.output.length;
    const item: TextItem = { kind, index, id: itemId(kind === "message" ? "msg" : "rs", this.responseId, index), text: "" };
    this.output.push(undefined);
    this.open = item;
    const base = { item_id: item.id, output_index: index };
    if (kind === "message") {
      this.emit(out, { type: "response.output_item.added", output_index: index, item: { type: "message", id: item.id, role: "assistant", status: "in_progress", content: [] } });
      this.emit(out, { type: "response.content_part.added", ...base, content_index: 0, part: { type: "output_text", text: "", annotations: [], logprobs: [] } });
    } else {
      this.emit(out, { type: "response.output_item.added", output_index: index, item: { type: "reasoning", id: item.id, summary: [], status: "in_progress" } });
      if (this.summary) this.emit(out, { type: "response.reasoning_summary_part.added", ...base, summary_index: 0, part: { type: "summary_text", text: "" } });
      else this.emit(out, { type: "response.content_part.added", ...base, content_index: 0, part: { type: "reasoning_text", text: "" } });
    }
    return item;
  }

  push(chunk: ChatChunk): ResponsesStreamEvent[] {
    const out: ResponsesStreamEvent[] = [];
    if (this.finished) return out;
    this.start(chunk, out);
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return out;
    const delta = choice.delta ?? {};
    const reasoning = reasoningOf(delta);
    if (reasoning !== "") {
      const item = this.openText("reasoning", out);
      item.text += reasoning;
      const base = { item_id: item.id, output_index: item.index };
      if (this.summary) this.emit(out, { type: "response.reasoning_summary_text.delta", ...base, summary_index: 0, delta: reasoning });
      else this.emit(out, { type: "response.reasoning_text.delta", ...base, content_index: 0, delta: reasoning });
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      const item = this.openText("message", out);
      item.text += delta.content;
      this.emit(out, { type: "response.output_text.delta", item_id: item.id, output_index: item.index, content_index: 0, delta: delta.content, logprobs: [] });
    }
    for (const tc of delta.tool_calls ?? []) this.pushToolCall(tc, out);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return out;
  }

  /** A tool call's delta: its item opened at its first, its arguments as they come (a custom tool's at the end). */
  private pushToolCall(tc: ChatDeltaToolCall, out: ResponsesStreamEvent[]): void {
    const toolIndex = tc.index ?? 0;
    let item = this.tools.get(toolIndex);
    if (!item) {
      this.close(out);
      const index = this.output.length;
      this.output.push(undefined);
      const name = tc.function?.name ?? "";
      item = {
        kind: "tool",
        index,
        id: itemId("fc", this.responseId, index),
        toolIndex,
        callId: tc.id ?? `call_${index}`,
        name,
        args: "",
        custom: this.ctx.catalogue.origins.get(name)?.kind === "custom",
      };
      this.tools.set(toolIndex, item);
      this.open = item;
      const added = toolCallItem({ id: item.callId, type: "function", function: { name, arguments: "" } }, this.ctx.catalogue, item.id, "in_progress");
      this.emit(out, { type: "response.output_item.added", output_index: index, item: added });
    }
    const args = tc.function?.arguments;
    if (typeof args === "string" && args !== "") {
      item.args += args;
      if (!item.custom) this.emit(out, { type: "response.function_call_arguments.delta", item_id: item.id, output_index: item.index, delta: args });
    }
  }

  finish(): ResponsesStreamEvent[] {
    const out: ResponsesStreamEvent[] = [];
    if (this.finished) return out;
    this.finishedAt = this.seq;
    this.start(undefined, out);
    const truncated = this.finishReason === "length";
    this.close(out, truncated ? "incomplete" : "completed");
    this.finished = true;
    const response = responseEnvelope(this.ctx, this.responseId, truncated ? "incomplete" : "completed");
    response.output = this.output.filter((o) => o !== undefined);
    response.usage = responsesUsage(this.usage ?? { prompt_tokens: this.promptTokens });
    if (truncated) response.incomplete_details = { reason: "max_output_tokens" };
    this.emit(out, { type: truncated ? "response.incomplete" : "response.completed", response });
    return out;
  }

  fail(message: string, code = "server_error"): ResponsesStreamEvent[] {
    const out: ResponsesStreamEvent[] = [];
    if (this.finished) return out;
    this.start(undefined, out);
    this.close(out, "incomplete");
    this.finished = true;
    const response = responseEnvelope(this.ctx, this.responseId, "failed");
    response.output = this.output.filter((o) => o !== undefined);
    response.error = { code, message };
    response.usage = this.usage ? responsesUsage(this.usage) : null;
    this.emit(out, { type: "response.failed", response });
    return out;
  }

  withdraw(message: string, code = "server_error"): ResponsesStreamEvent[] {
    if (this.finishedAt < 0) return this.fail(message, code);
    this.seq = this.finishedAt;
    const out: ResponsesStreamEvent[] = [];
    const response = responseEnvelope(this.ctx, this.responseId, "failed");
    response.output = [];
    response.error = { code, message };
    response.usage = this.usage ? responsesUsage(this.usage) : null;
    this.emit(out, { type: "response.failed", response });
    return out;
  }
}

/**
 * One Responses event as SSE text (`event:` line named after the type, as OpenAI sends).
 *
 * @example
 * responsesSse({ type: "response.completed", sequence_number: 9 }).startsWith("event: response.completed\n") // true
 */
export function responsesSse(event: ResponsesStreamEvent): string {
  return sseEvent(JSON.stringify(event), event.type);
}
