/**
 * Maps a scripted intent (run a command, write a file, read a file, finish) onto whichever tool
 * the harness offers: Claude Code's `Bash`/`Write`, Codex's `shell` (argv) or `exec_command`,
 * Qwen Code's `run_shell_command`/`write_file`, opencode's `bash`/`write`, forge-react's
 * `bash`/`write`/`read`/`finish`… found by name first and by parameter schema second. Without a
 * dedicated write/read tool the shell does the job; without any tool the caller answers in text.
 */
import { fromJs, pyDumps } from "../model/index.ts";
import type { JsonSchema, SimTool } from "./types.ts";

export type Intent =
  | { kind: "bash"; command: string }
  | { kind: "write"; path: string; content: string }
  | { kind: "read"; path: string }
  | { kind: "finish"; text: string }
  | { kind: "tool"; name: string; arguments: Record<string, unknown> };

const SHELL_NAMES = ["bash", "shell", "run_shell_command", "exec_command", "exec", "terminal", "run_terminal_cmd", "execute_command", "run_command", "sh", "local_shell", "execute_bash", "run"];
const WRITE_NAMES = ["write", "write_file", "create_file", "writefile", "file_write", "save_file", "write_to_file"];
const READ_NAMES = ["read", "read_file", "view", "cat", "open_file", "file_read", "view_file"];
const FINISH_NAMES = ["finish", "submit", "done", "final_answer", "complete", "task_complete", "attempt_completion", "answer"];
const PATH_PARAMS = ["path", "file_path", "filePath", "absolute_path", "filename", "file", "target_file"];
const CONTENT_PARAMS = ["content", "contents", "text", "file_text", "data", "body"];
const ANSWER_PARAMS = ["answer", "result", "message", "summary", "text", "content", "output", "response", "final_answer"];

/**
 * Where harnesses write the workspace path in their prompts: Claude Code's `<cwd>`, forge-react's
 * "Working directory:", Codex's / opencode's "current working directory", Qwen Code's "I'm
 * currently working in the directory: …" (its `write_file` / `read_file` refuse relative paths,
 * so without the cwd their calls fail), and a bare `cwd:`. The first capture group is the path.
 */
export const WORKING_DIRECTORY_PATTERNS: readonly RegExp[] = [
  /<cwd>([^<\n]+)<\/cwd>/,
  /Working directory:\s*(\/[^\s]+)/i,
  /current working directory(?: is)?:?\s*`?(\/[^\s`]+)/i,
  /currently working in the directory:?\s*`?(\/[^\s`]+)/i,
  /\bcwd:\s*(\/[^\s]+)/,
];

/** A tool call the policy will make: name + arguments (already JSON text, Python-style). */
export interface PlannedCall {
  name: string;
  arguments: string;
}

interface Found {
  tool: SimTool;
  schema: JsonSchema;
}

function props(tool: SimTool): Record<string, JsonSchema> {
  return tool.function.parameters?.properties ?? {};
}

function typeOf(schema: JsonSchema | undefined): string | undefined {
  const t = schema?.type;
  return Array.isArray(t) ? t.find((x) => x !== "null") : t;
}

function byName(tools: SimTool[], names: string[]): Found | undefined {
  const lower = (name: string) => name.toLowerCase();
  for (const wanted of names) {
    const tool = tools.find((t) => lower(t.function.name) === wanted);
    if (tool) return { tool, schema: tool.function.parameters ?? {} };
  }
  return undefined;
}

function param(tool: SimTool, candidates: string[], type?: string): string | undefined {
  const p = props(tool);
  return candidates.find((name) => p[name] && (!type || typeOf(p[name]) === type || typeOf(p[name]) === undefined));
}

/** The shell-like tool and how it takes its command, if any is offered. */
export function findShellTool(tools: SimTool[]): { tool: SimTool; param: string; argv: boolean } | undefined {
  const withCommand = (found: Found | undefined) => {
    if (!found) return undefined;
    const p = props(found.tool);
    for (const name of ["command", "cmd", "script", "commands"]) {
      const schema = p[name];
      if (!schema) continue;
      return { tool: found.tool, param: name, argv: typeOf(schema) === "array" };
    }
    return undefined;
  };
  const named = withCommand(byName(tools, SHELL_NAMES));
  if (named) return named;
  // No known name: any tool whose schema takes a command.
  for (const tool of tools) {
    const found = withCommand({ tool, schema: tool.function.parameters ?? {} });
    if (found) return found;
  }
  return undefined;
}

/**
 * The tool call that carries out `intent` with the offered tools, or undefined when nothing fits
 * (the policy then answers in text).
 *
 * @example
 * planToolCall({ kind: "bash", command: "ls" }, [{ type: "function", function: { name: "Bash", parameters: { type: "object", properties: { command: { type: "string" } } } } }]);
 * // { name: "Bash", arguments: '{"command": "ls"}' }
 */
export function planToolCall(intent: Intent, tools: SimTool[], context: { cwd?: string; url?: string } = {}): PlannedCall | undefined {
  if (tools.length === 0) return undefined;
  const shell = findShellTool(tools);
  const runShell = (command: string, description: string): PlannedCall | undefined => {
    if (!shell) return undefined;
    const value = shell.argv ? ["bash", "-lc", command] : command;
    return call(shell.tool, { [shell.param]: value }, description, context);
  };
  switch (intent.kind) {
    case "bash":
      return runShell(intent.command, `Run ${firstLine(intent.command)}`);
    case "write": {
      const found = byName(tools, WRITE_NAMES);
      const pathParam = found && param(found.tool, PATH_PARAMS, "string");
      const contentParam = found && param(found.tool, CONTENT_PARAMS, "string");
      if (found && pathParam && contentParam) {
        const path = absoluteIfAsked(found.tool, pathParam, intent.path, context.cwd);
        return call(found.tool, { [pathParam]: path, [contentParam]: intent.content }, `Write ${intent.path}`, context);
      }
      return runShell(shellWrite(intent.path, intent.content), `Write ${intent.path}`);
    }
    case "read": {
      const found = byName(tools, READ_NAMES);
      const pathParam = found && param(found.tool, PATH_PARAMS, "string");
      if (found && pathParam) {
        const path = absoluteIfAsked(found.tool, pathParam, intent.path, context.cwd);
        return call(found.tool, { [pathParam]: path }, `Read ${intent.path}`, context);
      }
      return runShell(`cat ${shellQuote(intent.path)}`, `Read ${intent.path}`);
    }
    case "tool": {
      const tool = findNamedTool(tools, intent.name);
      if (!tool) return undefined;
      const args = fillPlaceholders(intent.arguments, { cwd: context.cwd, url: context.url }) as Record<string, unknown>;
      return call(tool, args, `${intent.name} call`, context);
    }
    case "finish": {
      const found = byName(tools, FINISH_NAMES);
      if (!found) return undefined;
      const answer = param(found.tool, ANSWER_PARAMS, "string") ?? firstRequiredString(found.tool);
      return call(found.tool, answer ? { [answer]: intent.text } : {}, intent.text, context);
    }
  }
}

/**
 * The offered tool a script names: the tool of that exact name, else one whose name ends with it
 * after a separator, as harnesses prefix the tools of an MCP server (Claude Code and Codex
 * `mcp__browser__browser_click`, opencode `browser_browser_click`).
 *
 * @example
 * findNamedTool(tools, "browser_click")?.function.name; // "mcp__browser__browser_click"
 */
export function findNamedTool(tools: SimTool[], name: string): SimTool | undefined {
  const exact = tools.find((tool) => tool.function.name === name);
  if (exact) return exact;
  return tools.find((tool) => ["__", "_", ".", "-", "/", ":"].some((separator) => tool.function.name.endsWith(`${separator}${name}`)));
}

/**
 * A script's arguments with `{{url}}` (the task prompt's first http(s) URL) and `{{cwd}}` (the
 * working directory) filled in, in every string value; a placeholder with nothing to fill it is
 * left as written.
 *
 * @example
 * fillPlaceholders({ url: "{{url}}/cart" }, { url: "http://127.0.0.1:8000" }); // { url: "http://127.0.0.1:8000/cart" }
 */
export function fillPlaceholders(value: unknown, values: { url?: string; cwd?: string }): unknown {
  if (typeof value === "string") {
    return value.replace(/\{\{\s*(url|cwd)\s*\}\}/g, (whole, key: "url" | "cwd") => {
      const filled = values[key];
      return filled === undefined ? whole : key === "url" ? filled.replace(/\/$/, "") : filled;
    });
  }
  if (Array.isArray(value)) return value.map((item) => fillPlaceholders(item, values));
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, fillPlaceholders(item, values)]));
  return value;
}

/** `cat > path <<'EOF'` that reproduces `content` byte for byte (printf when it has no final newline). */
export function shellWrite(path: string, content: string): string {
  const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
  const mkdir = dir ? `mkdir -p ${shellQuote(dir)} && ` : "";
  if (content.endsWith("\n") && !content.split("\n").includes("FORGE_EOF")) {
    return `${mkdir}cat > ${shellQuote(path)} <<'FORGE_EOF'\n${content}FORGE_EOF`;
  }
  return `${mkdir}printf '%s' ${shellQuote(content)} > ${shellQuote(path)}`;
}

export function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./@:=+-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

function firstLine(text: string): string {
  const line = text.split("\n")[0] ?? "";
  return line.length > 60 ? `${line.slice(0, 57)}...` : line;
}

function firstRequiredString(tool: SimTool): string | undefined {
  const p = props(tool);
  return (tool.function.parameters?.required ?? []).find((name) => typeOf(p[name]) === "string");
}

/** Claude Code's Write/Read demand absolute paths: honour a schema that says so, using the prompt's cwd. */
function absoluteIfAsked(tool: SimTool, name: string, path: string, cwd: string | undefined): string {
  if (path.startsWith("/") || !cwd) return path;
  const description = `${props(tool)[name]?.description ?? ""} ${name}`;
  return /absolute/i.test(description) ? `${cwd.replace(/\/$/, "")}/${path.replace(/^\.\//, "")}` : path;
}

/** Builds the call, filling the other required parameters with plausible values. */
function call(tool: SimTool, given: Record<string, unknown>, description: string, context: { cwd?: string; url?: string }): PlannedCall {
  const args: Record<string, unknown> = { ...given };
  const p = props(tool);
  for (const name of tool.function.parameters?.required ?? []) {
    if (name in args) continue;
    args[name] = fillValue(name, p[name], description, context.cwd);
  }
  return { name: tool.function.name, arguments: pyDumps(fromJs(args)) };
}

function fillValue(name: string, schema: JsonSchema | undefined, description: string, cwd: string | undefined): unknown {
  if (schema?.default !== undefined) return schema.default;
  if (schema?.enum && schema.enum.length > 0) return schema.enum[0];
  switch (typeOf(schema)) {
    case "number":
    case "integer":
      return /timeout/i.test(name) ? 120_000 : (schema?.minimum ?? 1);
    case "boolean":
      return false;
    case "array":
      return [];
    case "object":
      return {};
    default:
      if (/dir|cwd|workdir|folder/i.test(name)) return cwd ?? ".";
      return description;
  }
}
