/**
 * Anthropic Messages request → OpenAI Chat Completions request.
 *
 * The record keeps the harness's original body, so anything dropped here
 * (cache_control, signatures, server tools) is still in the training data.
 */
import type { ChatContentPart, ChatMessage, ChatRequest, ChatTool, ChatToolChoice } from "../chat-types.ts";
import { TranslationError } from "../chat-types.ts";

// The Anthropic body is JSON of many shapes; fields are checked as they are read.
type Json = any;

export interface AnthropicToChatOptions {
  /** Model name sent upstream (the proxy may map names); defaults to the request's model. */
  model?: string;
  /** Prior-turn thinking blocks: sent as `reasoning_content` ("keep", default) or dropped. */
  thinking?: "keep" | "drop";
}

/**
 * Translate an Anthropic Messages request body into a Chat Completions request.
 *
 * @example
 * const chat = anthropicToChatRequest({
 *   model: "qwen3", max_tokens: 256, system: "Be brief.",
 *   messages: [{ role: "user", content: "hi" }],
 * });
 * // chat.messages = [{role:"system",content:"Be brief."},{role:"user",content:"hi"}], chat.max_tokens = 256
 */
export function anthropicToChatRequest(body: Json, options: AnthropicToChatOptions = {}): ChatRequest {
  if (!body || typeof body !== "object") throw new TranslationError("body", "expected a JSON object");
  if (!Array.isArray(body.messages)) throw new TranslationError("messages", "expected an array of messages");
  const keepThinking = (options.thinking ?? "keep") === "keep";
  const messages: ChatMessage[] = [];
  const system = systemText(body.system, "system");
  if (system !== undefined) messages.push({ role: "system", content: system });
  body.messages.forEach((m: Json, i: number) => {
    messages.push(...translateMessage(m, `messages[${i}]`, keepThinking));
  });

  const out: ChatRequest = { model: options.model ?? String(body.model ?? ""), messages };
  if (typeof body.max_tokens === "number") out.max_tokens = body.max_tokens;
  if (typeof body.temperature === "number") out.temperature = body.temperature;
  if (typeof body.top_p === "number") out.top_p = body.top_p;
  if (typeof body.top_k === "number") out.top_k = body.top_k;
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) out.stop = body.stop_sequences.map(String);
  if (body.stream === true) {
    out.stream = true;
    // Usage arrives only in a final chunk when asked for; message_delta needs it.
    out.stream_options = { include_usage: true };
  }
  if (typeof body.metadata?.user_id === "string") out.user = body.metadata.user_id;
  const tools = translateTools(body.tools);
  if (tools.length > 0) out.tools = tools;
  const choice = translateToolChoice(body.tool_choice);
  if (choice.tool_choice !== undefined && tools.length > 0) {
    out.tool_choice = choice.tool_choice;
  }
  if (choice.parallel === false && tools.length > 0) out.parallel_tool_calls = false;
  return out;
}

/** System prompt as one string: blocks joined by a blank line, cache_control ignored. */
function systemText(system: Json, path: string): string | undefined {
  if (system === undefined || system === null) return undefined;
  if (typeof system === "string") return system === "" ? undefined : system;
  if (!Array.isArray(system)) throw new TranslationError(path, "expected a string or an array of text blocks");
  const texts = system.map((b: Json, i: number) => {
    if (b?.type !== "text" || typeof b.text !== "string") {
      throw new TranslationError(`${path}[${i}]`, `expected {type:"text", text}, got type ${JSON.stringify(b?.type)}`);
    }
    return b.text as string;
  });
  return texts.length === 0 ? undefined : texts.join("\n\n");
}

function translateMessage(m: Json, path: string, keepThinking: boolean): ChatMessage[] {
  const role = m?.role;
  if (role === "system") {
    const text = systemText(typeof m.content === "string" ? m.content : m.content, `${path}.content`);
    return text === undefined ? [] : [{ role: "system", content: text }];
  }
  if (role !== "user" && role !== "assistant") {
    throw new TranslationError(`${path}.role`, `expected "user" or "assistant", got ${JSON.stringify(role)}`);
  }
  const content = m.content;
  if (typeof content === "string") return [{ role, content }];
  if (!Array.isArray(content)) throw new TranslationError(`${path}.content`, "expected a string or an array of blocks");
  return role === "user" ? userBlocks(content, `${path}.content`) : [assistantBlocks(content, `${path}.content`, keepThinking)];
}

/** tool_result blocks become tool messages (first, as Chat requires them right after the call); the rest one user message. */
function userBlocks(blocks: Json[], path: string): ChatMessage[] {
  const tools: ChatMessage[] = [];
  const parts: ChatContentPart[] = [];
  // Images inside tool results: Chat tool messages carry text only, so they follow as a user message.
  const toolImages: ChatContentPart[] = [];
  blocks.forEach((b: Json, i: number) => {
    const p = `${path}[${i}]`;
    switch (b?.type) {
      case "text":
        parts.push({ type: "text", text: String(b.text ?? "") });
        break;
      case "image":
        parts.push(imagePart(b.source, `${p}.source`));
        break;
      case "document":
        parts.push({ type: "text", text: documentText(b, p) });
        break;
      case "tool_result": {
        if (typeof b.tool_use_id !== "string") throw new TranslationError(`${p}.tool_use_id`, "expected the id of the tool_use it answers");
        const { text, images } = toolResultContent(b.content, `${p}.content`);
        tools.push({ role: "tool", tool_call_id: b.tool_use_id, content: text });
        // is_error has no Chat equivalent; harnesses already put the error text in the content.
        toolImages.push(...images);
        break;
      }
      default:
        throw new TranslationError(`${p}.type`, `unsupported user block type ${JSON.stringify(b?.type)} (text, image, document, tool_result)`);
    }
  });
  const out: ChatMessage[] = [...tools];
  const userParts = [...toolImages, ...parts];
  if (userParts.length > 0) out.push({ role: "user", content: simplify(userParts) });
  return out;
}

function assistantBlocks(blocks: Json[], path: string, keepThinking: boolean): ChatMessage {
  const texts: string[] = [];
  const reasoning: string[] = [];
  const calls: NonNullable<ChatMessage["tool_calls"]> = [];
  blocks.forEach((b: Json, i: number) => {
    const p = `${path}[${i}]`;
    switch (b?.type) {
      case "text":
        texts.push(String(b.text ?? ""));
        break;
      case "thinking":
        if (keepThinking) reasoning.push(String(b.thinking ?? ""));
        break;
      case "redacted_thinking":
        break; // encrypted by Anthropic; meaningless to another model
      case "tool_use":
        if (typeof b.id !== "string" || typeof b.name !== "string") {
          throw new TranslationError(p, "tool_use needs a string id and name");
        }
        calls.push({ id: b.id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
        break;
      default:
        throw new TranslationError(`${p}.type`, `unsupported assistant block type ${JSON.stringify(b?.type)} (text, thinking, tool_use)`);
    }
  });
  const msg: ChatMessage = { role: "assistant", content: texts.length > 0 ? texts.join("") : calls.length > 0 ? null : "" };
  if (calls.length > 0) msg.tool_calls = calls;
  if (reasoning.length > 0) msg.reasoning_content = reasoning.join("");
  return msg;
}

function toolResultContent(content: Json, path: string): { text: string; images: ChatContentPart[] } {
  if (content === undefined || content === null) return { text: "", images: [] };
  if (typeof content === "string") return { text: content, images: [] };
  if (!Array.isArray(content)) throw new TranslationError(path, "expected a string or an array of blocks");
  const texts: string[] = [];
  const images: ChatContentPart[] = [];
  content.forEach((b: Json, i: number) => {
    if (b?.type === "text") texts.push(String(b.text ?? ""));
    else if (b?.type === "image") images.push(imagePart(b.source, `${path}[${i}].source`));
    else if (b?.type === "document") texts.push(documentText(b, `${path}[${i}]`));
    else throw new TranslationError(`${path}[${i}].type`, `unsupported tool_result block ${JSON.stringify(b?.type)} (text, image)`);
  });
  return { text: texts.join("\n"), images };
}

function documentText(b: Json, path: string): string {
  const src = b.source;
  if (src?.type === "text" && typeof src.data === "string") return src.data;
  throw new TranslationError(`${path}.source`, "only text documents can be translated to Chat Completions");
}

/**
 * An Anthropic image source as a Chat `image_url` part (base64 becomes a data: URL).
 *
 * @example
 * imagePart({ type: "base64", media_type: "image/png", data: "iVBO" }, "x")
 * // { type: "image_url", image_url: { url: "data:image/png;base64,iVBO" } }
 */
export function imagePart(source: Json, path: string): ChatContentPart {
  if (source?.type === "base64" && typeof source.data === "string") {
    return { type: "image_url", image_url: { url: `data:${source.media_type ?? "image/png"};base64,${source.data}` } };
  }
  if (source?.type === "url" && typeof source.url === "string") return { type: "image_url", image_url: { url: source.url } };
  throw new TranslationError(path, `unsupported image source ${JSON.stringify(source?.type)} (base64 or url)`);
}

/** A single text part is sent as a plain string, which every chat template understands. */
function simplify(parts: ChatContentPart[]): string | ChatContentPart[] {
  if (parts.every((p) => p.type === "text")) return parts.map((p) => (p as { text: string }).text).join("\n");
  return parts;
}

function translateTools(tools: Json): ChatTool[] {
  if (!Array.isArray(tools)) return [];
  const out: ChatTool[] = [];
  tools.forEach((t: Json, i: number) => {
    // Server tools (web_search_2025..., bash_2025...) run at Anthropic; a local model cannot serve them.
    if (t?.type !== undefined && t.type !== "custom" && t.input_schema === undefined) return;
    if (typeof t?.name !== "string") throw new TranslationError(`tools[${i}].name`, "expected a string");
    const fn: ChatTool["function"] = { name: t.name, parameters: t.input_schema ?? { type: "object", properties: {} } };
    if (typeof t.description === "string") fn.description = t.description;
    if (typeof t.strict === "boolean") fn.strict = t.strict;
    out.push({ type: "function", function: fn });
  });
  return out;
}

function translateToolChoice(choice: Json): { tool_choice?: ChatToolChoice; parallel?: boolean } {
  if (!choice || typeof choice !== "object") return {};
  const parallel = choice.disable_parallel_tool_use === true ? false : undefined;
  switch (choice.type) {
    case "auto":
      return { tool_choice: "auto", parallel };
    case "any":
      return { tool_choice: "required", parallel };
    case "none":
      return { tool_choice: "none" };
    case "tool":
      return { tool_choice: { type: "function", function: { name: String(choice.name) } }, parallel };
    default:
      throw new TranslationError("tool_choice.type", `unsupported ${JSON.stringify(choice.type)} (auto, any, tool, none)`);
  }
}
