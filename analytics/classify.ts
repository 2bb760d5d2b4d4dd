/**
 * What a tool call did, from structured signals (docs/metrics.md, "Behaviour metrics"): the
 * files it wrote, read or executed, whether it ran a check, what it was trying to do (its
 * intent, to tell a retry from a new step), a plan's items, and whether its result reports an
 * error through a flag or an exit code. Shell scripts are parsed (analytics/shell.ts), never
 * matched with keywords, and text that merely looks like an error is not an error.
 */
import { parseShell, type SimpleCommand } from "./shell.ts";

/** `edit` changes files, `test` runs a check, `read` reads back, `plan` updates a todo list, `control` ends or hands off the episode. */
export type ToolKind = "edit" | "test" | "read" | "plan" | "shell" | "control" | "other";

export type ToolFacts = {
  kind: ToolKind;
  isShell: boolean;
  /** Files written (created, changed, moved or deleted), as given; "?" when a patch names none. */
  writes: string[];
  reads: string[];
  /** Files run as programs (`python main.py`, `./run.sh`). */
  executes: string[];
  /** Runs a test suite, type checker, linter or the task's own check script. */
  runsCheck: boolean;
  /** A script that writes files and then, later in the same script, checks, reads or runs what it wrote (`sed -i … && pytest`). */
  verifiesOwnEdit: boolean;
  /** What the call tries to do, to recognise the same intent retried (`pytest`, `edit:a.py`, `tool:web_search`). */
  intents: string[];
  /** For plan tools: the number of items and the texts of those marked completed. */
  plan: PlanState | null;
  /** A shell command the parser could not read (its facts are then unknown). */
  parseError?: string;
};

export type PlanState = { total: number; completed: string[] };

/** Generic shell tools across harnesses (Codex, Claude Code, opencode, Qwen Code, pi, OpenClaw). */
const shellNames = /^(bash|shell|sh|local_shell|exec_command|exec|run_shell_command|shell_command|execute_command|run_command|terminal|run_terminal_cmd|command|container\.exec)$/i;
const planNames = /^(todo_?write|todowrite|update_plan|todo|write_todos|plan|update_todos?|todo_read)$/i;
const controlNames = /^(finish|submit|done|final_answer|attempt_completion|task_complete|complete_task|complete|exit|end|stop|give_up|end_task)$/i;
const editorNames = /^(str_replace_based_edit_tool|str_replace_editor|text_editor)$/i;
const editNames = /^(edit|multi_?edit|write|write_file|create_file|edit_file|replace|insert|apply_patch|patch|notebook_?edit|str_replace|overwrite_file|append_file)$/i;
const readNames = /^(read|read_file|read_many_files|view|view_file|cat|open|open_file|grep|search|search_file_content|glob|ls|list|list_dir|list_directory|find|find_files|codebase_search)$/i;
const testNames = /^(test|tests|run_tests?|check|lint|verify|run_checks?)$/i;

/** Commands that only set up state or print: never an intent of their own. */
const trivial = new Set(["cd", "echo", "printf", "true", "false", "export", "set", "unset", "source", ".", "pwd", "sleep", "exit", ":", "clear", "wait", "alias", "shopt", "hash", "type", "which"]);
/** Prefixes that run the next word as the command. */
const wrappers = new Set(["sudo", "env", "time", "nice", "nohup", "stdbuf", "command", "exec", "xargs", "builtin", "unbuffer", "ionice", "chronic"]);
/** Programs whose first argument names what they do (`git diff`, `npm test`). */
const withSubcommand = new Set(["git", "npm", "pnpm", "yarn", "bun", "npx", "bunx", "go", "cargo", "make", "docker", "kubectl", "pip", "pip3", "uv", "poetry", "deno", "dotnet", "mvn", "gradle", "ruff", "pnpx", "just"]);
const interpreters = /^(python[0-9.]*|node|nodejs|bun|deno|ruby|perl|php|bash|sh|zsh|dash|tsx|ts-node)$/;
const readers = new Set(["cat", "head", "tail", "less", "more", "nl", "wc", "stat", "file", "xxd", "od", "hexdump", "strings", "bat", "tac", "md5sum", "sha256sum", "cmp", "diff", "ls", "tree", "find", "grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "jq", "du", "realpath", "readlink"]);
/** Check runners by program (the subcommand, if any, decides for package managers and builds). */
const checkPrograms = /^(pytest|py\.test|tox|nox|jest|vitest|mocha|ava|tap|ctest|tsc|mypy|pyright|flake8|pylint|eslint|shellcheck|bats|rspec|phpunit|prove|hadolint|golangci-lint|nosetests|unittest)$/;
const checkSubcommands: { [program: string]: RegExp } = {
  go: /^(test|vet)$/,
  cargo: /^(test|check|clippy|nextest)$/,
  npm: /^(test|t|run|run-script)$/,
  pnpm: /^(test|t|run)$/,
  yarn: /^(test|run)$/,
  bun: /^(test|run)$/,
  deno: /^(test|check|lint)$/,
  make: /^(test|tests|check|verify|lint)$/,
  just: /^(test|check|lint)$/,
  mvn: /^(test|verify)$/,
  gradle: /^(test|check)$/,
  dotnet: /^(test)$/,
  ruff: /^(check)$/,
  npx: /^(jest|vitest|mocha|tsc|eslint|playwright)$/,
  bunx: /^(jest|vitest|mocha|tsc|eslint)$/,
  pnpx: /^(jest|vitest|mocha|tsc|eslint)$/,
};
/** `npm run X` counts as a check when X is one. */
const checkScripts = /^(test|tests|check|checks|lint|typecheck|type-check|verify|ci)([:_-].*)?$/;
/** The task's own check scripts: test.sh, tests/run.sh, check.py, verify, test_foo.py … */
const checkFile = /(^|\/)(tests?|checks?|verify|run[_-]tests?)(\/|[._-]|$)|(^|\/)test_[^/]*\.py$|_test\.(py|go|sh)$|\.test\.[jt]s$/;

const basename = (path: string) => path.replace(/\/+$/, "").split("/").pop() ?? path;
const normPath = (path: string) => path.replace(/^(\.\/)+/, "");
/** The same file named two ways: `a.py`, `./a.py`, `/work/app/a.py` (the SQL macro path_match does the same). */
const samePath = (a: string, b: string) => {
  const [x, y] = [normPath(a), normPath(b)];
  return x === y || x.endsWith(`/${y}`) || y.endsWith(`/${x}`);
};
const isOption = (arg: string) => arg.startsWith("-") && arg !== "-";
const isDevice = (path: string) => path.startsWith("/dev/") || /^[0-9]+$/.test(path) || path === "-";

/** Strips environment assignments and wrapper programs (`sudo`, `env X=1`, `timeout 5`). */
function unwrap(argv: string[]): string[] {
  const rest = [...argv];
  while (rest.length > 0) {
    const first = rest[0]!;
    if (/^[A-Za-z_]\w*=/.test(first)) {
      rest.shift();
      continue;
    }
    const name = basename(first);
    if (!wrappers.has(name) && name !== "timeout") break;
    rest.shift();
    while (rest.length > 0 && (isOption(rest[0]!) || /^[A-Za-z_]\w*=/.test(rest[0]!))) rest.shift();
    if (name === "timeout" && rest.length > 0 && /^[0-9.]+[smhd]?$/.test(rest[0]!)) rest.shift();
  }
  return rest;
}

/** Paths named by a patch in Codex's apply_patch format (`*** Update File: a.py`). */
export function patchPaths(patch: string): string[] {
  const paths = [...patch.matchAll(/^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$/gm)].map((m) => (m[1] ?? m[2] ?? "").trim());
  // A unified diff (`git apply`, `patch`): its +++ lines.
  for (const m of patch.matchAll(/^\+\+\+ (?:b\/)?(\S+)/gm)) if (m[1] !== "/dev/null") paths.push(m[1]!);
  return [...new Set(paths.filter(Boolean))];
}

/** The intent of a check: the runner (`pytest`, `npm test`, `go test`), or the check script run. */
function checkIntent(program: string, argv: string[], operands: string[], executes: string[]): string {
  const module = argv.indexOf("-m");
  if (/^python/.test(program) && module >= 0 && argv[module + 1]) return argv[module + 1]!;
  if (program in checkSubcommands) return /^(run|run-script)$/.test(operands[0] ?? "") ? `${program} run ${operands[1] ?? ""}`.trim() : `${program} ${operands[0] ?? ""}`.trim();
  if (checkPrograms.test(program) || program === "node") return program;
  return executes.length ? `run ${basename(executes[0]!)}` : program;
}

type CommandFacts = { writes: string[]; redirectWrites: string[]; reads: string[]; executes: string[]; check: boolean; intent: string | null };

function commandFacts(command: SimpleCommand): CommandFacts {
  const facts: CommandFacts = { writes: [], redirectWrites: [], reads: [], executes: [], check: false, intent: null };
  const argv = unwrap(command.argv);
  const program = argv[0] === undefined ? "" : basename(argv[0]);
  const args = argv.slice(1);
  const operands = args.filter((arg) => !isOption(arg));
  const sub = operands[0] ?? "";

  if (program === "bash" || program === "sh" || program === "zsh") {
    const inline = args.findIndex((arg) => /^-[a-z]*c[a-z]*$/.test(arg));
    if (inline >= 0 && args[inline + 1] !== undefined) {
      // bash -c '…': the script is what runs.
      const inner = scriptFacts(args[inline + 1]!);
      return { writes: inner.writes, redirectWrites: [], reads: inner.reads, executes: inner.executes, check: inner.runsCheck, intent: inner.intents.join(" ") || null };
    }
  }
  facts.check = runsCheck(program, args, operands, sub);
  facts.executes.push(...scriptsRun(argv, program, args, operands, sub));
  if (facts.executes.some((path) => checkFile.test(path))) facts.check = true;

  addFileEffects(facts, command, program, args, operands, sub);

  // Redirects: writes, except a check's output captured to a file (`pytest > out.txt`): scriptFacts
  // drops the targets a check's redirects write.
  for (const redirect of command.redirects) {
    if (/^(>|>>|&>|&>>|>\||<>)$/.test(redirect.op) && !isDevice(redirect.target)) facts.redirectWrites.push(redirect.target);
    else if (redirect.op === "<" && !isDevice(redirect.target)) facts.reads.push(redirect.target);
  }

  facts.intent = intentOf(facts, program, argv, operands, sub);
  return facts;
}

/** Whether the command runs a check: a test runner, a type checker or linter, a check script. */
function runsCheck(program: string, args: string[], operands: string[], sub: string): boolean {
  let check = false;
  if (checkPrograms.test(program) || (program in checkSubcommands && checkSubcommands[program]!.test(sub))) {
    const runScript = /^(npm|pnpm|yarn|bun)$/.test(program) && /^(run|run-script)$/.test(sub);
    check = runScript ? checkScripts.test(operands[1] ?? "") : !(program === "bun" && sub === "run");
    if (program === "bun" && sub === "run") check = checkScripts.test(operands[1] ?? "") || checkFile.test(operands[1] ?? "");
  }
  if (/^python[0-9.]*$/.test(program)) {
    const m = args.indexOf("-m");
    if (m >= 0 && /^(pytest|unittest|tox|nose|mypy|pyright|ruff|flake8|pylint|doctest)$/.test(args[m + 1] ?? "")) check = true;
  }
  if (program === "node" && args.includes("--test")) check = true;
  return check;
}

/** The scripts the command runs as programs. */
function scriptsRun(argv: string[], program: string, args: string[], operands: string[], sub: string): string[] {
  const executes: string[] = [];
  // A script run as a program: `./test.sh`, `python main.py`, `bash run.sh`.
  if (argv[0] !== undefined && argv[0].includes("/") && !interpreters.test(program)) executes.push(argv[0]);
  if (interpreters.test(program) && !args.some((arg) => /^-[a-z]*[ce]$/.test(arg) || arg === "-m")) {
    const script = operands[0];
    if (script !== undefined && script !== "-" && !(program === "bun" && /^(test|run|install|add|x)$/.test(script))) executes.push(script);
    if (program === "bun" && sub === "run" && operands[1] && /\.[cm]?[jt]sx?$/.test(operands[1])) executes.push(operands[1]);
  }
  return executes;
}

/** The files the command writes and reads, by what the program does with its operands. */
function addFileEffects(facts: CommandFacts, command: SimpleCommand, program: string, args: string[], operands: string[], sub: string): void {
  switch (program) {
    case "sed":
    case "perl": {
      const inPlace = args.some((arg) => /^-[a-zA-Z]*i/.test(arg) || arg.startsWith("--in-place"));
      const explicitScript = args.some((arg) => arg === "-e" || arg === "-f" || arg.startsWith("--expression"));
      const files = explicitScript ? operands.filter((arg, i) => args[args.indexOf(arg) - 1] !== "-e" && args[args.indexOf(arg) - 1] !== "-f") : operands.slice(1);
      if (inPlace) facts.writes.push(...files);
      else facts.reads.push(...files);
      break;
    }
    case "tee":
      facts.writes.push(...operands);
      break;
    case "cp":
    case "install":
    case "ln":
      if (operands.length >= 2) facts.writes.push(operands.at(-1)!);
      break;
    case "mv":
      facts.writes.push(...operands);
      break;
    case "rm":
    case "touch":
    case "truncate":
    case "unlink":
      facts.writes.push(...operands);
      break;
    case "dd":
      facts.writes.push(...args.filter((arg) => arg.startsWith("of=")).map((arg) => arg.slice(3)));
      break;
    case "apply_patch":
    case "applypatch": {
      const text = [...args, ...command.redirects.map((r) => r.heredoc ?? "")].join("\n");
      const paths = patchPaths(text);
      facts.writes.push(...(paths.length ? paths : ["?"]));
      break;
    }
    case "patch":
      facts.writes.push(...(operands.length ? [operands[0]!] : patchPaths(command.redirects.map((r) => r.heredoc ?? "").join("\n"))));
      if (facts.writes.length === 0) facts.writes.push("?");
      break;
    case "git":
      if (/^(apply|am|checkout|restore|reset|stash|mv|rm|revert|cherry-pick|merge|rebase|pull)$/.test(sub)) {
        const files = operands.slice(1).filter((arg) => arg.includes(".") || arg.includes("/"));
        facts.writes.push(...(files.length ? files : sub === "apply" ? patchPaths(command.redirects.map((r) => r.heredoc ?? "").join("\n")) : []));
        if (facts.writes.length === 0) facts.writes.push("?");
      } else if (/^(diff|show|log|status|blame|grep|ls-files)$/.test(sub)) {
        const files = operands.slice(1).filter((arg) => arg.includes(".") || arg.includes("/"));
        // `git diff` / `git status` alone show every changed file: "*" reads back whatever was written.
        facts.reads.push(...(files.length ? files : /^(diff|status|show)$/.test(sub) ? ["*"] : ["."]));
      }
      break;
    default:
      if (readers.has(program)) {
        const pattern = /^(grep|egrep|fgrep|rg|ag|ack|awk|jq)$/.test(program) && !args.some((a) => a === "-e" || a === "-f") ? operands.slice(1) : operands;
        const files = pattern.filter((arg) => !isDevice(arg));
        // `ls` alone lists the directory; `grep x` alone reads its standard input.
        facts.reads.push(...(files.length ? files : /^(ls|tree|find|du)$/.test(program) ? ["."] : []));
      }
  }
}

/** What the command is for, in a few words (null for a trivial program or one that only writes). */
function intentOf(facts: CommandFacts, program: string, argv: string[], operands: string[], sub: string): string | null {
  if (!program || trivial.has(program)) return null;
  if (facts.check) return checkIntent(program, argv, operands, facts.executes);
  if (interpreters.test(program) && facts.executes.length) return `${program} ${basename(facts.executes[0]!)}`;
  if (withSubcommand.has(program) && sub) return `${program} ${sub}`;
  if (facts.reads.length && !facts.writes.length && !facts.redirectWrites.length) return `${program}:${facts.reads.map(basename).join(",")}`;
  if (!facts.writes.length && !facts.redirectWrites.length) return program;
  return null;
}

/**
 * The facts of a shell script: every command's writes, reads, executions and checks.
 *
 * @example
 * scriptFacts("sed -i 's/a/b/' a.py && pytest -q").writes // ["a.py"]
 */
export function scriptFacts(script: string): Omit<ToolFacts, "kind" | "isShell" | "plan"> {
  const parsed = parseShell(script);
  const all = parsed.commands.map(commandFacts);
  // `pytest > out.txt`, `(cd app && make test) > log`: files a check's output goes to are captures.
  const captured = new Set(all.filter((f) => f.check).flatMap((f) => f.redirectWrites));
  const writes = [...new Set(all.flatMap((f) => [...f.writes, ...f.redirectWrites.filter((target) => !captured.has(target))]))];
  const writesOf = (f: CommandFacts) => [...f.writes, ...f.redirectWrites.filter((target) => !captured.has(target))];
  const lastWrite = all.findLastIndex((f) => writesOf(f).length > 0);
  const touches = (f: CommandFacts) => [...f.reads, ...f.executes].some((path) => path === "*" || writes.some((w) => samePath(w, path)));
  const facts = {
    writes,
    reads: [...new Set(all.flatMap((f) => f.reads))],
    executes: [...new Set(all.flatMap((f) => f.executes))],
    runsCheck: all.some((f) => f.check),
    verifiesOwnEdit: lastWrite >= 0 && all.slice(lastWrite + 1).some((f) => f.check || touches(f)),
    intents: [...new Set([...all.map((f) => f.intent).filter((i): i is string => i !== null), ...writes.filter((w) => w !== "?").map((w) => `edit:${basename(w)}`)])],
  };
  return parsed.error ? { ...facts, parseError: parsed.error } : facts;
}

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
    const flag = strings.findIndex((part, i) => /^-l?c$/.test(part) && i > 0 && /^(bash|sh|zsh|dash)$/.test(basename(strings[i - 1]!)));
    return flag >= 0 ? strings.slice(flag + 1).join(" ") : strings.map((s) => (/[\s'"$;&|<>()]/.test(s) ? `'${s.replaceAll("'", "'\\''")}'` : s)).join(" ");
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
 * Whether a tool ends or hands off the episode (finish, submit, attempt_completion, …) rather
 * than doing something: tool coverage leaves these out.
 *
 * @example
 * isControlTool("finish") // true
 */
export function isControlTool(name: string): boolean {
  return controlNames.test(name);
}

function parseArgs(argumentsJson: string): { [key: string]: unknown } {
  try {
    const value = JSON.parse(argumentsJson);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

function pathArgs(args: { [key: string]: unknown }): string[] {
  const paths: string[] = [];
  for (const key of ["file_path", "filePath", "path", "absolute_path", "notebook_path", "target_file", "filename", "file"]) {
    if (typeof args[key] === "string" && args[key] !== "") paths.push(args[key] as string);
  }
  for (const key of ["paths", "file_paths", "files"]) {
    if (Array.isArray(args[key])) paths.push(...(args[key] as unknown[]).filter((p): p is string => typeof p === "string"));
  }
  return paths;
}

/**
 * The items of a plan/todo tool call: Claude Code / opencode / Qwen Code send
 * `todos: [{content, status}]`, Codex `update_plan` sends `plan: [{step, status}]`.
 * Returns null when the arguments hold no item list.
 *
 * @example
 * planStateOf('{"todos":[{"content":"a","status":"completed"},{"content":"b","status":"pending"}]}')
 * // { total: 2, completed: ["a"] }
 */
export function planStateOf(argumentsJson: string): PlanState | null {
  const args = parseArgs(argumentsJson);
  const items = args.todos ?? args.plan ?? args.items ?? args.steps;
  if (!Array.isArray(items)) return null;
  const completed: string[] = [];
  items.forEach((item, index) => {
    if (typeof item !== "object" || item === null) return;
    const record = item as { [key: string]: unknown };
    const status = record.status;
    const text = record.content ?? record.step ?? record.text ?? record.title ?? record.description ?? record.task ?? record.id;
    if (typeof status === "string" && /^(completed|complete|done)$/i.test(status)) completed.push(typeof text === "string" ? text : `#${index}`);
  });
  return { total: items.length, completed };
}

/**
 * The facts of one tool call from its name and arguments.
 *
 * @example
 * toolFacts("bash", '{"command":"pytest -q > out.txt"}') // { kind: "test", runsCheck: true, writes: [], intents: ["pytest"], ... }
 * toolFacts("str_replace_based_edit_tool", '{"command":"view","path":"a.py"}').kind // "read"
 */
export function toolFacts(name: string, argumentsJson: string): ToolFacts {
  const base = { isShell: false, writes: [] as string[], reads: [] as string[], executes: [] as string[], runsCheck: false, verifiesOwnEdit: false, intents: [] as string[], plan: null as PlanState | null };
  if (planNames.test(name)) return { ...base, kind: "plan", plan: planStateOf(argumentsJson), intents: ["plan"] };
  if (controlNames.test(name)) return { ...base, kind: "control", intents: [`tool:${name}`] };
  if (isShellTool(name)) {
    const facts = scriptFacts(shellCommandOf(argumentsJson));
    const kind: ToolKind = facts.writes.length ? "edit" : facts.runsCheck ? "test" : facts.reads.length ? "read" : "shell";
    return { ...base, ...facts, isShell: true, kind, intents: facts.intents.length ? facts.intents : [`tool:${name}`] };
  }
  const args = parseArgs(argumentsJson);
  const paths = pathArgs(args);
  if (editorNames.test(name)) {
    // Anthropic's text editor tool: view reads, the other commands write.
    const view = args.command === "view";
    return { ...base, kind: view ? "read" : "edit", reads: view ? paths : [], writes: view ? [] : paths, intents: paths.map((p) => `${view ? "read" : "edit"}:${basename(p)}`) };
  }
  if (/apply_patch|^patch$/i.test(name)) {
    const text = typeof args.input === "string" ? args.input : typeof args.patch === "string" ? args.patch : argumentsJson;
    const written = patchPaths(text);
    const writes = written.length ? written : paths.length ? paths : ["?"];
    return { ...base, kind: "edit", writes, intents: writes.filter((w) => w !== "?").map((w) => `edit:${basename(w)}`) };
  }
  if (testNames.test(name)) return { ...base, kind: "test", runsCheck: true, intents: [`tool:${name}`] };
  if (editNames.test(name)) return { ...base, kind: "edit", writes: paths.length ? paths : ["?"], intents: paths.length ? paths.map((p) => `edit:${basename(p)}`) : [`tool:${name}`] };
  if (readNames.test(name)) return { ...base, kind: "read", reads: paths, intents: paths.length ? paths.map((p) => `read:${basename(p)}`) : [`tool:${name}`] };
  return { ...base, kind: "other", intents: [`tool:${name}`] };
}

/**
 * The kind of a tool call (see `toolFacts`).
 *
 * @example
 * classifyTool("bash", '{"command":"pytest -q"}') // "test"
 * classifyTool("Edit", '{"file_path":"a.py"}')     // "edit"
 */
export function classifyTool(name: string, argumentsJson: string): ToolKind {
  return toolFacts(name, argumentsJson).kind;
}

/** How a result's error status is known: the protocol's flag, an exit code, a tool's error envelope. */
export type ErrorSignal = "flag" | "exit_code" | "envelope";

export type ResultError = { isError: boolean | null; signal: ErrorSignal | null };

function exitCodeOf(text: string, shell: boolean): number | null {
  // Structured: a JSON result with an exit code (Codex's {"output", "metadata": {"exit_code"}}).
  const trimmed = text.trimStart();
  if (trimmed.startsWith("{")) {
    try {
      const value = JSON.parse(trimmed) as { [key: string]: unknown };
      const metadata = (value.metadata ?? {}) as { [key: string]: unknown };
      const code = metadata.exit_code ?? value.exit_code ?? value.exitCode ?? value.returncode;
      if (typeof code === "number") return code;
    } catch {}
  }
  if (!shell) return null;
  // A shell tool's own report line: forge-react "exit code 4", Claude Code "Exit code 1",
  // Codex "Exit code: 1" / "Process exited with code 1", Qwen Code's "Exit Code: 1" field.
  const line = /^(?:exit code:?|process exited with code|exited with code|exit status:?)\s*(-?\d+)\s*$/im.exec(text);
  return line ? Number(line[1]) : null;
}

/**
 * Whether a tool result reports an error, and how that is known. The protocol's flag (Anthropic
 * `is_error`) decides when present; else a JSON result's exit code, or a shell tool's exit-code
 * line; else a tool's error envelope (`<tool_use_error>`, an MCP result with `isError`, a JSON
 * object whose only news is an `error`). Anything else is unknown (null), not guessed from words:
 * a file whose text starts with "Error:" was read without error.
 *
 * @example
 * resultError('{"output":"boom","metadata":{"exit_code":1}}', null, true) // { isError: true, signal: "exit_code" }
 * resultError("Error: see docs", null, false)                              // { isError: null, signal: null }
 */
export function resultError(text: string, flag: boolean | null, shell: boolean): ResultError {
  if (flag !== null) return { isError: flag, signal: "flag" };
  const code = exitCodeOf(text, shell);
  if (code !== null) return { isError: code !== 0, signal: "exit_code" };
  const trimmed = text.trim();
  if (/^<tool_use_error>/.test(trimmed)) return { isError: true, signal: "envelope" };
  if (trimmed.startsWith("{")) {
    try {
      const value = JSON.parse(trimmed) as { [key: string]: unknown };
      if (value.isError === true || value.is_error === true) return { isError: true, signal: "envelope" };
      if (value.isError === false || value.is_error === false) return { isError: false, signal: "envelope" };
      if (value.success === false || value.ok === false) return { isError: true, signal: "envelope" };
      const keys = Object.keys(value);
      if ("error" in value && value.error !== null && value.error !== "" && keys.every((k) => /^(error|code|message|type|status|details)$/.test(k))) return { isError: true, signal: "envelope" };
    } catch {}
  }
  return { isError: null, signal: null };
}
