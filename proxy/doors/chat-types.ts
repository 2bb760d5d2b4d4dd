/**
 * The subset of OpenAI Chat Completions shapes the translators produce and consume.
 * Kept loose on purpose (extra fields pass through): vLLM and SGLang add their own
 * fields (`prompt_token_ids`, `token_ids`, `reasoning_content`, `stop_reason`).
 */

export type ChatContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string; detail?: string } };

export interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool";
  content: string | ChatContentPart[] | null;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
  /** vLLM / Qwen chat templates read prior reasoning from this field. */
  reasoning_content?: string;
  name?: string;
}

export interface ChatTool {
  type: "function";
  function: { name: string; description?: string; parameters?: unknown; strict?: boolean };
}

export type ChatToolChoice =
  | "auto"
  | "none"
  | "required"
  | { type: "function"; function: { name: string } };

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  tool_choice?: ChatToolChoice;
  parallel_tool_calls?: boolean;
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stop?: string[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean; continuous_usage_stats?: boolean };
  user?: string;
  [extra: string]: unknown;
}

export interface ChatUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
}

export interface ChatResponseMessage {
  role?: string;
  content?: string | null;
  reasoning_content?: string | null;
  /** Newer vLLM versions name the field `reasoning`. */
  reasoning?: string | null;
  tool_calls?: ChatToolCall[] | null;
  refusal?: string | null;
}

export interface ChatChoice {
  index?: number;
  message: ChatResponseMessage;
  finish_reason?: string | null;
  /** vLLM: the stop string (or token id) that ended generation. */
  stop_reason?: string | number | null;
}

export interface ChatResponse {
  id?: string;
  model?: string;
  created?: number;
  choices: ChatChoice[];
  usage?: ChatUsage | null;
  prompt_token_ids?: number[];
  [extra: string]: unknown;
}

export interface ChatDeltaToolCall {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

export interface ChatChunkChoice {
  index?: number;
  delta?: {
    role?: string;
    content?: string | null;
    reasoning_content?: string | null;
    reasoning?: string | null;
    tool_calls?: ChatDeltaToolCall[] | null;
  };
  finish_reason?: string | null;
  stop_reason?: string | number | null;
}

export interface ChatChunk {
  id?: string;
  model?: string;
  created?: number;
  choices?: ChatChunkChoice[];
  usage?: ChatUsage | null;
  prompt_token_ids?: number[];
  [extra: string]: unknown;
}

/** Why a request could not be translated; `path` names the offending field. */
export class TranslationError extends Error {
  override name = "TranslationError";
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

/** Reasoning text of a chat message or delta, whichever field the server used. */
export function reasoningOf(m: { reasoning_content?: string | null; reasoning?: string | null } | undefined): string {
  return m?.reasoning_content ?? m?.reasoning ?? "";
}
