/**
 * A multi-turn tool-calling conversation as an agent harness drives it, for the benchmarks that
 * measure what a call costs the proxy when the conversation grows (bench/ab.ts --scenario
 * toolloop): a 4 KB system prompt, six tools, a task the policy simulator plays in twelve tool
 * calls and a final answer, and 1.5 KB tool results; the harness streams each call, sends the
 * assistant turn back with its arguments re-serialized compact and without the reasoning (as
 * harnesses do), then the tool results, until the model answers without a call.
 */
import type { PolicyScriptInput } from "../../schemas/index.ts";
import { words } from "./bodies.ts";

const fn = (name: string, description: string, props: Record<string, string>) => ({
  type: "function",
  function: {
    name,
    description,
    parameters: { type: "object", properties: Object.fromEntries(Object.entries(props).map(([p, d]) => [p, { type: "string", description: d }])), required: Object.keys(props) },
  },
});

export const TOOL_LOOP_TOOLS = [
  fn("read", "Read a file of the workspace and return its text with line numbers.", { path: "The file's path, relative to the workspace." }),
  fn("bash", "Run a shell command in the workspace and return its output (stdout then stderr).", { command: "The command line, run with bash -lc." }),
  fn("write", "Write a file of the workspace, replacing it.", { path: "The file's path.", content: "The whole new content." }),
  fn("grep", "Search the workspace for a regular expression.", { pattern: "The regular expression.", path: "Where to search." }),
  fn("list", "List a directory of the workspace.", { path: "The directory." }),
  fn("finish", "End the task with a short report.", { report: "What was done." }),
];

const TASK = "Count the items in inventory.csv and write the total to total.txt, then check it.";
/** Twelve tool calls, then the final answer (no call). */
export const TOOL_LOOP_SCRIPT: PolicyScriptInput = {
  thinking: true,
  failure_rate: 0,
  tasks: [
    {
      name: "inventory",
      match: "inventory.csv",
      steps: [
        { think: "Look at the workspace first.", say: "I'll look around first.", tool: { name: "list", arguments: { path: "." } } },
        { read: "inventory.csv" },
        { tool: { name: "grep", arguments: { pattern: "^[a-z]+,[0-9]+$", path: "inventory.csv" } } },
        { think: "Sum the second column.", bash: "awk -F, 'NR > 1 { s += $2 } END { print s }' inventory.csv" },
        { bash: "wc -l inventory.csv" },
        { read: "README.md" },
        { write: { path: "total.txt", content: "1234\n" } },
        { bash: "cat total.txt" },
        { bash: "test \"$(cat total.txt)\" = 1234 && echo ok" },
        { read: "total.txt" },
        { bash: "ls -la" },
        { bash: "git status --short" },
        { think: "Done.", say: "total.txt holds 1234." },
      ],
    },
  ],
};

/** The model calls of one conversation with TOOL_LOOP_SCRIPT: one per step (the twelve tool calls, then the answer). */
export const TOOL_LOOP_CALLS = TOOL_LOOP_SCRIPT.tasks![0]!.steps.length;

/**
 * TOOL_LOOP_SCRIPT with `turns` model calls a conversation: its twelve tool calls, then its
 * middle ten again in turn (the history growing by a tool result each time) until one call is
 * left, then the answer. `toolLoopScript(TOOL_LOOP_CALLS)` is TOOL_LOOP_SCRIPT.
 *
 * @example
 * toolLoopScript(60).tasks![0]!.steps.length // 60
 */
export function toolLoopScript(turns: number): PolicyScriptInput {
  const steps = TOOL_LOOP_SCRIPT.tasks![0]!.steps;
  if (!Number.isInteger(turns) || turns < 2) throw new Error(`toolLoopScript: turns must be an integer of 2 or more, not ${turns}`);
  const tools = steps.slice(0, -1);
  const again = tools.slice(1, -1);
  const out = tools.slice(0, Math.min(tools.length, turns - 1));
  for (let i = 0; out.length < turns - 1; i++) out.push(again[i % again.length]!);
  return { ...TOOL_LOOP_SCRIPT, tasks: [{ ...TOOL_LOOP_SCRIPT.tasks![0]!, steps: [...out, steps.at(-1)!] }] };
}

const SYSTEM = `You are a coding agent working in a sandboxed workspace. ${words(700)}`;
const RESULT = `${words(250)}\n`;

type Message = { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string };

/** One Chat answer as a harness reads it, streamed (SSE deltas) or not. */
function readAnswer(text: string, stream: boolean): { content: string; calls: { id: string; name: string; arguments: string }[] } {
  if (!stream) {
    const m = (JSON.parse(text) as any).choices[0].message;
    return { content: m.content ?? "", calls: (m.tool_calls ?? []).map((c: any) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })) };
  }
  let content = "";
  const calls: { id: string; name: string; arguments: string }[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: {")) continue;
    const delta = (JSON.parse(line.slice(6)) as any).choices?.[0]?.delta ?? {};
    content += delta.content ?? "";
    for (const t of delta.tool_calls ?? []) {
      const call = (calls[t.index] ??= { id: "", name: "", arguments: "" });
      call.id += t.id ?? "";
      call.name += t.function?.name ?? "";
      call.arguments += t.function?.arguments ?? "";
    }
  }
  return { content, calls };
}

/**
 * Drives one conversation through `url` (a rollout's Chat route) until the model answers without
 * a tool call; returns the number of model calls (13 with TOOL_LOOP_SCRIPT).
 *
 * @example
 * const calls = await runToolLoop(`${proxy.url}/r/${r.rollout_id}/v1/chat/completions`, r.api_key, { stream: true });
 */
export async function runToolLoop(url: string, key: string, o: { stream: boolean; maxCalls?: number }): Promise<number> {
  const messages: Message[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: TASK },
  ];
  for (let call = 1; call <= (o.maxCalls ?? 30); call++) {
    const body = JSON.stringify({ model: "qwen3", stream: o.stream, ...(o.stream ? { stream_options: { include_usage: true } } : {}), tools: TOOL_LOOP_TOOLS, messages });
    const res = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`tool loop call ${call}: HTTP ${res.status}: ${text.slice(0, 300)}`);
    const answer = readAnswer(text, o.stream);
    messages.push({
      role: "assistant",
      content: answer.content.trim(),
      ...(answer.calls.length ? { tool_calls: answer.calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(JSON.parse(c.arguments)) } })) } : {}),
    });
    if (answer.calls.length === 0) return call;
    for (const c of answer.calls) messages.push({ role: "tool", tool_call_id: c.id, content: RESULT });
  }
  throw new Error(`tool loop: no final answer after ${o.maxCalls ?? 30} calls`);
}
