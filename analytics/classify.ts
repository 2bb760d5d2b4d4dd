/**
 * Classifies tool calls for the behaviour metrics (docs/metrics.md defines each rule).
 * Works from the tool name and its arguments only, so it applies to any harness.
 */

/** `edit` changes files, `test` runs a check, `read` reads back, `plan` updates a todo list. */
export type ToolKind = "edit" | "test" | "read" | "plan" | "shell" | "other";

/** Generic shell tools across harnesses (Codex, Claude Code, opencode, Qwen Code, pi, OpenClaw). */
const shellNames = /^(bash|shell|sh|local_shell|exec_command|exec|run_shell_command|shell_command|execute_command|run_command|terminal|run_terminal_cmd|command|container\.exec)$/i;
const planNames = /^(todo_?write|todowrite|update_plan|todo|write_todos|plan|update_todos?|todo_read)$/i;
const editNames = /(edit|write|apply_patch|patch|str_replace|create_file|replace|insert|notebookedit|multi_?edit)/i;
const readNames = /(^read|read_file|^view|^cat$|^open|^grep|^glob|^ls$|^list|^search|^find|diff)/i;
const testNames = /(^test|run_tests?|^check|^lint|^verify)/i;

/** Shell commands that run a check: test runners, type checkers, linters, builds. */
const testCommands =
  /(^|[\s;&|(])((bun|npm|pnpm|yarn|deno)\s+(run\s+)?(test|check|lint|typecheck)|pytest|python3?\s+-m\s+(pytest|unittest)|go\s+(test|vet|build)|cargo\s+(test|check|build|clippy)|make(\s+\S+)*\s+(test|check)|tsc\b|mypy|ruff|eslint|jest|vitest|mocha|ctest|gradle\s+test|mvn\s+test|node\s+--test|\.\/test)/i;
/** Shell commands that read state back: files, diffs, listings. */
const readCommands = /(^|[\s;&|(])(cat|head|tail|less|more|grep|rg|diff|ls|wc|stat|find|git\s+(diff|status|show|log)|sed\s+-n|nl|xxd|od|file)\b/;
/** Shell commands that edit files. */
const editCommands = /(^|[\s;&|(])(sed\s+-i|perl\s+-pi|apply_patch|patch\b|tee\b|mv\b|cp\b|rm\b|mkdir\b|touch\b|git\s+(apply|checkout|restore|am))|>>?\s*(?!\/dev\/null)[^\s&|>]|cat\s*<</;

/** Pulls the command line out of a shell tool's arguments (string, or argv list as Codex sends). */
export function shellCommandOf(argumentsJson: string): string {
  let args: unknown;
  try {
    args = JSON.parse(argumentsJson);
  } catch {
    return argumentsJson;
  }
  if (typeof args === "string") return args;
  if (typeof args !== "object" || args === null) return "";
  const record = args as { [key: string]: unknown };
  const value = record.command ?? record.cmd ?? record.script ?? record.input ?? record.code;
  if (Array.isArray(value)) {
    // ["bash", "-lc", "pytest -q"]: the script is the last element after -c/-lc.
    const strings = value.filter((part): part is string => typeof part === "string");
    const flag = strings.findIndex((part) => /^-l?c$/.test(part));
    return flag >= 0 ? strings.slice(flag + 1).join(" ") : strings.join(" ");
  }
  return typeof value === "string" ? value : "";
}

/**
 * Whether a tool is a generic shell (as opposed to a dedicated tool such as `read_file`).
 *
 * @example
 * isShellTool("Bash") // true
 * isShellTool("Read") // false
 */
export function isShellTool(name: string): boolean {
  return shellNames.test(name);
}

/**
 * The kind of a tool call. Shell calls are classified by their command: an edit wins over
 * a test (`sed -i … && pytest` changed files), a test over a read.
 *
 * @example
 * classifyTool("bash", '{"command":"pytest -q"}') // "test"
 * classifyTool("Edit", '{"file_path":"a.py"}')     // "edit"
 */
export function classifyTool(name: string, argumentsJson: string): ToolKind {
  if (planNames.test(name)) return "plan";
  if (isShellTool(name)) {
    const command = shellCommandOf(argumentsJson);
    if (/apply_patch/.test(argumentsJson) || editCommands.test(command)) return "edit";
    if (testCommands.test(command)) return "test";
    if (readCommands.test(command)) return "read";
    return "shell";
  }
  if (testNames.test(name)) return "test";
  if (editNames.test(name)) return "edit";
  if (readNames.test(name)) return "read";
  return "other";
}

/**
 * Whether a tool result reports an error when the protocol gives no flag: a non-zero exit code
 * in the output (Codex: `"exit_code": 1`, `Exit code: 1`, `exit status 1`, `Process exited with code 1`)
 * or text that starts like an error.
 *
 * @example
 * resultLooksLikeError('{"output":"boom","metadata":{"exit_code":1}}') // true
 * resultLooksLikeError("3 passed")                                      // false
 */
export function resultLooksLikeError(text: string): boolean {
  const exit = /(?:"exit_code"\s*:\s*|exit code:?\s*|exit status\s+|exited with code\s+)(-?\d+)/i.exec(text);
  if (exit) return Number(exit[1]) !== 0;
  // A shell that could not start the program says so on its first line.
  if (/^[^\n]*: command not found/.test(text)) return true;
  return /^\s*(error\b|Error:|\[error\]|traceback \(most recent call last\)|fatal:|command not found|permission denied|no such file or directory|<tool_use_error>)/i.test(text);
}

export type PlanState = { total: number; completed: number };

/**
 * The items of a plan/todo tool call: Claude Code / opencode / Qwen Code send
 * `todos: [{content, status}]`, Codex `update_plan` sends `plan: [{step, status}]`.
 * Returns null when the arguments hold no item list.
 *
 * @example
 * planStateOf('{"todos":[{"content":"a","status":"completed"},{"content":"b","status":"pending"}]}')
 * // { total: 2, completed: 1 }
 */
export function planStateOf(argumentsJson: string): PlanState | null {
  let args: unknown;
  try {
    args = JSON.parse(argumentsJson);
  } catch {
    return null;
  }
  if (typeof args !== "object" || args === null) return null;
  const record = args as { [key: string]: unknown };
  const items = record.todos ?? record.plan ?? record.items ?? record.steps;
  if (!Array.isArray(items)) return null;
  const completed = items.filter((item) => {
    const status = typeof item === "object" && item !== null ? (item as { status?: unknown }).status : undefined;
    return typeof status === "string" && /^(completed|complete|done)$/i.test(status);
  }).length;
  return { total: items.length, completed };
}
