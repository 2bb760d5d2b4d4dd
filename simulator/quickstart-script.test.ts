/**
 * Plays examples/policies/quickstart.yaml through the simulator with a small ReAct loop that
 * really runs the tool calls in a workspace, for two tool sets (forge-react's bash/read/write/
 * finish and a Codex-like shell-only argv tool), and checks that the "ok" variant passes each
 * task's verifier and the failing variant does not.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { startPolicySimulator } from "./index.ts";
import { type StartedPolicySimulator } from "./server.ts";

const fn = (name: string, properties: Record<string, unknown>): ChatCompletionTool => ({
  type: "function",
  function: { name, description: name, parameters: { type: "object", properties, required: Object.keys(properties) } },
});
const forgeReact = [fn("bash", { command: { type: "string" } }), fn("read", { path: { type: "string" } }), fn("write", { path: { type: "string" }, content: { type: "string" } }), fn("finish", { answer: { type: "string" } })];
const codexLike = [fn("shell", { command: { type: "array", items: { type: "string" } } })];

interface Task {
  instruction: string;
  files: Record<string, string>;
  verify(dir: string, answer: string): boolean;
}
const read = (dir: string, path: string) => {
  try {
    return readFileSync(join(dir, path), "utf8");
  } catch {
    return undefined;
  }
};
const tasks: Task[] = [
  { instruction: "Create hello.txt containing exactly one line: Hello, OpenForge!", files: {}, verify: (d) => read(d, "hello.txt") === "Hello, OpenForge!\n" },
  {
    instruction: "numbers.txt has one integer per line; write their sum to sum.txt",
    files: { "numbers.txt": "3\n5\n10\n" },
    verify: (d) => read(d, "sum.txt")?.trim() === "18",
  },
  {
    instruction: "Fix greet.sh so that `bash greet.sh World` prints: Hello, World!",
    files: { "greet.sh": '#!/usr/bin/env bash\necho "Hello, $2!"\n' },
    verify: (d) => Bun.spawnSync(["bash", "greet.sh", "World"], { cwd: d }).stdout.toString() === "Hello, World!\n",
  },
  { instruction: "Write the contents of input.txt in upper case to output.txt", files: { "input.txt": "make it loud\n" }, verify: (d) => read(d, "output.txt") === "MAKE IT LOUD\n" },
  { instruction: "What is the capital of France?", files: {}, verify: (_, answer) => answer.includes("Paris") },
];

let sim: StartedPolicySimulator;
let client: OpenAI;
const root = mkdtempSync(join(tmpdir(), "forge-sim-quickstart-"));
beforeAll(async () => {
  sim = await startPolicySimulator({ seed: 3, script: `${import.meta.dir}/../examples/policies/quickstart.yaml` });
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: "sim", maxRetries: 0 });
}, 30_000);
afterAll(async () => {
  await sim.stop();
  rmSync(root, { recursive: true, force: true });
});

function runTool(dir: string, name: string, args: Record<string, unknown>): string {
  if (name === "bash" || name === "shell") {
    // A login shell (-lc) costs ~250 ms here for sourcing profiles; this harness runs plain -c.
    const argv = Array.isArray(args.command) ? (args.command as string[]).map((a) => (a === "-lc" ? "-c" : a)) : ["bash", "-c", String(args.command)];
    const out = Bun.spawnSync(argv, { cwd: dir });
    return out.stdout.toString() + out.stderr.toString();
  }
  if (name === "write") {
    mkdirSync(dirname(join(dir, String(args.path))), { recursive: true });
    writeFileSync(join(dir, String(args.path)), String(args.content));
    return "ok";
  }
  if (name === "read") return read(dir, String(args.path)) ?? "no such file";
  throw new Error(`unexpected tool ${name}`);
}

async function rollout(task: Task, tools: ChatCompletionTool[], id: string): Promise<{ passed: boolean; variant: string }> {
  const dir = join(root, id);
  mkdirSync(dir, { recursive: true });
  for (const [path, content] of Object.entries(task.files)) writeFileSync(join(dir, path), content);
  const messages: ChatCompletionMessageParam[] = [
    { role: "system", content: `You are a coding agent.\nWorking directory: ${dir}` },
    { role: "user", content: task.instruction },
  ];
  let variant = "";
  for (let turn = 0; turn < 8; turn++) {
    const { data, response } = await client.chat.completions.create({ model: "m", messages, tools }).withResponse();
    variant ||= /variant=(\w+)/.exec(response.headers.get("x-forge-simulator-policy") ?? "")?.[1] ?? "";
    const message = data.choices[0]!.message;
    messages.push({ role: "assistant", content: message.content, tool_calls: message.tool_calls });
    const calls = (message.tool_calls ?? []) as OpenAI.ChatCompletionMessageFunctionToolCall[];
    if (calls.length === 0) return { passed: task.verify(dir, message.content ?? ""), variant };
    for (const call of calls) {
      const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
      if (call.function.name === "finish") return { passed: task.verify(dir, String(args.answer)), variant };
      messages.push({ role: "tool", tool_call_id: call.id, content: runTool(dir, call.function.name, args) });
    }
  }
  throw new Error("the policy did not finish in 8 turns");
}

test.each([
  ["forge-react tools", forgeReact],
  ["a shell-only argv tool", codexLike],
] as const)("quickstart script with %s: ok variants pass, failing variants fail", { timeout: 30_000 }, async (label, tools) => {
  const seen = new Set<string>();
  for (const [t, task] of tasks.entries()) {
    for (let r = 0; r < 5; r++) {
      const { passed, variant } = await rollout(task, tools, `${label.replaceAll(" ", "-")}-${t}-${r}`);
      expect({ task: task.instruction, variant, passed }).toEqual({ task: task.instruction, variant, passed: variant === "ok" });
      seen.add(variant);
    }
  }
  expect([...seen].sort()).toEqual(["failing", "ok"]);
});
