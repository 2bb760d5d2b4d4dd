/**
 * OpenAI Responses API request → Chat Completions request.
 *
 * Conversation state lives in the request (Codex sends `store: false` and the whole
 * history as `input`); `previous_response_id` cannot be served and is refused.
 */
import type { ChatContentPart, ChatMessage, ChatRequest, ChatToolChoice } from "../chat-types.ts";
import { TranslationError } from "../chat-types.ts";
import type { ToolCatalogue } from "./tools.ts";
import { qualifiedToolName, responsesToolCatalogue } from "./tools.ts";

// Responses input items are JSON of many shapes; fields are checked as they are read.
type Json = any;

export interface ResponsesToChatOptions {
  /** Model name sent upstream; defaults to the request's model. */
  model?: string;
  /** Prior reasoning items: sent as `reasoning_content` ("keep", default) or dropped. */
  reasoning?: "keep" | "drop";
}

export interface ResponsesTranslation {
  request: ChatRequest;
  /** Needed to answer the model's tool calls as the item types the harness declared. */
  catalogue: ToolCatalogue;
}

/**
 * Translate a Responses request body into a Chat Completions request.
 *
 * @example
 * const { request } = responsesToChatRequest({
 *   model: "qwen3", instructions: "Be brief.", input: "hi", max_output_tokens: 64,
 * });
 * // request.messages = [{role:"system",content:"Be brief."},{role:"user",content:"hi"}], request.max_tokens = 64
 */
export function responsesToChatRequest(body: Json, options: ResponsesToChatOptions = {}): ResponsesTranslation {
  if (!body || typeof body !== "object") throw new TranslationError("body", "expected a JSON object");
  if (typeof body.previous_response_id === "string" && body.previous_response_id !== "") {
    throw new TranslationError("previous_response_id", "the proxy keeps no server-side state; send the full history in input (store: false)");
  }
  const keepReasoning = (options.reasoning ?? "keep") === "keep";
  const catalogue = responsesToolCatalogue(body);
  const messages: ChatMessage[] = [];
  if (typeof body.instructions === "string" && body.instructions !== "") {
    messages.push({ role: "system", content: body.instructions });
  }
  const input = body.input;
  if (typeof input === "string") messages.push({ role: "user", content: input });
  else if (Array.isArray(input)) translateItems(input, messages, catalogue, keepReasoning);
  else if (input !== undefined) throw new TranslationError("input", "expected a string or an array of items");

  const request: ChatRequest = { model: options.model ?? String(body.model ?? ""), messages };
  if (typeof body.max_output_tokens === "number") request.max_tokens = body.max_output_tokens;
  if (typeof body.temperature === "number") request.temperature = body.temperature;
  if (typeof body.top_p === "number") request.top_p = body.top_p;
  if (body.stream === true) {
    request.stream = true;
    request.stream_options = { include_usage: true };
  }
  if (catalogue.tools.length > 0) {
    request.tools = catalogue.tools;
    const choice = toolChoice(body.tool_choice, catalogue);
    if (choice !== undefined) request.tool_choice = choice;
    if (typeof body.parallel_tool_calls === "boolean") request.parallel_tool_calls = body.parallel_tool_calls;
  }
  // Structured output (Codex --output-schema): Responses nests the schema in text.format.
  const format = body.text?.format;
  if (format?.type === "json_schema") {
    request.response_format = { type: "json_schema", json_schema: { name: String(format.name ?? "output"), schema: format.schema ?? {}, ...(typeof format.strict === "boolean" ? { strict: format.strict } : {}) } };
  } else if (format?.type === "json_object") {
    request.response_format = { type: "json_object" };
  }
  if (typeof body.user === "string") request.user = body.user;
  if (typeof body.safety_identifier === "string" && request.user === undefined) request.user = body.safety_identifier;
  return { request, catalogue };
}

function translateItems(items: Json[], out: ChatMessage[], catalogue: ToolCatalogue, keepReasoning: boolean): void {
  let pendingReasoning = "";
  // The assistant message the next assistant item joins (text and calls of one turn are one message).
  let assistant: ChatMessage | undefined;
  const assistantMessage = (): ChatMessage => {
    if (!assistant) {
      assistant = { role: "assistant", content: null };
      out.push(assistant);
    }
    if (pendingReasoning !== "") {
      assistant.reasoning_content = (assistant.reasoning_content ?? "") + pendingReasoning;
      pendingReasoning = "";
    }
    return assistant;
  };
  const pendingImages: ChatContentPart[] = [];
  const flushToolImages = () => {
    if (pendingImages.length === 0) return;
    out.push({ role: "user", content: pendingImages.splice(0) });
  };

  items.forEach((item: Json, i: number) => {
    const path = `input[${i}]`;
    const type = item?.type ?? (item?.role !== undefined ? "message" : undefined);
    if (type !== "function_call_output" && type !== "custom_tool_call_output") flushToolImages();
    switch (type) {
      case "message": {
        const role = item.role;
        if (role === "assistant") {
          // Each assistant message starts a turn; function calls that follow join it.
          assistant = undefined;
          const msg = assistantMessage();
          msg.content = assistantText(item.content, `${path}.content`);
          return;
        }
        assistant = undefined;
        if (role === "user") out.push({ role: "user", content: userContent(item.content, `${path}.content`) });
        else if (role === "system" || role === "developer") out.push({ role: "system", content: plainText(item.content, `${path}.content`) });
        else throw new TranslationError(`${path}.role`, `expected user, assistant, system or developer, got ${JSON.stringify(role)}`);
        return;
      }
      case "function_call":
      case "custom_tool_call": {
        if (typeof item.call_id !== "string") throw new TranslationError(`${path}.call_id`, "expected the call's id");
        const name = qualifiedToolName(typeof item.namespace === "string" ? item.namespace : undefined, String(item.name ?? ""));
        const args = type === "function_call" ? String(item.arguments ?? "") : JSON.stringify({ input: String(item.input ?? "") });
        const msg = assistantMessage();
        (msg.tool_calls ??= []).push({ id: item.call_id, type: "function", function: { name, arguments: args } });
        return;
      }
      case "function_call_output":
      case "custom_tool_call_output": {
        assistant = undefined;
        if (typeof item.call_id !== "string") throw new TranslationError(`${path}.call_id`, "expected the id of the call it answers");
        const { text, images } = outputContent(item.output, `${path}.output`);
        out.push({ role: "tool", tool_call_id: item.call_id, content: text });
        pendingImages.push(...images);
        return;
      }
      case "reasoning": {
        assistant = undefined; // reasoning opens the next assistant turn
        if (!keepReasoning) return;
        const parts = Array.isArray(item.content) && item.content.length > 0 ? item.content : Array.isArray(item.summary) ? item.summary : [];
        pendingReasoning += parts.map((p: Json) => String(p?.text ?? "")).join("\n");
        return;
      }
      case "additional_tools":
        return; // collected by responsesToolCatalogue
      case "item_reference":
        throw new TranslationError(`${path}`, "item_reference needs server-side state the proxy does not keep; send the item itself");
      default:
        // Built-in tool items (web_search_call, local_shell_call, ...) have no Chat form; they are kept in the record only.
        return;
    }
  });
  flushToolImages();
  // A trailing reasoning item with nothing after it has no message to attach to.
}

function assistantText(content: Json, path: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw new TranslationError(path, "expected a string or an array of content parts");
  return content
    .map((p: Json) => (p?.type === "output_text" || p?.type === "input_text" || p?.type === "text" ? String(p.text ?? "") : p?.type === "refusal" ? String(p.refusal ?? "") : ""))
    .join("");
}

function plainText(content: Json, path: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw new TranslationError(path, "expected a string or an array of content parts");
  return content.map((p: Json) => String(p?.text ?? "")).join("\n");
}

function userContent(content: Json, path: string): string | ChatContentPart[] {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw new TranslationError(path, "expected a string or an array of content parts");
  const parts: ChatContentPart[] = content.map((p: Json, i: number) => contentPart(p, `${path}[${i}]`));
  return parts.every((p) => p.type === "text") ? parts.map((p) => (p as { text: string }).text).join("\n") : parts;
}

function contentPart(p: Json, path: string): ChatContentPart {
  switch (p?.type) {
    case "input_text":
    case "output_text":
    case "text":
      return { type: "text", text: String(p.text ?? "") };
    case "input_image": {
      const url = typeof p.image_url === "string" ? p.image_url : p.image_url?.url;
      if (typeof url !== "string") throw new TranslationError(`${path}.image_url`, "expected an image URL or data: URL (file_id needs the Files API, which the proxy does not serve)");
      return p.detail && p.detail !== "auto" ? { type: "image_url", image_url: { url, detail: p.detail } } : { type: "image_url", image_url: { url } };
    }
    case "input_file":
      throw new TranslationError(`${path}`, "input_file cannot be translated to Chat Completions; send its text as input_text");
    default:
      throw new TranslationError(`${path}.type`, `unsupported content part ${JSON.stringify(p?.type)} (input_text, input_image)`);
  }
}

function outputContent(output: Json, path: string): { text: string; images: ChatContentPart[] } {
  if (typeof output === "string") return { text: output, images: [] };
  if (!Array.isArray(output)) throw new TranslationError(path, "expected a string or an array of content parts");
  const texts: string[] = [];
  const images: ChatContentPart[] = [];
  output.forEach((p: Json, i: number) => {
    const part = contentPart(p, `${path}[${i}]`);
    if (part.type === "text") texts.push(part.text);
    else images.push(part);
  });
  return { text: texts.join("\n"), images };
}

function toolChoice(choice: Json, catalogue: ToolCatalogue): ChatToolChoice | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (choice === "auto" || choice === "none" || choice === "required") return choice;
  if (choice?.type === "function" || choice?.type === "custom") {
    const name = qualifiedToolName(choice.namespace, String(choice.name ?? ""));
    if (!catalogue.origins.has(name)) throw new TranslationError("tool_choice.name", `no tool named ${JSON.stringify(name)} is declared`);
    return { type: "function", function: { name } };
  }
  if (choice?.type === "allowed_tools") return choice.mode === "required" ? "required" : "auto";
  throw new TranslationError("tool_choice", `unsupported ${JSON.stringify(choice?.type ?? choice)} (auto, none, required, function)`);
}
