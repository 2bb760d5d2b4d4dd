#!/usr/bin/env bun
/**
 * forge-react: a minimal ReAct agent over Chat Completions (bash, read, write, finish), run as its
 * own process by the forge-react adapter. It needs nothing installed but Bun.
 *
 * Environment: OPENAI_BASE_URL, OPENAI_API_KEY, FORGE_MODEL, FORGE_PROMPT; cwd is the workspace.
 * Flags: --max-turns N (default 20), --temperature T.
 * Exit codes: 0 finished (final answer on stdout), 1 model/API error, 3 out of turns.
 */
import { parseArgs } from "node:util";
import { TOOLS, runTool } from "./tools.ts";

type Message = { role: string; content: string | null; tool_calls?: ToolCall[]; tool_call_id?: string };
type ToolCall = { id: string; type: "function"; function: { name: string; arguments: string } };

const { values } = parseArgs({ options: { "max-turns": { type: "string", default: "20" }, temperature: { type: "string" } } });
const maxTurns = Number(values["max-turns"]);
const baseUrl = process.env.OPENAI_BASE_URL;
const apiKey = process.env.OPENAI_API_KEY ?? "";
const model = process.env.FORGE_MODEL;
const prompt = process.env.FORGE_PROMPT;
if (!baseUrl || !model || !prompt) {
  console.error("forge-react: OPENAI_BASE_URL, FORGE_MODEL and FORGE_PROMPT must be set");
  process.exit(1);
}
const cwd = process.cwd();
const log = (line: string) => console.error(`forge-react: ${line}`);

// The working directory in the system prompt also keeps the k rollouts of one task apart for a
// policy that keys its sampling on the conversation (the simulator does).
const messages: Message[] = [
  {
    role: "system",
    content: `You are an autonomous agent working in a Linux shell. Working directory: ${cwd}\nUse the tools to complete the task, then call finish with a short answer. Paths are relative to the working directory.`,
  },
  { role: "user", content: prompt },
];

/** One Chat Completions call; retries connection errors and 5xx/429 a few times (not 4xx). */
async function complete(): Promise<Message> {
  const body = JSON.stringify({ model, messages, tools: TOOLS, tool_choice: "auto", ...(values.temperature ? { temperature: Number(values.temperature) } : {}) });
  let lastError = "";
  for (let attempt = 0; attempt < 4; attempt++) {
    if (attempt > 0) await Bun.sleep(250 * 2 ** attempt);
    let response: Response;
    try {
      response = await fetch(`${baseUrl!.replace(/\/$/, "")}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
        body,
      });
    } catch (error) {
      lastError = `cannot reach ${baseUrl}: ${(error as Error).message}`;
      continue;
    }
    const text = await response.text();
    if (response.status >= 500 || response.status === 429) {
      lastError = `HTTP ${response.status}: ${text.slice(0, 500)}`;
      continue;
    }
    if (!response.ok) throw new Error(`HTTP ${response.status}: ${text.slice(0, 500)}`);
    const parsed = JSON.parse(text) as { choices?: { message?: Message }[] };
    const message = parsed.choices?.[0]?.message;
    if (!message) throw new Error(`the response has no choices[0].message: ${text.slice(0, 300)}`);
    return message;
  }
  throw new Error(lastError);
}

try {
  for (let turn = 0; turn < maxTurns; turn++) {
    const message = await complete();
    const calls = message.tool_calls ?? [];
    messages.push({ role: "assistant", content: message.content ?? null, ...(calls.length ? { tool_calls: calls } : {}) });
    if (message.content) log(`turn ${turn + 1}: ${message.content.split("\n")[0]}`);
    if (calls.length === 0) {
      // No tool call: the text is the final answer.
      console.log(message.content ?? "");
      process.exit(0);
    }
    let finished: string | undefined;
    for (const call of calls) {
      log(`turn ${turn + 1}: ${call.function.name} ${call.function.arguments.slice(0, 200)}`);
      const result = await runTool(call.function.name, call.function.arguments, cwd);
      messages.push({ role: "tool", tool_call_id: call.id, content: result.output });
      if (result.finished !== undefined) finished = result.finished;
    }
    if (finished !== undefined) {
      console.log(finished);
      process.exit(0);
    }
  }
  log(`out of turns (--max-turns ${maxTurns}) before finish`);
  process.exit(3);
} catch (error) {
  log(`model call failed: ${(error as Error).message}`);
  process.exit(1);
}
