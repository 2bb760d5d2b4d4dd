/**
 * Anthropic Messages (Claude Code): tools in `tools[].name`, tool calls as `tool_use` content
 * blocks (streamed as `content_block_start` + `input_json_delta` fragments), tool results as
 * `tool_result` blocks in user messages, with an explicit `is_error`.
 */
import { asArray, asString, contentText, isObject } from "./json.ts";
import type { SseJsonEvent } from "../../lib/index.ts";
import type { CallView, ToolResult, ToolUse } from "./types.ts";

/** Tool names and tool results from a Messages request body. */
export function anthropicRequest(body: unknown): Pick<CallView, "toolsOffered" | "toolResults"> {
  if (!isObject(body)) return { toolsOffered: [], toolResults: [] };
  const toolsOffered = asArray(body.tools)
    .map((tool) => (isObject(tool) ? asString(tool.name) : ""))
    .filter((name) => name !== "");
  const toolResults: ToolResult[] = [];
  const names = new Map<string, string>();
  for (const message of asArray(body.messages)) {
    if (!isObject(message)) continue;
    for (const block of asArray(message.content)) {
      if (isObject(block) && block.type === "tool_use") names.set(asString(block.id), asString(block.name));
      if (!isObject(block) || block.type !== "tool_result") continue;
      const id = asString(block.tool_use_id);
      // Messages API: is_error absent means false; the flag is always known.
      toolResults.push({ id, text: contentText(block.content), isError: block.is_error === true, name: names.get(id) ?? "" });
    }
  }
  return { toolsOffered, toolResults };
}

/** Tool calls and text from a non-stream Messages response body. */
export function anthropicResponse(body: unknown): Pick<CallView, "toolUses" | "assistantText"> {
  const blocks = isObject(body) ? asArray(body.content) : [];
  const toolUses: ToolUse[] = [];
  const text: string[] = [];
  for (const block of blocks) {
    if (!isObject(block)) continue;
    if (block.type === "tool_use") {
      toolUses.push({ id: asString(block.id), name: asString(block.name), arguments: JSON.stringify(block.input ?? {}) });
    } else if (block.type === "text") text.push(asString(block.text));
  }
  return { toolUses, assistantText: text.join("\n") };
}

/** Tool calls and text from a Messages stream: blocks are rebuilt from their deltas by `index`. */
export function anthropicStream(events: SseJsonEvent[]): Pick<CallView, "toolUses" | "assistantText"> {
  type Block = { type: string; id: string; name: string; json: string; input: unknown; text: string };
  const blocks = new Map<number, Block>();
  for (const { data } of events) {
    if (!isObject(data) || typeof data.index !== "number") continue;
    if (data.type === "content_block_start" && isObject(data.content_block)) {
      const start = data.content_block;
      blocks.set(data.index, {
        type: asString(start.type),
        id: asString(start.id),
        name: asString(start.name),
        json: "",
        input: start.input,
        text: asString(start.text),
      });
    } else if (data.type === "content_block_delta" && isObject(data.delta)) {
      const block = blocks.get(data.index);
      if (!block) continue;
      block.json += asString(data.delta.partial_json);
      block.text += asString(data.delta.text);
    }
  }
  const ordered = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
  const toolUses = ordered
    .filter((block) => block.type === "tool_use")
    // The start block's `input` is `{}`; the deltas carry the real arguments.
    .map((block) => ({ id: block.id, name: block.name, arguments: block.json || JSON.stringify(block.input ?? {}) }));
  const assistantText = ordered
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
  return { toolUses, assistantText };
}
