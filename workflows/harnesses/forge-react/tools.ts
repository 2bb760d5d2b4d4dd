/** forge-react's tools: bash, read, write, finish, as Chat Completions function tools. */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

export const TOOLS = [
  {
    type: "function",
    function: {
      name: "bash",
      description: "Run a bash command in the working directory and return its output (stdout and stderr) and exit code.",
      parameters: { type: "object", properties: { command: { type: "string", description: "The command to run." } }, required: ["command"] },
    },
  },
  {
    type: "function",
    function: {
      name: "read",
      description: "Read a text file (path relative to the working directory).",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    },
  },
  {
    type: "function",
    function: {
      name: "write",
      description: "Write a text file (path relative to the working directory), creating directories as needed.",
      parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] },
    },
  },
  {
    type: "function",
    function: {
      name: "finish",
      description: "Finish the task with a final answer.",
      parameters: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] },
    },
  },
] as const;

/** Tool output is cut so one `cat` of a big file cannot blow up the context. */
const MAX_OUTPUT = 16_000;
const clip = (text: string) => (text.length > MAX_OUTPUT ? `${text.slice(0, MAX_OUTPUT)}\n[... ${text.length - MAX_OUTPUT} more characters cut]` : text);

export type ToolResult = { output: string; finished?: string };

/**
 * Runs one tool call; a bad call is reported to the model as the tool's output, not thrown.
 *
 * @example
 * await runTool("bash", '{"command":"echo hi"}', "/tmp"); // { output: "exit code 0\nhi\n" }
 */
export async function runTool(name: string, rawArguments: string, cwd: string, bashTimeoutMs = 120_000): Promise<ToolResult> {
  let args: Record<string, unknown>;
  try {
    args = JSON.parse(rawArguments || "{}") as Record<string, unknown>;
  } catch (error) {
    return { output: `error: the arguments are not JSON: ${(error as Error).message}` };
  }
  const str = (key: string) => (typeof args[key] === "string" ? (args[key] as string) : undefined);
  switch (name) {
    case "bash": {
      const command = str("command");
      if (command === undefined) return { output: 'error: bash needs {"command": string}' };
      const child = Bun.spawn(["bash", "-c", command], { cwd, stdout: "pipe", stderr: "pipe", stdin: "ignore", timeout: bashTimeoutMs, killSignal: "SIGKILL" });
      const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      const killed = child.signalCode ? ` (killed by ${child.signalCode}${child.signalCode === "SIGKILL" ? `, over ${bashTimeoutMs / 1000} s` : ""})` : "";
      return { output: clip(`exit code ${code}${killed}\n${stdout}${stderr ? `${stdout && !stdout.endsWith("\n") ? "\n" : ""}${stderr}` : ""}`) };
    }
    case "read": {
      const path = str("path");
      if (path === undefined) return { output: 'error: read needs {"path": string}' };
      try {
        return { output: clip(readFileSync(resolve(cwd, path), "utf8")) };
      } catch (error) {
        return { output: `error: ${(error as Error).message}` };
      }
    }
    case "write": {
      const path = str("path");
      const content = str("content");
      if (path === undefined || content === undefined) return { output: 'error: write needs {"path": string, "content": string}' };
      try {
        const full = resolve(cwd, path);
        mkdirSync(dirname(full), { recursive: true });
        writeFileSync(full, content);
        return { output: `wrote ${Buffer.byteLength(content)} bytes to ${path}` };
      } catch (error) {
        return { output: `error: ${(error as Error).message}` };
      }
    }
    case "finish":
      return { output: "finished", finished: str("answer") ?? "" };
    default:
      return { output: `error: unknown tool "${name}" (tools: bash, read, write, finish)` };
  }
}
