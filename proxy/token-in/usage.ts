/**
 * A token-in answer's `usage`, in the shapes vLLM 0.33.0's chat route writes it
 * (`vllm/entrypoints/openai/chat_completion/serving.py`, `UsageInfo` in
 * `vllm/entrypoints/serve/engine/protocol.py`: fields in the order prompt_tokens,
 * total_tokens, completion_tokens, prompt_tokens_details, completion_tokens_details).
 * `completion_tokens_details` is `{reasoning_tokens}` where the server has a reasoning parser
 * (`_include_reasoning_tokens_details = bool(reasoning_parser)`), else null; `reasoning` is
 * model/'s count (`derenderChat(...).reasoningTokens`, `chatStreamDerenderer(...).reasoningTokens()`),
 * null for no reasoning parser.
 */

export interface TokenCounts {
  prompt: number;
  completion: number;
}

const details = (reasoning: number | null) => (reasoning === null ? null : { reasoning_tokens: reasoning });

/**
 * The non-streamed answer's usage: sent as `model_dump()`, every field (prompt_tokens_details
 * null: the proxy reports no cached tokens).
 *
 * @example
 * answerUsage({ prompt: 9, completion: 12 }, 5)
 * // { prompt_tokens: 9, total_tokens: 21, completion_tokens: 12, prompt_tokens_details: null, completion_tokens_details: { reasoning_tokens: 5 } }
 */
export function answerUsage(n: TokenCounts, reasoning: number | null) {
  return { prompt_tokens: n.prompt, total_tokens: n.prompt + n.completion, completion_tokens: n.completion, prompt_tokens_details: null, completion_tokens_details: details(reasoning) };
}

/**
 * The usage chunk at the end of a stream: a chunk without choices is sent `exclude_none`, so
 * prompt_tokens_details (None) is left out, and completion_tokens_details is there only with a
 * reasoning parser.
 */
export function streamUsage(n: TokenCounts, reasoning: number | null) {
  const usage: Record<string, unknown> = { prompt_tokens: n.prompt, total_tokens: n.prompt + n.completion, completion_tokens: n.completion };
  if (reasoning !== null) usage.completion_tokens_details = details(reasoning);
  return usage;
}

/**
 * A chunk's usage so far with `continuous_usage_stats` (`include_continuous_usage`): chunks with
 * choices are sent `exclude_unset`, and the route sets these four, completion_tokens_details to
 * null without a reasoning parser; the role chunk's counts are 0 completion and 0 reasoning tokens.
 */
export function continuousUsage(prompt: number, completion: number, reasoning: number | null) {
  return { prompt_tokens: prompt, total_tokens: prompt + completion, completion_tokens: completion, completion_tokens_details: details(reasoning) };
}
