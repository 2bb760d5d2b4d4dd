/**
 * Anthropic `count_tokens` answered with the upstream's own tokenizer.
 *
 * vLLM (and SGLang's OpenAI server) expose `POST /tokenize` at the server root, which
 * applies the model's chat template to `messages` and `tools` and returns `{count, tokens}`.
 * Where the upstream has no such endpoint, an estimate (UTF-8 bytes / 4) is returned and
 * labelled `source: "estimate"` so the proxy can tell the harness (x-forge-token-count header).
 */
import type { ChatRequest } from "../chat-types.ts";

export interface TokenCount {
  input_tokens: number;
  source: "upstream" | "estimate";
}

export interface CountTokensOptions {
  /** The upstream's OpenAI base URL, e.g. http://127.0.0.1:8000/v1 (the /v1 is stripped). */
  upstreamBaseUrl: string;
  fetch?: typeof fetch;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/**
 * Where vLLM serves /tokenize for an OpenAI base URL.
 *
 * @example
 * tokenizeUrl("http://h:8000/v1/") // "http://h:8000/tokenize"
 */
export function tokenizeUrl(upstreamBaseUrl: string): string {
  return `${upstreamBaseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")}/tokenize`;
}

/**
 * A labelled estimate: about four UTF-8 bytes per token for English and code.
 *
 * @example
 * estimateTokens({ model: "m", messages: [{ role: "user", content: "x".repeat(40) }] }).source // "estimate"
 */
export function estimateTokens(chat: Pick<ChatRequest, "model" | "messages" | "tools">): TokenCount {
  const bytes = new TextEncoder().encode(JSON.stringify({ messages: chat.messages, tools: chat.tools ?? [] })).length;
  return { input_tokens: Math.ceil(bytes / 4), source: "estimate" };
}

/** Posts a JSON body to the upstream's `/tokenize`; the proxy passes its sticky upstream client. */
export type TokenizeSender = (body: Uint8Array) => Promise<Response | undefined>;

/**
 * Count the prompt tokens of a (translated) chat request with the upstream's tokenizer.
 * `upstream` is an OpenAI base URL (fetched directly) or a sender of the proxy's client.
 *
 * @example
 * const n = await countChatTokens({ model: "qwen3", messages: [{ role: "user", content: "hi" }] },
 *   { upstreamBaseUrl: "http://127.0.0.1:8000/v1" });
 * // { input_tokens: 9, source: "upstream" } against vLLM; an estimate where /tokenize is missing
 */
export async function countChatTokens(chat: ChatRequest, options: CountTokensOptions | { send: TokenizeSender }): Promise<TokenCount> {
  const body: Record<string, unknown> = { model: chat.model, messages: chat.messages, add_generation_prompt: true };
  if (chat.tools && chat.tools.length > 0) body.tools = chat.tools;
  const bytes = new TextEncoder().encode(JSON.stringify(body));
  const send: TokenizeSender =
    "send" in options
      ? options.send
      : (b) =>
          (options.fetch ?? fetch)(tokenizeUrl(options.upstreamBaseUrl), {
            method: "POST",
            headers: { "content-type": "application/json", ...options.headers },
            body: b,
            signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
          });
  try {
    const res = await send(bytes);
    if (res?.ok) {
      const json = (await res.json()) as { count?: unknown; tokens?: unknown };
      if (typeof json.count === "number") return { input_tokens: json.count, source: "upstream" };
      if (Array.isArray(json.tokens)) return { input_tokens: json.tokens.length, source: "upstream" };
    } else {
      await res?.body?.cancel();
    }
  } catch {
    // unreachable or no such endpoint: fall back to the labelled estimate
  }
  return estimateTokens(chat);
}
