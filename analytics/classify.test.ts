import { describe, expect, test } from "bun:test";
import { classifyTool, isShellTool, planStateOf, resultLooksLikeError, shellCommandOf } from "./classify.ts";

const shell = (command: unknown) => JSON.stringify({ command });

describe("classifyTool", () => {
  test.each([
    ["bash", shell("pytest -q"), "test"],
    ["Bash", shell("cd app && npm test"), "test"],
    ["shell", shell(["bash", "-lc", "cargo test --all"]), "test"],
    ["exec_command", JSON.stringify({ cmd: "go test ./..." }), "test"],
    ["bash", shell("cat src/a.py"), "read"],
    ["bash", shell("git diff"), "read"],
    ["bash", shell("grep -n foo a.py > /dev/null"), "read"],
    ["bash", shell("sed -i 's/a/b/' a.py && pytest"), "edit"],
    ["bash", shell("echo x > a.txt"), "edit"],
    ["bash", shell("cat <<EOF > a.py\nx\nEOF"), "edit"],
    ["shell", shell(["apply_patch", "*** Begin Patch"]), "edit"],
    ["bash", shell("python main.py"), "shell"],
    ["Edit", "{}", "edit"],
    ["apply_patch", "{}", "edit"],
    ["str_replace_based_edit_tool", "{}", "edit"],
    ["Write", "{}", "edit"],
    ["Read", "{}", "read"],
    ["read_file", "{}", "read"],
    ["Grep", "{}", "read"],
    ["TodoWrite", "{}", "plan"],
    ["update_plan", "{}", "plan"],
    ["todowrite", "{}", "plan"],
    ["web_search", "{}", "other"],
  ])("%s %s → %s", (name, args, kind) => {
    expect(classifyTool(name, args)).toBe(kind as ReturnType<typeof classifyTool>);
  });

  test("shell tools", () => {
    expect(["bash", "Bash", "shell", "local_shell", "run_shell_command", "exec_command"].every(isShellTool)).toBe(true);
    expect(["Read", "edit", "bash_history"].some(isShellTool)).toBe(false);
  });

  test("shellCommandOf takes the script after -lc", () => {
    expect(shellCommandOf(shell(["bash", "-lc", "ls -la"]))).toBe("ls -la");
    expect(shellCommandOf(shell(["ls", "-la"]))).toBe("ls -la");
    expect(shellCommandOf("not json")).toBe("not json");
  });
});

describe("resultLooksLikeError", () => {
  test.each([
    ['{"output":"x","metadata":{"exit_code":1}}', true],
    ['{"output":"x","metadata":{"exit_code":0}}', false],
    ["Exit code: 2\nOutput: …", true],
    ["Process exited with code 0", false],
    ["Error: ENOENT", true],
    ["Traceback (most recent call last):\n  File", true],
    ["bash: foo: command not found", true],
    ["ok\nbash: foo: command not found later", false],
    ["command not found: foo", true],
    ["3 passed in 0.1s", false],
  ])("%j → %p", (text, expected) => {
    expect(resultLooksLikeError(text)).toBe(expected);
  });
});

describe("planStateOf", () => {
  test("Claude Code todos and Codex plan", () => {
    expect(planStateOf(JSON.stringify({ todos: [{ content: "a", status: "completed" }, { content: "b", status: "in_progress" }] }))).toEqual({ total: 2, completed: 1 });
    expect(planStateOf(JSON.stringify({ plan: [{ step: "a", status: "completed" }] }))).toEqual({ total: 1, completed: 1 });
    expect(planStateOf("{}")).toBeNull();
    expect(planStateOf("nope")).toBeNull();
  });
});
