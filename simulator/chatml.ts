/**
 * Qwen3's chat template, rendered by hand (the tokenizer package's Jinja engine cannot parse
 * it), as a list of segments. Each segment is tokenized on its own, so the tokens of an
 * assistant turn's body are the same whether the model just sampled them or a later prompt
 * re-renders them: prompt(t+1) starts with prompt(t) ++ completion(t) for a clean multi-turn
 * chat. What Qwen3's template really drops (the `<think>` of earlier turns, reasoning that the
 * harness did not send back) is dropped here too, which gives trajectory assembly the same
 * drift it meets with a real Qwen3 behind vLLM.
 */
import { pyJson } from "./py-json.ts";
import type { SimMessage, SimTool } from "./types.ts";

/** Image parts become Qwen-VL's placeholder; the simulator does not look at pixels. */
const IMAGE_PLACEHOLDER = "<|vision_start|><|image_pad|><|vision_end|>";

/** The text of a message's content (text parts joined by newlines, as vLLM flattens them). */
export function contentText(content: SimMessage["content"]): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (typeof part.text === "string" ? part.text : /image/.test(part.type) ? IMAGE_PLACEHOLDER : ""))
    .filter((text) => text !== "")
    .join("\n");
}

/**
 * The body of an assistant turn exactly as Qwen3's template writes it (and as the simulated
 * model generates it): optional think block, content, then one `<tool_call>` block per call.
 *
 * @example
 * assistantBody({ content: "", toolCalls: [{ name: "bash", arguments: '{"command": "ls"}' }] });
 * // '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
 */
export function assistantBody(turn: { reasoning?: string; content: string; toolCalls: { name: string; arguments: string }[] }): string {
  let body = turn.reasoning !== undefined ? `<think>\n${turn.reasoning}\n</think>\n\n${turn.content}` : turn.content;
  turn.toolCalls.forEach((call, i) => {
    if (i > 0 || turn.content) body += "\n";
    body += toolCallText(call.name, call.arguments);
  });
  return body;
}

export function toolCallText(name: string, args: string): string {
  return `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;
}

export interface RenderOptions {
  /** Qwen3's `enable_thinking=false` (chat_template_kwargs): an empty think block opens the answer. */
  enableThinking?: boolean;
  addGenerationPrompt?: boolean;
}

/**
 * Renders a chat request's messages and tools as Qwen3 ChatML segments.
 *
 * @example
 * renderChatSegments([{ role: "user", content: "Hi" }]).join("");
 * // "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
 */
export function renderChatSegments(messages: SimMessage[], tools: SimTool[] = [], options: RenderOptions = {}): string[] {
  // `developer` is OpenAI's newer name for system; Qwen3's template only knows `system`.
  const msgs = messages.map((m) => (m.role === "developer" ? { ...m, role: "system" as const } : m));
  const segments: string[] = [];
  const first = msgs[0];
  const firstIsSystem = first?.role === "system";
  if (tools.length > 0) {
    let system = firstIsSystem ? `${contentText(first.content)}\n\n` : "";
    system += "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>";
    for (const tool of tools) system += `\n${pyJson(tool)}`;
    system +=
      '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>';
    segments.push("<|im_start|>system\n", system, "<|im_end|>\n");
  } else if (firstIsSystem) {
    segments.push("<|im_start|>system\n", contentText(first.content), "<|im_end|>\n");
  }

  const lastQuery = lastQueryIndex(msgs);
  msgs.forEach((message, index) => {
    const last = index === msgs.length - 1;
    if (message.role === "user" || (message.role === "system" && index !== 0)) {
      segments.push(`<|im_start|>${message.role}\n`, contentText(message.content), "<|im_end|>\n");
    } else if (message.role === "assistant") {
      let content = contentText(message.content);
      let reasoning = message.reasoning_content ?? message.reasoning ?? undefined;
      if (reasoning == null && content.includes("</think>")) {
        reasoning = stripStart(stripEnd(content.split("</think>")[0]!, "\n").split("<think>").at(-1)!, "\n");
        content = stripStart(content.split("</think>").at(-1)!, "\n");
      }
      let body: string;
      if (index > lastQuery && (last || reasoning)) {
        body = `<think>\n${stripEnd(stripStart(reasoning ?? "", "\n"), "\n")}\n</think>\n\n${stripStart(content, "\n")}`;
      } else {
        body = content;
      }
      (message.tool_calls ?? []).forEach((call, i) => {
        if ((i === 0 && content) || i > 0) body += "\n";
        const fn = call.function;
        body += toolCallText(fn.name, typeof fn.arguments === "string" ? fn.arguments : pyJson(fn.arguments));
      });
      segments.push("<|im_start|>assistant\n", body);
      segments.push("<|im_end|>\n");
    } else if (message.role === "tool") {
      if (index === 0 || msgs[index - 1]!.role !== "tool") segments.push("<|im_start|>user");
      segments.push("\n<tool_response>\n", contentText(message.content), "\n</tool_response>");
      if (last || msgs[index + 1]!.role !== "tool") segments.push("<|im_end|>\n");
    }
  });
  if (options.addGenerationPrompt ?? true) {
    segments.push("<|im_start|>assistant\n");
    if (options.enableThinking === false) segments.push("<think>\n\n</think>\n\n");
  }
  return segments.filter((segment) => segment !== "");
}

/** Index of the last real user query (not a wrapped tool response), as Qwen3's template finds it. */
function lastQueryIndex(messages: SimMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "user") continue;
    const text = contentText(m.content);
    if (!(text.startsWith("<tool_response>") && text.endsWith("</tool_response>"))) return i;
  }
  return messages.length - 1;
}

function stripStart(text: string, ch: string): string {
  let i = 0;
  while (text[i] === ch) i++;
  return text.slice(i);
}

function stripEnd(text: string, ch: string): string {
  let i = text.length;
  while (i > 0 && text[i - 1] === ch) i--;
  return text.slice(0, i);
}
