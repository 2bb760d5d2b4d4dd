/**
 * OpenAI Chat Completions: tools offered in `tools[].function.name`, tool calls in
 * `choices[0].message.tool_calls` (or streamed as `delta.tool_calls` fragments keyed by
 * `index`), tool results as `role: "tool"` messages with `tool_call_id`.
 */
import { asArray, asString, contentText, isObject } from "./json.ts";
import type { SseJsonEvent } from "../../lib/index.ts";
import type { CallView, ToolResult, ToolUse } from "./types.ts";

/** Tool names and tool results from a chat request body. */
export function chatRequest(body: unknown): Pick<CallView, "toolsOffered" | "toolResults"> {
  if (!isObject(body)) return { toolsOffered: [], toolResults: [] };
  const toolsOffered = asArray(body.tools)
    .map((tool) => (isObject(tool) && isObject(tool.function) ? asString(tool.function.name) : ""))
    .filter((name) => name !== "");
  const toolResults: ToolResult[] = [];
  const names = new Map<string, string>();
  for (const message of asArray(body.messages)) {
    if (!isObject(message)) continue;
    for (const call of asArray(message.tool_calls)) {
      if (isObject(call) && isObject(call.function)) names.set(asString(call.id), asString(call.function.name));
    }
    if (message.role !== "tool") continue;
    const id = asString(message.tool_call_id);
    toolResults.push({ id, text: contentText(message.content), isError: null, name: names.get(id) ?? asString(message.name) });
  }
  return { toolsOffered, toolResults };
}

/** Tool calls and text from a non-stream chat response body. */
export function chatResponse(body: unknown): Pick<CallView, "toolUses" | "assistantText"> {
  const choice = isObject(body) ? asArray(body.choices)[0] : undefined;
  const message = isObject(choice) ? choice.message : undefined;
  if (!isObject(message)) return { toolUses: [], assistantText: "" };
  const toolUses: ToolUse[] = asArray(message.tool_calls).flatMap((call) => {
    if (!isObject(call) || !isObject(call.function)) return [];
    return [{ id: asString(call.id), name: asString(call.function.name), arguments: asString(call.function.arguments) }];
  });
  return { toolUses, assistantText: contentText(message.content) };
}

/** Tool calls and text from a streamed chat response: fragments are concatenated per `index`. */
export function chatStream(events: SseJsonEvent[]): Pick<CallView, "toolUses" | "assistantText"> {
  const calls = new Map<number, ToolUse>();
  let text = "";
  for (const { data } of events) {
    const choice = isObject(data) ? asArray(data.choices)[0] : undefined;
    const delta = isObject(choice) ? choice.delta : undefined;
    if (!isObject(delta)) continue;
    text += asString(delta.content);
    for (const fragment of asArray(delta.tool_calls)) {
      if (!isObject(fragment)) continue;
      const index = typeof fragment.index === "number" ? fragment.index : calls.size;
      const call = calls.get(index) ?? { id: "", name: "", arguments: "" };
      if (typeof fragment.id === "string") call.id = fragment.id;
      if (isObject(fragment.function)) {
        call.name += asString(fragment.function.name);
        call.arguments += asString(fragment.function.arguments);
      }
      calls.set(index, call);
    }
  }
  const toolUses = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  return { toolUses, assistantText: text };
}
