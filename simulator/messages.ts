/** The simulator's reading of chat messages for its scripts (not for rendering: model/ does that). */
import type { SimMessage } from "./types.ts";

/**
 * The text of a message's content: text parts joined by newlines, as vLLM flattens them.
 *
 * @example
 * contentText([{ type: "text", text: "a" }, { type: "text", text: "b" }]); // "a\nb"
 */
export function contentText(content: SimMessage["content"]): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (typeof part.text === "string" ? part.text : ""))
    .filter((text) => text !== "")
    .join("\n");
}
