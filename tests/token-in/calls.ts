/**
 * Test helper of the token-in tests: Chat calls made and read as a harness makes and reads them,
 * the assistant turn sent back as harnesses send it, and the simulator's samples per rollout.
 */
import { expect } from "bun:test";
import { resolvePrompts, type ProxyHarness } from "../../proxy/testing.ts";
import { readRecords } from "../../records/index.ts";
import { ChainStart, TokenMode, TokenStatus, type ModelCall } from "../../schemas/index.ts";
import type { SimSample } from "../../simulator/testing.ts";
import { trajectoryOf } from "../../trajectories/index.ts";

/** A Chat function tool whose parameters are all required strings. */
const stringTool = (name: string, props: string[]) => ({
  type: "function",
  function: { name, description: name, parameters: { type: "object", properties: Object.fromEntries(props.map((p) => [p, { type: "string" }])), required: props } },
});

/** The tools of the stock task below. */
export const STOCK_TOOLS = [stringTool("read", ["path"]), stringTool("bash", ["command"]), stringTool("write", ["path", "content"])];

/** A simulator script task (prompt: "stock.csv"): five thinking turns, four tool calls, the answer. */
export const STOCK_TASK = {
  name: "stock",
  match: "stock.csv",
  steps: [
    { think: "Read it first.", say: "I'll look at the file first.", read: "stock.csv" },
    { think: "Sum the counts.", bash: "awk -F, 'NR > 1 { s += $2 } END { print s }' stock.csv" },
    { think: "Write it.", write: { path: "total.txt", content: "42\n" } },
    { bash: "cat total.txt" },
    { think: "Done.", finish: "total.txt holds 42." },
  ],
};

/** Qwen3's think tokens, for the trajectory's realignment of dropped reasoning. */
const QWEN3_THINK = { thinkOpen: 151667, thinkClose: 151668, thinkTrailing: [198, 271] };

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

/** The stock task's first two messages: the system prompt and the user's request. */
export const STOCK_OPENING: readonly Msg[] = [
  { role: "system", content: "You are a coding agent." },
  { role: "user", content: "stock.csv lists items and counts. Write the total to total.txt." },
];

/**
 * The stock task's tool loop as a harness runs it, up to five calls (streamed every other one):
 * each answer echoed back, each tool call answered (`read` with the CSV, anything else "ok"),
 * until an answer calls no tool. `call` sends one Chat request.
 *
 * @example
 * const answers = await stockLoop((body, stream) => chatCall(h, r, { model: "qwen3", tools: STOCK_TOOLS, ...body }, stream));
 */
export async function stockLoop(call: (body: { messages: Msg[] }, stream: boolean) => Promise<Answer>): Promise<Answer[]> {
  const messages: Msg[] = [...STOCK_OPENING];
  const answers: Answer[] = [];
  for (let i = 0; i < 5; i++) {
    const a = await call({ messages }, i % 2 === 1);
    answers.push(a);
    messages.push(echo(a));
    for (const c of a.toolCalls) messages.push({ role: "tool", tool_call_id: c.id, content: c.name === "read" ? "item,count\nbolts,12\nnuts,30\n" : "ok" });
    if (a.toolCalls.length === 0) break;
  }
  return answers;
}

/**
 * A five-call loop's records are one chain: token-in, each call continuing the one before, its
 * ids COMPLETE and equal to what the engine ran and sampled (`samples`). Returns the calls.
 *
 * @example
 * const calls = await expectOneChain(h, r.rollout_id, samplesOf(h, r.rollout_id));
 */
export async function expectOneChain(h: ProxyHarness, rolloutId: string, samples: SimSample[]): Promise<ModelCall[]> {
  const calls = await h.calls(rolloutId);
  const prompts = resolvePrompts(calls);
  expect(calls.map((c) => [c.tokenMode, c.chainId])).toEqual(calls.map(() => [TokenMode.TOKEN_IN, calls[0]!.callId]));
  expect(calls.map((c) => c.chainStart)).toEqual([ChainStart.FIRST, 0, 0, 0, 0]);
  expect(calls.map((c) => c.chainParent)).toEqual(["", ...calls.slice(0, -1).map((c) => c.callId)]);
  calls.forEach((c, i) => {
    expect(c.tokenStatus).toBe(TokenStatus.COMPLETE);
    expect(prompts.get(c.callId)).toEqual(samples[i]!.prompt_token_ids);
    expect(c.completionTokenIds).toEqual(samples[i]!.token_ids);
  });
  return calls;
}

/** The first simulator's samples of one rollout, in order. */
export const samplesOf = (h: ProxyHarness, rolloutId: string): SimSample[] => h.sims[0]!.samples.filter((s) => s.rollout === rolloutId);

/** Whether `ids` begins with `prefix`. */
export const startsWith = (ids: readonly number[], prefix: readonly number[]): boolean => ids.length >= prefix.length && prefix.every((id, i) => ids[i] === id);

/**
 * A streamed Anthropic Messages call of the token-in tests (Chat-style `tools` given as
 * Messages tools), answered as its SSE events.
 *
 * @example
 * const events = await messagesEvents(rollout, "qwen3", tools, [{ role: "user", content: "hi" }]);
 */
export async function messagesEvents(r: { anthropic_base_url: string; api_key: string }, model: string, tools: { function: { name: string; description: string; parameters: unknown } }[], messages: unknown[]): Promise<any[]> {
  const response = await fetch(`${r.anthropic_base_url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": r.api_key, "anthropic-version": "2023-06-01" },
    body: JSON.stringify({
      model,
      max_tokens: 512,
      stream: true,
      system: "You are a coding agent.",
      tools: tools.map((t) => ({ name: t.function.name, description: t.function.description, input_schema: t.function.parameters })),
      messages,
    }),
  });
  return (await response.text())
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)));
}

/** The first tool_use block of streamed Messages events and its input, put together from its deltas. */
export function firstToolUse(events: any[]): { block: { id: string; name: string } | undefined; input: unknown } {
  const block = events.find((e) => e.type === "content_block_start" && e.content_block.type === "tool_use")?.content_block;
  const json = events.filter((e) => e.type === "content_block_delta" && e.delta.type === "input_json_delta").map((e) => e.delta.partial_json).join("");
  return { block, input: json ? JSON.parse(json) : undefined };
}

/**
 * Finishes the rollout and checks its trajectory is one sample with 0 drift tokens and no fork,
 * whose trained tokens are exactly what the engine sampled, call after call.
 *
 * @example
 * await expectOneSample(h, rollout.rollout_id, samplesOf(h, rollout.rollout_id));
 */
export async function expectOneSample(h: ProxyHarness, rolloutId: string, samples: SimSample[]): Promise<void> {
  await h.control(`/control/rollouts/${rolloutId}/finish`, { reward: 1, status: "ok" });
  const t = (await trajectoryOf(readRecords(h.dataDir), rolloutId, QWEN3_THINK))!;
  expect({ samples: t.samples.length, drift: t.stats.drift_tokens, fork: t.stats.fork, broken: t.broken }).toEqual({ samples: 1, drift: 0, fork: 0, broken: [] });
  const s = t.samples[0]!;
  expect(s.response_ids.filter((_, i) => s.response_mask[i] === 1)).toEqual(samples.flatMap((x) => x.token_ids));
}
