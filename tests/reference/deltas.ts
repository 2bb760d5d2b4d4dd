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
