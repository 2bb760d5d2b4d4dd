/**
 * OpenAI Responses API (Codex): tools in `tools[]` (`name` for function/custom tools, `type`
 * for built-ins such as `local_shell`), tool calls as output items `function_call`,
 * `custom_tool_call` and `local_shell_call`, tool results as input items
 * `function_call_output` / `custom_tool_call_output` / `local_shell_call_output`.
 */
import { asArray, asString, contentText, isObject } from "./json.ts";
import type { SseJsonEvent } from "../../lib/index.ts";
import type { CallView, ToolResult, ToolUse } from "./types.ts";

const outputTypes = new Set(["function_call_output", "custom_tool_call_output", "local_shell_call_output"]);

/** Tool names and tool results from a Responses request body. */
export function responsesRequest(body: unknown): Pick<CallView, "toolsOffered" | "toolResults"> {
  if (!isObject(body)) return { toolsOffered: [], toolResults: [] };
  const toolsOffered = asArray(body.tools)
    .map((tool) => (isObject(tool) ? asString(tool.name) || asString(tool.type) : ""))
    .filter((name) => name !== "");
  const toolResults: ToolResult[] = [];
  const names = new Map<string, string>();
  for (const item of asArray(body.input)) {
    const use = toolUseOf(item);
    if (use) names.set(use.id, use.name);
    if (!isObject(item) || !outputTypes.has(asString(item.type))) continue;
    const id = asString(item.call_id);
    toolResults.push({ id, text: outputText(item.output), isError: null, name: names.get(id) ?? "" });
  }
  return { toolsOffered, toolResults };
}

function outputText(output: unknown): string {
  return typeof output === "string" ? output : contentText(output);
}

function toolUseOf(item: unknown): ToolUse | null {
  if (!isObject(item)) return null;
  const id = asString(item.call_id) || asString(item.id);
  switch (item.type) {
    case "function_call":
      return { id, name: asString(item.name), arguments: asString(item.arguments) };
    case "custom_tool_call":
      return { id, name: asString(item.name), arguments: JSON.stringify({ input: asString(item.input) }) };
    case "local_shell_call":
      return { id, name: "local_shell", arguments: JSON.stringify(isObject(item.action) ? item.action : {}) };
    default:
      return null;
  }
}

function fromOutput(output: unknown[]): Pick<CallView, "toolUses" | "assistantText"> {
  const toolUses = output.map(toolUseOf).filter((use): use is ToolUse => use !== null);
  const assistantText = output
    .filter((item) => isObject(item) && item.type === "message")
    .map((item) => contentText((item as { content?: unknown }).content))
    .join("\n");
  return { toolUses, assistantText };
}

/** Tool calls and text from a non-stream Responses body (`output[]`). */
export function responsesResponse(body: unknown): Pick<CallView, "toolUses" | "assistantText"> {
  return fromOutput(isObject(body) ? asArray(body.output) : []);
}

/**
 * Tool calls and text from a Responses stream: the `response.completed` event carries the
 * whole output; a stream cut before it falls back to the `response.output_item.done` items.
 */
export function responsesStream(events: SseJsonEvent[]): Pick<CallView, "toolUses" | "assistantText"> {
  const done: unknown[] = [];
  for (const { data } of events) {
    if (!isObject(data)) continue;
    if (data.type === "response.completed" && isObject(data.response)) return fromOutput(asArray(data.response.output));
    if (data.type === "response.output_item.done") done.push(data.item);
  }
  return fromOutput(done);
}
