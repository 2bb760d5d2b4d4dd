/**
 * Chat Completions SSE chunks → Responses API stream events, as a stateful translator.
 *
 * Output items are opened one at a time (reasoning, message, function_call, ...), each
 * with its added/delta/done events, and every event carries a strictly increasing
 * `sequence_number`. The final `response.completed` (or `.incomplete`) holds all items.
 */
import { sseEvent } from "../../../lib/index.ts";
import type { ChatChunk } from "../chat-types.ts";
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
  const summary = ctx.reasoningAs === "summary";
  let seq = 0;
  let responseId = ctx.responseId ?? "";
  let started = false;
  let finished = false;
  let open: Item | undefined;
  const output: unknown[] = [];
  const tools = new Map<number, ToolItem>();
  let finish: string | null | undefined;
  let usage: ChatChunk["usage"];
  let promptTokens = 0;

  const emit = (out: ResponsesStreamEvent[], body: Body) => {
    out.push({ ...body, sequence_number: seq++ } as ResponsesStreamEvent);
  };

  const start = (chunk: ChatChunk | undefined, out: ResponsesStreamEvent[]) => {
    if (started) return;
    started = true;
    if (responseId === "") responseId = `resp_${chunk?.id ?? crypto.randomUUID().replaceAll("-", "")}`;
    promptTokens = chunk?.prompt_token_ids?.length ?? 0;
    emit(out, { type: "response.created", response: responseEnvelope(ctx, responseId, "in_progress") });
    emit(out, { type: "response.in_progress", response: responseEnvelope(ctx, responseId, "in_progress") });
  };

  const finalItem = (item: Item, status: string): unknown => {
    if (item.kind === "tool") {
      return toolCallItem({ id: item.callId, type: "function", function: { name: item.name, arguments: item.args } }, ctx.catalogue, item.id, status);
    }
    if (item.kind === "message") {
      return { type: "message", id: item.id, role: "assistant", status, content: [{ type: "output_text", text: item.text, annotations: [], logprobs: [] }] };
    }
    return summary
        ? { type: "reasoning", id: item.id, summary: [{ type: "summary_text", text: item.text }], status }
        : { type: "reasoning", id: item.id, summary: [], content: [{ type: "reasoning_text", text: item.text }], status };
  };

  const close = (out: ResponsesStreamEvent[], status = "completed") => {
    const item = open;
    if (!item) return;
    open = undefined;
    const base = { item_id: item.id, output_index: item.index };
    if (item.kind === "tool") {
      if (item.custom) {
        // Freeform input is JSON-wrapped by the Chat model, so it is only known whole at the end.
        const input = customInput(item.args);
        if (input !== "") emit(out, { type: "response.custom_tool_call_input.delta", ...base, delta: input });
        emit(out, { type: "response.custom_tool_call_input.done", ...base, input });
    } else {
        emit(out, { type: "response.function_call_arguments.done", ...base, arguments: item.args });
      }
    } else if (item.kind === "message") {
      const part = { type: "output_text", text: item.text, annotations: [], logprobs: [] };
      emit(out, { type: "response.output_text.done", ...base, content_index: 0, text: item.text, logprobs: [] });
      emit(out, { type: "response.content_part.done", ...base, content_index: 0, part });
    } else {
      if (summary) {
        emit(out, { type: "response.reasoning_summary_text.done", ...base, summary_index: 0, text: item.text });
        emit(out, { type: "response.reasoning_summary_part.done", ...base, summary_index: 0, part: { type: "summary_text", text: item.text } });
    } else {
        emit(out, { type: "response.reasoning_text.done", ...base, content_index: 0, text: item.text });
        emit(out, { type: "response.content_part.done", ...base, content_index: 0, part: { type: "reasoning_text", text: item.text } });
      }
    }
    const done = finalItem(item, status);
    output[item.index] = done;
    emit(out, { type: "response.output_item.done", output_index: item.index, item: done });
  };

  const openText = (kind: "reasoning" | "message", out: ResponsesStreamEvent[]): TextItem => {
    if (open && open.kind === kind) return open as TextItem;
    close(out);
    const index = output.length;
    const item: TextItem = { kind, index, id: itemId(kind === "message" ? "msg" : "rs", responseId, index), text: "" };
    output.push(undefined);
    open = item;
    const base = { item_id: item.id, output_index: index };
    if (kind === "message") {
      emit(out, { type: "response.output_item.added", output_index: index, item: { type: "message", id: item.id, role: "assistant", status: "in_progress", content: [] } });
      emit(out, { type: "response.content_part.added", ...base, content_index: 0, part: { type: "output_text", text: "", annotations: [], logprobs: [] } });
    } else {
      emit(out, { type: "response.output_item.added", output_index: index, item: { type: "reasoning", id: item.id, summary: [], status: "in_progress" } });
      if (summary) emit(out, { type: "response.reasoning_summary_part.added", ...base, summary_index: 0, part: { type: "summary_text", text: "" } });
      else emit(out, { type: "response.content_part.added", ...base, content_index: 0, part: { type: "reasoning_text", text: "" } });
    }
    return item;
  };

  const push = (chunk: ChatChunk): ResponsesStreamEvent[] => {
    const out: ResponsesStreamEvent[] = [];
    if (finished) return out;
    start(chunk, out);
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return out;
    const delta = choice.delta ?? {};
    const reasoning = reasoningOf(delta);
    if (reasoning !== "") {
      const item = openText("reasoning", out);
      item.text += reasoning;
      const base = { item_id: item.id, output_index: item.index };
      if (summary) emit(out, { type: "response.reasoning_summary_text.delta", ...base, summary_index: 0, delta: reasoning });
      else emit(out, { type: "response.reasoning_text.delta", ...base, content_index: 0, delta: reasoning });
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      const item = openText("message", out);
      item.text += delta.content;
      emit(out, { type: "response.output_text.delta", item_id: item.id, output_index: item.index, content_index: 0, delta: delta.content, logprobs: [] });
    }
    for (const tc of delta.tool_calls ?? []) {
      const toolIndex = tc.index ?? 0;
      let item = tools.get(toolIndex);
      if (!item) {
        close(out);
        const index = output.length;
        output.push(undefined);
        const name = tc.function?.name ?? "";
        item = {
          kind: "tool",
          index,
          id: itemId("fc", responseId, index),
          toolIndex,
          callId: tc.id ?? `call_${index}`,
          name,
          args: "",
          custom: ctx.catalogue.origins.get(name)?.kind === "custom",
        };
        tools.set(toolIndex, item);
        open = item;
        const added = toolCallItem({ id: item.callId, type: "function", function: { name, arguments: "" } }, ctx.catalogue, item.id, "in_progress");
        emit(out, { type: "response.output_item.added", output_index: index, item: added });
      }
      const args = tc.function?.arguments;
      if (typeof args === "string" && args !== "") {
        item.args += args;
        if (!item.custom) emit(out, { type: "response.function_call_arguments.delta", item_id: item.id, output_index: item.index, delta: args });
      }
    }
    if (choice.finish_reason) finish = choice.finish_reason;
    return out;
  };

  let finishedAt = -1; // the sequence number finish() started at
  const end = (): ResponsesStreamEvent[] => {
    const out: ResponsesStreamEvent[] = [];
    if (finished) return out;
    finishedAt = seq;
    start(undefined, out);
    const truncated = finish === "length";
    close(out, truncated ? "incomplete" : "completed");
    finished = true;
    const response = responseEnvelope(ctx, responseId, truncated ? "incomplete" : "completed");
    response.output = output.filter((o) => o !== undefined);
    response.usage = responsesUsage(usage ?? { prompt_tokens: promptTokens });
    if (truncated) response.incomplete_details = { reason: "max_output_tokens" };
    emit(out, { type: truncated ? "response.incomplete" : "response.completed", response });
    return out;
  };

  const fail = (message: string, code = "server_error"): ResponsesStreamEvent[] => {
    const out: ResponsesStreamEvent[] = [];
    if (finished) return out;
    start(undefined, out);
    close(out, "incomplete");
    finished = true;
    const response = responseEnvelope(ctx, responseId, "failed");
    response.output = output.filter((o) => o !== undefined);
    response.error = { code, message };
    response.usage = usage ? responsesUsage(usage) : null;
    emit(out, { type: "response.failed", response });
    return out;
  };

  const withdraw = (message: string, code = "server_error"): ResponsesStreamEvent[] => {
    if (finishedAt < 0) return fail(message, code);
    seq = finishedAt;
    const out: ResponsesStreamEvent[] = [];
    const response = responseEnvelope(ctx, responseId, "failed");
    response.output = [];
    response.error = { code, message };
    response.usage = usage ? responsesUsage(usage) : null;
    emit(out, { type: "response.failed", response });
    return out;
  };

  return { push, finish: end, fail, withdraw };
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
