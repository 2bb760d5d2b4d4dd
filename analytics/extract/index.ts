/**
 * Protocol-independent view of a recorded model call: tools offered, tool calls made,
 * tool results received. Bodies that are not JSON (or a stream cut short) give empty lists,
 * never an exception: analytics must survive whatever a harness sent.
 */
import { parseSseJson } from "../../lib/index.ts";
import { Protocol, type ModelCall } from "../../schemas/index.ts";
import { anthropicRequest, anthropicResponse, anthropicStream } from "./anthropic.ts";
import { chatRequest, chatResponse, chatStream } from "./chat.ts";
import { parseJsonBody } from "./json.ts";
import { responsesRequest, responsesResponse, responsesStream } from "./responses.ts";
import type { CallView } from "./types.ts";

export type { CallView, ToolResult, ToolUse } from "./types.ts";

const empty: CallView = { toolsOffered: [], toolUses: [], toolResults: [], assistantText: "" };

/** Whether the response body is SSE text (the record's flag, or the body's first bytes). */
function isSse(call: Pick<ModelCall, "stream" | "responseBody">): boolean {
  if (call.stream) return true;
  const head = new TextDecoder().decode(call.responseBody.subarray(0, 16)).trimStart();
  return head.startsWith("data:") || head.startsWith("event:");
}

/**
 * Extracts tools offered, tool uses and tool results from one ModelCall.
 *
 * @example
 * const view = extractCall({ ...call, requestBody: requestBodyOf(call, store) }); // a model_call record, its body rebuilt (records/)
 * view.toolUses.map((use) => use.name) // ["bash", "read_file"]
 */
export function extractCall(call: Pick<ModelCall, "protocol" | "stream" | "requestBody" | "responseBody">): CallView {
  const request = parseJsonBody(call.requestBody);
  const sse = isSse(call);
  const events = sse ? parseSseJson(new TextDecoder().decode(call.responseBody)) : [];
  const response = sse ? null : parseJsonBody(call.responseBody);
  switch (call.protocol) {
    case Protocol.CHAT:
      return { ...chatRequest(request), ...(sse ? chatStream(events) : chatResponse(response)) };
    case Protocol.RESPONSES:
      return { ...responsesRequest(request), ...(sse ? responsesStream(events) : responsesResponse(response)) };
    case Protocol.ANTHROPIC_MESSAGES:
      return { ...anthropicRequest(request), ...(sse ? anthropicStream(events) : anthropicResponse(response)) };
    default:
      // Completions has no tool calling; its text is not needed by any metric.
      return empty;
  }
}
