/**
 * Test helper of the token-in tests: Chat calls made and read as a harness makes and reads them,
 * the assistant turn sent back as harnesses send it, and the simulator's samples per rollout.
 */
import type { ProxyHarness } from "../proxy/testing.ts";
import type { SimSample } from "../simulator/index.ts";

export type Msg = { role: string; content?: string | null; tool_calls?: any[]; tool_call_id?: string };
export type Answer = { content: string; reasoning: string; toolCalls: { id: string; name: string; arguments: string }[] };

/**
 * One Chat call (body: model, tools, messages, …), streamed or not, read as a harness reads it.
 *
 * @example
 * const answer = await chatCall(h, rollout, { model: "qwen3", tools, messages }, true);
 */
export async function chatCall(h: ProxyHarness, r: { api_key: string; openai_base_url: string }, body: Record<string, unknown>, stream: boolean): Promise<Answer> {
  const client = h.client(r);
  if (!stream) {
    const a = (await client.chat.completions.create({ ...body, stream: false } as any)) as any;
    const m = a.choices[0].message;
    return { content: m.content ?? "", reasoning: m.reasoning ?? m.reasoning_content ?? "", toolCalls: (m.tool_calls ?? []).map((c: any) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })) };
  }
  const out: Answer = { content: "", reasoning: "", toolCalls: [] };
  for await (const chunk of (await client.chat.completions.create({ ...body, stream: true } as any)) as any) {
    const d = chunk.choices[0]?.delta ?? {};
    out.content += d.content ?? "";
    out.reasoning += d.reasoning ?? d.reasoning_content ?? "";
    for (const t of d.tool_calls ?? []) {
      const call = (out.toolCalls[t.index] ??= { id: "", name: "", arguments: "" });
      call.id += t.id ?? "";
      call.name += t.function?.name ?? "";
      call.arguments += t.function?.arguments ?? "";
    }
  }
  return out;
}

/**
 * The assistant turn as harnesses send it back: text trimmed, arguments re-serialized compact,
 * reasoning left out.
 *
 * @example
 * messages.push(echo(answer));
 */
export const echo = (a: Answer): Msg => ({
  role: "assistant",
  content: a.content.trim(),
  ...(a.toolCalls.length ? { tool_calls: a.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(JSON.parse(c.arguments)) } })) } : {}),
});

/** The first simulator's samples of one rollout, in order. */
export const samplesOf = (h: ProxyHarness, rolloutId: string): SimSample[] => h.sims[0]!.samples.filter((s) => s.rollout === rolloutId);

/** Whether `ids` begins with `prefix`. */
export const startsWith = (ids: readonly number[], prefix: readonly number[]): boolean => ids.length >= prefix.length && prefix.every((id, i) => ids[i] === id);
