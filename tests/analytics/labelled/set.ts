/**
 * The labelled set: hand-made agent trajectories in the shapes real harnesses send, each with
 * what a person reading it says happened. `evaluate.ts` runs them through the whole analytics
 * path (records → parquet → views) and measures each behaviour metric's precision and recall
 * against these labels (docs/metrics.md prints the table).
 *
 * Tool result formats, per harness:
 * - Codex (Responses): shell `{"command": ["bash","-lc",…]}`, output `{"output","metadata":{"exit_code"}}`; apply_patch; update_plan.
 * - Claude Code (Anthropic Messages): Bash (`Exit code N` + is_error), Read / Edit / Write
 *   (`<tool_use_error>` + is_error), TodoWrite; str_replace_based_edit_tool for the Anthropic editor.
 * - forge-react (Chat): bash answers `exit code N` on its first line; read / write answer plain text
 *   (`error: …` on failure, no flag); finish.
 * - Qwen Code (Chat): run_shell_command answers `Command: … Exit Code: N …`; read_file, replace, write_file.
 * - opencode (Chat): bash answers plain output (no exit code); read, edit, write, todowrite.
 *
 * Labels name tool calls by id (`id#n` for the n-th reuse of an id). The cases include the ones
 * the metrics get wrong (noted "hard"): they are what the precision and recall are about.
 */
import type { ToolStep } from "../../../analytics/testing.ts";

export type Labels = {
  /** Tool calls whose result reports a failure of the call (a person's reading, not a keyword). */
  errors: string[];
  /** Tool calls that changed a file. */
  edits: string[];
  /** Tool calls that ran the task's checks (tests, type checks, linters, a check script). */
  checks: string[];
  /** Whether the work after the last edit was verified (null: no edit). */
  verified: boolean | null;
  /** Errors followed by a successful retry of the same intent. */
  recovered: string[];
  /** Completed items of the last plan that the work shows were done (absent: no plan). */
  evidenced?: number;
  /** Tools used that do something (finish/submit not counted). */
  used: string[];
};

export type LabelledTrajectory = {
  id: string;
  harness: "codex" | "claude-code" | "forge-react" | "qwen-code" | "opencode";
  protocol: "chat" | "responses" | "anthropic";
  stream?: boolean;
  tools: string[];
  /** One list of tool calls per model call. */
  turns: ToolStep[][];
  labels: Labels;
  note: string;
};

const todos = (...statuses: string[]) => ({ todos: statuses.map((status, i) => ({ content: `step ${i + 1}`, status, activeForm: `doing step ${i + 1}` })) });
const steps = (...statuses: string[]) => ({ plan: statuses.map((status, i) => ({ step: `step ${i + 1}`, status })) });

// --- Codex (Responses) ---
const codexTools = ["shell", "apply_patch", "update_plan"];
const cx = (id: string, script: string, exit = 0, output = ""): ToolStep => ({ id, name: "shell", args: { command: ["bash", "-lc", script], workdir: "/workspace" }, result: output, isError: exit !== 0 });
const cxPatch = (id: string, path: string, ok = true): ToolStep => ({
  id,
  name: "apply_patch",
  args: { input: `*** Begin Patch\n*** Update File: ${path}\n@@\n-x = 1\n+x = 2\n*** End Patch` },
  result: ok ? `Success. Updated the following files:\nM ${path}` : "apply_patch verification failed: context not found",
  isError: !ok,
});
const cxPlan = (id: string, ...statuses: string[]): ToolStep => ({ id, name: "update_plan", args: steps(...statuses), result: "Plan updated" });

// --- Claude Code (Anthropic Messages) ---
const claudeTools = ["Bash", "Read", "Edit", "Write", "Grep", "TodoWrite"];
const cc = (id: string, command: string, exit = 0, output = ""): ToolStep => ({ id, name: "Bash", args: { command, description: "Run" }, result: exit ? `Exit code ${exit}\n${output}` : output, isError: exit !== 0 });
const ccRead = (id: string, path: string, content = "x = 1", missing = false): ToolStep => ({
  id,
  name: "Read",
  args: { file_path: path },
  result: missing ? "<tool_use_error>File does not exist.</tool_use_error>" : content,
  isError: missing,
});
const ccEdit = (id: string, path: string, ok = true): ToolStep => ({
  id,
  name: "Edit",
  args: { file_path: path, old_string: "x = 1", new_string: "x = 2" },
  result: ok ? `The file ${path} has been updated.` : "<tool_use_error>String to replace not found in file.</tool_use_error>",
  isError: !ok,
});
const ccWrite = (id: string, path: string): ToolStep => ({ id, name: "Write", args: { file_path: path, content: "x = 2\n" }, result: `File created successfully at: ${path}`, isError: false });
const ccTodo = (id: string, ...statuses: string[]): ToolStep => ({ id, name: "TodoWrite", args: todos(...statuses), result: "Todos have been modified successfully.", isError: false });
const editorTools = ["str_replace_based_edit_tool", "bash"];
const ed = (id: string, command: string, path: string, result = "ok", isError = false): ToolStep => ({ id, name: "str_replace_based_edit_tool", args: { command, path, old_str: "a", new_str: "b", file_text: "b" }, result, isError });

// --- forge-react (Chat) ---
const reactTools = ["bash", "read", "write", "finish"];
const fr = (id: string, command: string, exit = 0, output = ""): ToolStep => ({ id, name: "bash", args: { command }, result: `exit code ${exit}\n${output}` });
const frRead = (id: string, path: string, content = "x = 1"): ToolStep => ({ id, name: "read", args: { path }, result: content });
const frWrite = (id: string, path: string): ToolStep => ({ id, name: "write", args: { path, content: "x = 2\n" }, result: `wrote 6 bytes to ${path}` });
const frFinish = (id: string): ToolStep => ({ id, name: "finish", args: { answer: "done" }, result: "finished" });

// --- Qwen Code (Chat) ---
const qwenTools = ["run_shell_command", "read_file", "replace", "write_file", "todo_write"];
const qw = (id: string, command: string, exit = 0, output = ""): ToolStep => ({
  id,
  name: "run_shell_command",
  args: { command, description: "run" },
  result: `Command: ${command}\nDirectory: (root)\nOutput: ${output || "(empty)"}\nError: (none)\nExit Code: ${exit}\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242`,
});
const qwRead = (id: string, path: string, content = "x = 1"): ToolStep => ({ id, name: "read_file", args: { absolute_path: path }, result: content });
const qwReplace = (id: string, path: string): ToolStep => ({ id, name: "replace", args: { file_path: path, old_string: "x = 1", new_string: "x = 2" }, result: `Successfully modified file: ${path} (1 replacements).` });
const qwWrite = (id: string, path: string): ToolStep => ({ id, name: "write_file", args: { file_path: path, content: "x = 2" }, result: `Successfully created and wrote to new file: ${path}.` });

// --- opencode (Chat) ---
const openTools = ["bash", "read", "edit", "write", "todowrite"];
const oc = (id: string, command: string, output = ""): ToolStep => ({ id, name: "bash", args: { command, description: "run" }, result: output });
const ocRead = (id: string, path: string, content = "<file>\n00001| x = 1\n</file>"): ToolStep => ({ id, name: "read", args: { filePath: path }, result: content });
const ocEdit = (id: string, path: string): ToolStep => ({ id, name: "edit", args: { filePath: path, oldString: "x = 1", newString: "x = 2" }, result: "" });
const ocTodo = (id: string, ...statuses: string[]): ToolStep => ({ id, name: "todowrite", args: todos(...statuses), result: "[]" });

export const labelledSet: LabelledTrajectory[] = [
  // ---------------------------------------------------------------- Codex, Responses
  {
    id: "cx-fix-and-test", harness: "codex", protocol: "responses", stream: true, tools: codexTools,
    turns: [[cx("a", "cat src/calc.py", 0, "def add(a, b): return a - b")], [cxPatch("b", "src/calc.py")], [cx("c", "pytest -q", 0, "3 passed")]],
    labels: { errors: [], edits: ["b"], checks: ["c"], verified: true, recovered: [], used: ["shell", "apply_patch"] },
    note: "read, patch, test: the plain good path",
  },
  {
    id: "cx-test-fail-fix-retest", harness: "codex", protocol: "responses", tools: codexTools,
    turns: [[cx("a", "pytest -q", 1, "1 failed")], [cxPatch("b", "src/calc.py")], [cx("c", "pytest -q", 0, "3 passed")]],
    labels: { errors: ["a"], edits: ["b"], checks: ["a", "c"], verified: true, recovered: ["a"], used: ["shell", "apply_patch"] },
    note: "a failing test run retried after the fix",
  },
  {
    id: "cx-sed-edit-no-check", harness: "codex", protocol: "responses", stream: true, tools: codexTools,
    turns: [[cx("a", "sed -i 's/- b/+ b/' src/calc.py")], [cx("b", "echo done")]],
    labels: { errors: [], edits: ["a"], checks: [], verified: false, recovered: [], used: ["shell"] },
    note: "an edit followed by an echo: nothing verified",
  },
  {
    id: "cx-heredoc-then-run", harness: "codex", protocol: "responses", tools: codexTools,
    turns: [[cx("a", "cat <<'EOF' > hello.py\nprint('hi')\nEOF")], [cx("b", "python3 hello.py", 0, "hi")]],
    labels: { errors: [], edits: ["a"], checks: [], verified: true, recovered: [], used: ["shell"] },
    note: "a file written through a heredoc, then run",
  },
  {
    id: "cx-plan-evidenced", harness: "codex", protocol: "responses", stream: true, tools: codexTools,
    turns: [[cxPlan("p1", "pending", "pending")], [cx("a", "ls src", 0, "calc.py")], [cxPatch("b", "src/calc.py")], [cxPlan("p2", "completed", "completed")]],
    labels: { errors: [], edits: ["b"], checks: [], verified: false, recovered: [], evidenced: 2, used: ["shell", "apply_patch", "update_plan"] },
    note: "two steps, two actions between the plan updates",
  },
  {
    id: "cx-plan-claimed", harness: "codex", protocol: "responses", tools: codexTools,
    turns: [[cxPlan("p1", "completed", "completed", "completed")]],
    labels: { errors: [], edits: [], checks: [], verified: null, recovered: [], evidenced: 0, used: ["update_plan"] },
    note: "a plan marked done with nothing done",
  },
  {
    id: "cx-grep-no-match", harness: "codex", protocol: "responses", tools: codexTools,
    turns: [[cx("a", "grep -rn TODO src", 1, "")], [cx("b", "cat src/calc.py", 0, "x")]],
    labels: { errors: [], edits: [], checks: [], verified: null, recovered: [], used: ["shell"] },
    note: "hard: grep exits 1 for no match, which is an answer, not a failure",
  },
  {
    id: "cx-patch-fails-then-sed", harness: "codex", protocol: "responses", tools: codexTools,
    turns: [[cxPatch("a", "src/calc.py", false)], [cx("b", "sed -i 's/x = 1/x = 2/' src/calc.py")], [cx("c", "git diff", 0, "-x = 1\n+x = 2")]],
    labels: { errors: ["a"], edits: ["b"], checks: [], verified: true, recovered: ["a"], used: ["shell", "apply_patch"] },
    note: "a patch that did not apply, redone with sed, reviewed with git diff",
  },
  {
    id: "cx-npm-test-then-jest", harness: "codex", protocol: "responses", stream: true, tools: codexTools,
    turns: [[cx("a", "npm test", 1, "1 failing")], [cxPatch("b", "src/sum.js")], [cx("c", "npx jest", 0, "Tests: 2 passed")]],
    labels: { errors: ["a"], edits: ["b"], checks: ["a", "c"], verified: true, recovered: ["a"], used: ["shell", "apply_patch"] },
    note: "hard: the retry runs the same tests through another command (npm test, then npx jest)",
  },
  {
    id: "cx-python-inline-check", harness: "codex", protocol: "responses", tools: codexTools,
    turns: [[cxPatch("a", "app.py")], [cx("b", "python3 -c 'import app; print(app.add(2, 2))'", 0, "4")]],
    labels: { errors: [], edits: ["a"], checks: [], verified: true, recovered: [], used: ["shell", "apply_patch"] },
    note: "hard: the change is verified by importing it inline, which names no file",
  },
  {
    id: "cx-python-writes-file", harness: "codex", protocol: "responses", tools: codexTools,
    turns: [[cx("a", "python3 - <<'EOF'\nopen('config.json', 'w').write('{}')\nEOF")], [cx("b", "cat config.json", 0, "{}")]],
    labels: { errors: [], edits: ["a"], checks: [], verified: true, recovered: [], used: ["shell"] },
    note: "hard: a file written by a Python script on stdin",
  },
  {
    id: "cx-missing-command", harness: "codex", protocol: "responses", stream: true, tools: codexTools,
    turns: [[cx("a", "rg TODO", 127, "bash: rg: command not found")], [cx("b", "grep -rn TODO .", 0, "./a.py:1: TODO")]],
    labels: { errors: ["a"], edits: [], checks: [], verified: null, recovered: ["a"], used: ["shell"] },
    note: "hard: a missing program; the same search done with another one (the same intent, other words)",
  },
  {
    id: "cx-tests-captured", harness: "codex", protocol: "responses", tools: codexTools,
    turns: [[cxPatch("a", "lib.py")], [cx("b", "pytest -q > /tmp/out.txt 2>&1; tail -5 /tmp/out.txt", 0, "2 passed")]],
    labels: { errors: [], edits: ["a"], checks: ["b"], verified: true, recovered: [], used: ["shell", "apply_patch"] },
    note: "test output captured to a file and read back: a check, not an edit",
  },
  {
    id: "cx-reused-ids", harness: "codex", protocol: "responses", tools: codexTools,
    turns: [[cx("call_0", "go test ./...", 1, "FAIL")], [cxPatch("call_1", "sum.go")], [cx("call_0", "go test ./...", 0, "ok")]],
    labels: { errors: ["call_0"], edits: ["call_1"], checks: ["call_0", "call_0#1"], verified: true, recovered: ["call_0"], used: ["shell", "apply_patch"] },
    note: "tool-call ids reused across turns",
  },
  {
    id: "cx-read-error-text", harness: "codex", protocol: "responses", stream: true, tools: codexTools,
    turns: [[cx("a", "cat ERRORS.md", 0, "Error: codes are listed below")]],
    labels: { errors: [], edits: [], checks: [], verified: null, recovered: [], used: ["shell"] },
    note: "a file whose text starts with Error:",
  },

  // ---------------------------------------------------------------- Claude Code, Anthropic
  {
    id: "cc-edit-read-back", harness: "claude-code", protocol: "anthropic", stream: true, tools: claudeTools,
    turns: [[ccRead("a", "/w/app.py")], [ccEdit("b", "/w/app.py")], [ccRead("c", "/w/app.py", "x = 2")]],
    labels: { errors: [], edits: ["b"], checks: [], verified: true, recovered: [], used: ["Read", "Edit"] },
    note: "an edit read back",
  },
  {
    id: "cc-edit-retry", harness: "claude-code", protocol: "anthropic", tools: claudeTools,
    turns: [[ccEdit("a", "/w/app.py", false)], [ccRead("b", "/w/app.py")], [ccEdit("c", "/w/app.py")], [cc("d", "python -m pytest", 0, "4 passed")]],
    labels: { errors: ["a"], edits: ["c"], checks: ["d"], verified: true, recovered: ["a"], used: ["Edit", "Read", "Bash"] },
    note: "an edit that did not match, re-read and redone, then tested",
  },
  {
    id: "cc-echo-after-edit", harness: "claude-code", protocol: "anthropic", stream: true, tools: claudeTools,
    turns: [[ccWrite("a", "/w/notes.txt")], [cc("b", "echo ok", 0, "ok")]],
    labels: { errors: [], edits: ["a"], checks: [], verified: false, recovered: [], used: ["Write", "Bash"] },
    note: "echo ok after an edit is not a verification",
  },
  {
    id: "cc-test-fail-give-up", harness: "claude-code", protocol: "anthropic", tools: claudeTools,
    turns: [[ccEdit("a", "/w/app.py")], [cc("b", "pytest", 1, "1 failed")], [cc("c", "echo giving up", 0, "giving up")]],
    labels: { errors: ["b"], edits: ["a"], checks: ["b"], verified: true, recovered: [], used: ["Edit", "Bash"] },
    note: "a failed test run then echo: verified (the test ran) but not recovered",
  },
  {
    id: "cc-todo-evidenced", harness: "claude-code", protocol: "anthropic", stream: true, tools: claudeTools,
    turns: [[ccTodo("t1", "in_progress", "pending", "pending")], [ccRead("a", "/w/app.py")], [ccTodo("t2", "completed", "in_progress", "pending")], [ccEdit("b", "/w/app.py")], [ccTodo("t3", "completed", "completed", "in_progress")]],
    labels: { errors: [], edits: ["b"], checks: [], verified: false, recovered: [], evidenced: 2, used: ["TodoWrite", "Read", "Edit"] },
    note: "a three-step plan, two steps done with work between the updates",
  },
  {
    id: "cc-todo-all-at-once", harness: "claude-code", protocol: "anthropic", tools: claudeTools,
    turns: [[ccTodo("t1", "pending", "pending", "pending")], [cc("a", "ls", 0, "app.py")], [ccTodo("t2", "completed", "completed", "completed")]],
    labels: { errors: [], edits: [], checks: [], verified: null, recovered: [], evidenced: 0, used: ["TodoWrite", "Bash"] },
    note: "hard: three steps ticked off after a single ls that did none of them",
  },
  {
    id: "cc-read-missing-then-glob", harness: "claude-code", protocol: "anthropic", stream: true, tools: claudeTools,
    turns: [[ccRead("a", "/w/src/main.py", "", true)], [{ id: "b", name: "Grep", args: { pattern: "def main", path: "/w" }, result: "/w/app/main.py", isError: false }], [ccRead("c", "/w/app/main.py")]],
    labels: { errors: ["a"], edits: [], checks: [], verified: null, recovered: ["a"], used: ["Read", "Grep"] },
    note: "a missing file, found elsewhere and read there",
  },
  {
    id: "cc-python-print-gt", harness: "claude-code", protocol: "anthropic", tools: claudeTools,
    turns: [[cc("a", "python3 -c 'print(2>1)'", 0, "True")], [cc("b", "node -e 'console.log(1 > 0)'", 0, "true")]],
    labels: { errors: [], edits: [], checks: [], verified: null, recovered: [], used: ["Bash"] },
    note: "a > inside quotes is no redirect",
  },
  {
    id: "cc-tsc-after-write", harness: "claude-code", protocol: "anthropic", stream: true, tools: claudeTools,
    turns: [[ccWrite("a", "/w/src/index.ts")], [cc("b", "npx tsc --noEmit", 2, "src/index.ts(1,7): error TS2322")], [ccEdit("c", "/w/src/index.ts")], [cc("d", "npx tsc --noEmit", 0, "")]],
    labels: { errors: ["b"], edits: ["a", "c"], checks: ["b", "d"], verified: true, recovered: ["b"], used: ["Write", "Bash", "Edit"] },
    note: "a type check fails, the fix passes it",
  },
  {
    id: "cc-cat-other-file", harness: "claude-code", protocol: "anthropic", tools: claudeTools,
    turns: [[ccEdit("a", "/w/app.py")], [cc("b", "cat README.md", 0, "# app")]],
    labels: { errors: [], edits: ["a"], checks: [], verified: false, recovered: [], used: ["Edit", "Bash"] },
    note: "reading another file after the edit verifies nothing",
  },
  {
    id: "cc-run-script", harness: "claude-code", protocol: "anthropic", stream: true, tools: claudeTools,
    turns: [[ccWrite("a", "/w/run.sh")], [cc("b", "bash /w/run.sh", 0, "ok")]],
    labels: { errors: [], edits: ["a"], checks: [], verified: true, recovered: [], used: ["Write", "Bash"] },
    note: "a written script run",
  },
  {
    id: "cc-bash-fails-twice", harness: "claude-code", protocol: "anthropic", tools: claudeTools,
    turns: [[cc("a", "make test", 2, "make: *** [test] Error 1")], [cc("b", "make test", 2, "make: *** [test] Error 1")], [cc("c", "cat Makefile", 0, "test:")]],
    labels: { errors: ["a", "b"], edits: [], checks: ["a", "b"], verified: null, recovered: [], used: ["Bash"] },
    note: "the same failing check twice, never recovered",
  },
  {
    id: "cc-editor-view-create", harness: "claude-code", protocol: "anthropic", tools: editorTools,
    turns: [[ed("a", "view", "/repo/a.py", "1\tx = 1")], [ed("b", "create", "/repo/b.py", "File created successfully")], [ed("c", "view", "/repo/b.py", "1\tb")]],
    labels: { errors: [], edits: ["b"], checks: [], verified: true, recovered: [], used: ["str_replace_based_edit_tool"] },
    note: "Anthropic's editor: view reads, create writes",
  },
  {
    id: "cc-editor-str-replace-fails", harness: "claude-code", protocol: "anthropic", stream: true, tools: editorTools,
    turns: [[ed("a", "str_replace", "/repo/a.py", "No replacement was performed", true)], [ed("b", "str_replace", "/repo/a.py", "The file /repo/a.py has been edited.")], [{ id: "c", name: "bash", args: { command: "python /repo/a.py" }, result: "ok", isError: false }]],
    labels: { errors: ["a"], edits: ["b"], checks: [], verified: true, recovered: ["a"], used: ["str_replace_based_edit_tool", "bash"] },
    note: "a str_replace that matched nothing, retried, then the file run",
  },
  {
    id: "cc-git-diff-review", harness: "claude-code", protocol: "anthropic", tools: claudeTools,
    turns: [[ccEdit("a", "/w/a.py")], [ccEdit("b", "/w/b.py")], [cc("c", "git diff --stat", 0, " a.py | 2 +-\n b.py | 2 +-")]],
    labels: { errors: [], edits: ["a", "b"], checks: [], verified: true, recovered: [], used: ["Edit", "Bash"] },
    note: "edits reviewed with git diff",
  },

  // ---------------------------------------------------------------- forge-react, Chat
  {
    id: "fr-quickstart-shout", harness: "forge-react", protocol: "chat", tools: reactTools,
    turns: [[frRead("a", "shout.sh", "echo $1")], [frWrite("b", "shout.sh")], [fr("c", "bash shout.sh hi", 0, "HI")], [frFinish("d")]],
    labels: { errors: [], edits: ["b"], checks: [], verified: true, recovered: [], used: ["read", "write", "bash"] },
    note: "write then run the script",
  },
  {
    id: "fr-finish-only", harness: "forge-react", protocol: "chat", stream: true, tools: reactTools,
    turns: [[frFinish("a")]],
    labels: { errors: [], edits: [], checks: [], verified: null, recovered: [], used: [] },
    note: "finish alone uses no capability",
  },
  {
    id: "fr-test-fails-echo", harness: "forge-react", protocol: "chat", tools: reactTools,
    turns: [[fr("a", "pytest -q", 1, "1 failed")], [fr("b", "echo giving up", 0, "giving up")], [frFinish("c")]],
    labels: { errors: ["a"], edits: [], checks: ["a"], verified: null, recovered: [], used: ["bash"] },
    note: "a failed pytest then echo giving up",
  },
  {
    id: "fr-read-missing", harness: "forge-react", protocol: "chat", tools: reactTools,
    turns: [[frRead("a", "src/main.py", "error: ENOENT: no such file or directory, open 'src/main.py'")], [fr("b", "ls src", 0, "app.py")], [frRead("c", "src/app.py")]],
    labels: { errors: ["a"], edits: [], checks: [], verified: null, recovered: [], used: ["read", "bash"] },
    note: "hard: forge-react's read reports a missing file only in words",
  },
  {
    id: "fr-sed-test", harness: "forge-react", protocol: "chat", stream: true, tools: reactTools,
    turns: [[fr("a", "sed -i 's/1/2/' sum.py && python3 -m pytest -q", 0, "2 passed")], [frFinish("b")]],
    labels: { errors: [], edits: ["a"], checks: ["a"], verified: true, recovered: [], used: ["bash"] },
    note: "edit and test in one command: the test runs after the edit",
  },
  {
    id: "fr-reused-ids", harness: "forge-react", protocol: "chat", tools: reactTools,
    turns: [[fr("call_0", "./test.sh", 1, "FAIL")], [frWrite("call_1", "sum.py")], [fr("call_0", "./test.sh", 0, "PASS")]],
    labels: { errors: ["call_0"], edits: ["call_1"], checks: ["call_0", "call_0#1"], verified: true, recovered: ["call_0"], used: ["bash", "write"] },
    note: "the task's check script, ids reused per turn",
  },
  {
    id: "fr-write-then-cat", harness: "forge-react", protocol: "chat", tools: reactTools,
    turns: [[frWrite("a", "out/hello.txt")], [fr("b", "cat ./out/hello.txt", 0, "hello")]],
    labels: { errors: [], edits: ["a"], checks: [], verified: true, recovered: [], used: ["write", "bash"] },
    note: "the same file named two ways (out/hello.txt, ./out/hello.txt)",
  },
  {
    id: "fr-ls-after-write", harness: "forge-react", protocol: "chat", stream: true, tools: reactTools,
    turns: [[frWrite("a", "hello.txt")], [fr("b", "ls -la", 0, "hello.txt")]],
    labels: { errors: [], edits: ["a"], checks: [], verified: false, recovered: [], used: ["write", "bash"] },
    note: "listing the directory does not check the content",
  },

  // ---------------------------------------------------------------- Qwen Code, Chat
  {
    id: "qw-replace-test", harness: "qwen-code", protocol: "chat", tools: qwenTools,
    turns: [[qwRead("a", "/w/calc.py")], [qwReplace("b", "/w/calc.py")], [qw("c", "python -m pytest -q", 0, "3 passed")]],
    labels: { errors: [], edits: ["b"], checks: ["c"], verified: true, recovered: [], used: ["read_file", "replace", "run_shell_command"] },
    note: "read, replace, test",
  },
  {
    id: "qw-test-fail-retry", harness: "qwen-code", protocol: "chat", stream: true, tools: qwenTools,
    turns: [[qw("a", "npm test", 1, "1 failing")], [qwReplace("b", "/w/sum.js")], [qw("c", "npm test", 0, "2 passing")]],
    labels: { errors: ["a"], edits: ["b"], checks: ["a", "c"], verified: true, recovered: ["a"], used: ["run_shell_command", "replace"] },
    note: "npm test fails, passes after the fix",
  },
  {
    id: "qw-write-no-check", harness: "qwen-code", protocol: "chat", tools: qwenTools,
    turns: [[qwWrite("a", "/w/new.py")], [qw("b", "echo written", 0, "written")]],
    labels: { errors: [], edits: ["a"], checks: [], verified: false, recovered: [], used: ["write_file", "run_shell_command"] },
    note: "a new file, unchecked",
  },
  {
    id: "qw-redirect-edit", harness: "qwen-code", protocol: "chat", stream: true, tools: qwenTools,
    turns: [[qw("a", "printf 'a=1\\n' >> config.ini")], [qw("b", "grep a= config.ini", 0, "a=1")]],
    labels: { errors: [], edits: ["a"], checks: [], verified: true, recovered: [], used: ["run_shell_command"] },
    note: "an append through a redirect, grepped back",
  },
  {
    id: "qw-plan-partial", harness: "qwen-code", protocol: "chat", tools: qwenTools,
    turns: [[{ id: "p1", name: "todo_write", args: todos("pending", "pending"), result: "ok" }], [qwReplace("a", "/w/a.py")], [{ id: "p2", name: "todo_write", args: todos("completed", "pending"), result: "ok" }]],
    labels: { errors: [], edits: ["a"], checks: [], verified: false, recovered: [], evidenced: 1, used: ["todo_write", "replace"] },
    note: "one of two steps done",
  },
  {
    id: "qw-signal-killed", harness: "qwen-code", protocol: "chat", tools: qwenTools,
    turns: [[qw("a", "python train.py", 137, "Killed")], [qw("b", "python train.py --small", 0, "done")]],
    labels: { errors: ["a"], edits: [], checks: [], verified: null, recovered: ["a"], used: ["run_shell_command"] },
    note: "killed, rerun smaller: the same script is the same intent",
  },

  // ---------------------------------------------------------------- opencode, Chat
  {
    id: "oc-edit-test", harness: "opencode", protocol: "chat", stream: true, tools: openTools,
    turns: [[ocRead("a", "/w/calc.py")], [ocEdit("b", "/w/calc.py")], [oc("c", "pytest -q", "3 passed in 0.01s")]],
    labels: { errors: [], edits: ["b"], checks: ["c"], verified: true, recovered: [], used: ["read", "edit", "bash"] },
    note: "read, edit, test",
  },
  {
    id: "oc-test-fails-silently", harness: "opencode", protocol: "chat", tools: openTools,
    turns: [[oc("a", "pytest -q", "FAILED tests/test_calc.py::test_add\n1 failed in 0.02s")], [ocEdit("b", "/w/calc.py")], [oc("c", "pytest -q", "1 passed in 0.01s")]],
    labels: { errors: ["a"], edits: ["b"], checks: ["a", "c"], verified: true, recovered: ["a"], used: ["bash", "edit"] },
    note: "hard: opencode's bash output carries no exit code, so the failure is only in words",
  },
  {
    id: "oc-todo-evidenced", harness: "opencode", protocol: "chat", tools: openTools,
    turns: [[ocTodo("t1", "pending", "pending")], [ocRead("a", "/w/a.py")], [ocEdit("b", "/w/a.py")], [ocTodo("t2", "completed", "completed")], [oc("c", "python /w/a.py", "ok")]],
    labels: { errors: [], edits: ["b"], checks: [], verified: true, recovered: [], evidenced: 2, used: ["todowrite", "read", "edit", "bash"] },
    note: "two steps with their work; the edited file run afterwards",
  },
  {
    id: "oc-read-only", harness: "opencode", protocol: "chat", stream: true, tools: openTools,
    turns: [[ocRead("a", "/w/README.md", "Error: see troubleshooting")], [oc("b", "ls", "README.md")]],
    labels: { errors: [], edits: [], checks: [], verified: null, recovered: [], used: ["read", "bash"] },
    note: "a README whose text starts with Error:",
  },
];
