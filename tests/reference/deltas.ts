/**
 * Answers and stream deltas in one shape, whether they come from model/ or from vLLM through the
 * oracle, so the parsing and token-in suites compare them field for field.
 */

export type Answer = { reasoning: string | null; content: string | null; tool_calls: { name: string; arguments: string }[] };
export type Delta = { content?: string; reasoning?: string; tool_calls?: { index: number; id: boolean; name?: string; arguments?: string }[] };

/**
 * A delta with its empty fields left out and each tool call's id reduced to whether it is there
 * (ids are random on both sides).
 *
 * @example
 * normalizeDelta({ content: "", reasoning: "hm" }) // { reasoning: "hm" }
 */
export function normalizeDelta(d: { content?: string | null; reasoning?: string | null; tool_calls?: any[]; toolCalls?: any[] } | null | undefined): Delta {
  const out: Delta = {};
  if (d?.content) out.content = d.content;
  if (d?.reasoning) out.reasoning = d.reasoning;
  const calls = d?.tool_calls ?? d?.toolCalls ?? [];
  if (calls.length > 0) {
    out.tool_calls = calls.map((c: any) => ({
      index: c.index,
      id: c.id != null,
      ...(c.function?.name != null ? { name: c.function.name } : {}),
      ...(c.function?.arguments != null ? { arguments: c.function.arguments } : {}),
    }));
  }
  return out;
}

/** A Chat answer with its finish reason, as the rendering suites compare the simulator's with vLLM's. */
export type ChatAnswer = { content: string | null; reasoning: string | null; tool_calls: { name: string; arguments: string }[]; finish_reason?: string };

/**
 * A Chat message (an OpenAI-style choice's, or vLLM's derender through the oracle) as a ChatAnswer.
 *
 * @example
 * chatAnswerOf(choice.message, choice.finish_reason)
 */
export function chatAnswerOf(message: Record<string, any>, finishReason: string | undefined): ChatAnswer {
  return {
    content: message.content ?? null,
    reasoning: message.reasoning ?? message.reasoning_content ?? null,
    tool_calls: (message.tool_calls ?? []).map((t: any) => ({ name: t.function.name, arguments: t.function.arguments })),
    finish_reason: finishReason,
  };
}

/**
 * A streamed Chat answer (its SSE text) merged into one ChatAnswer: contents, reasoning and each
 * tool call's name and arguments concatenated, the last finish reason.
 *
 * @example
 * mergedChatStream(await response.text())
 */
export function mergedChatStream(sse: string): ChatAnswer {
  const merged: ChatAnswer = { content: null, reasoning: null, tool_calls: [] };
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: {")) continue;
    for (const ch of JSON.parse(line.slice(6)).choices ?? []) {
      const d = ch.delta ?? {};
      if (d.content) merged.content = (merged.content ?? "") + d.content;
      const r = d.reasoning ?? d.reasoning_content;
      if (r) merged.reasoning = (merged.reasoning ?? "") + r;
      for (const t of d.tool_calls ?? []) {
        merged.tool_calls[t.index] ??= { name: "", arguments: "" };
        merged.tool_calls[t.index]!.name += t.function?.name ?? "";
        merged.tool_calls[t.index]!.arguments += t.function?.arguments ?? "";
      }
      if (ch.finish_reason) merged.finish_reason = ch.finish_reason;
    }
  }
  return merged;
}
