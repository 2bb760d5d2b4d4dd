import { describe, expect, test } from "bun:test";
import { classifyTool, isShellTool, patchPaths, planStateOf, resultError, scriptFacts, shellCommandOf, toolFacts } from "./classify.ts";

const shell = (command: unknown) => JSON.stringify({ command });

describe("toolFacts: shell commands, parsed", () => {
  test.each([
    ["bash", shell("pytest -q"), "test"],
    ["Bash", shell("cd app && npm test"), "test"],
    ["shell", shell(["bash", "-lc", "cargo test --all"]), "test"],
    ["exec_command", JSON.stringify({ cmd: "go test ./..." }), "test"],
    ["bash", shell("npm run lint"), "test"],
    ["bash", shell("python -m pytest tests/"), "test"],
    ["bash", shell("bash tests/test.sh"), "test"],
    ["bash", shell("./check.sh"), "test"],
    ["bash", shell("cat src/a.py"), "read"],
    ["bash", shell("git diff"), "read"],
    ["bash", shell("grep -n foo a.py > /dev/null"), "read"],
    ["bash", shell("sed -i 's/a/b/' a.py && pytest"), "edit"],
    ["bash", shell("echo x > a.txt"), "edit"],
    ["bash", shell("cat <<EOF > a.py\nx\nEOF"), "edit"],
    ["shell", shell(["apply_patch", "*** Begin Patch\n*** Update File: a.py\n*** End Patch"]), "edit"],
    ["bash", shell("python main.py"), "shell"],
    // The misclassifications: none of these edit a file.
    ["bash", shell("python3 -c 'print(2>1)'"), "shell"],
    ["bash", shell("pytest > out.txt 2>&1"), "test"],
    ["bash", shell("(cd app && make test) > build.log"), "test"],
    ["bash", shell("echo ok"), "shell"],
  ])("%s %s → %s", (name, args, kind) => {
    expect(classifyTool(name, args)).toBe(kind as ReturnType<typeof classifyTool>);
  });

  test("files written, read and run; intents", () => {
    const edit = scriptFacts("sed -i 's/a/b/' src/a.py && pytest -q tests/test_a.py");
    expect(edit.writes).toEqual(["src/a.py"]);
    expect(edit.runsCheck).toBe(true);
    expect(edit.intents).toEqual(["pytest", "edit:a.py"]);
    expect(scriptFacts("cat a.py b.py | grep -n x").reads).toEqual(["a.py", "b.py"]);
    expect(scriptFacts("timeout 10 python3 main.py --fast").executes).toEqual(["main.py"]);
    expect(scriptFacts("./run.sh").executes).toEqual(["./run.sh"]);
    expect(scriptFacts("echo giving up").intents).toEqual([]);
    expect(scriptFacts("cp a.txt b.txt && mv c d && rm -f e").writes).toEqual(["b.txt", "c", "d", "e"]);
    expect(scriptFacts("echo hi | tee -a log.txt").writes).toEqual(["log.txt"]);
    expect(scriptFacts("npm test").intents).toEqual(["npm test"]);
    expect(scriptFacts("npm run test:unit").intents).toEqual(["npm run test:unit"]);
    expect(scriptFacts("bash -c 'echo x > y.txt'").writes).toEqual(["y.txt"]);
  });

  test("a script that is not valid bash: what could be read, and where it broke", () => {
    const facts = toolFacts("bash", shell("echo 'unterminated"));
    expect(facts.kind).toBe("shell");
    expect(facts.parseError).toBe("not valid bash (unexpected text at line 1, column 5)");
  });
});

describe("toolFacts: dedicated tools", () => {
  test.each([
    ["Edit", '{"file_path":"a.py"}', "edit"],
    ["apply_patch", '{"input":"*** Begin Patch\\n*** Add File: b.py\\n"}', "edit"],
    ["Write", "{}", "edit"],
    ["write_file", '{"file_path":"/w/a.py","content":"x"}', "edit"],
    ["Read", '{"file_path":"a.py"}', "read"],
    ["read_file", "{}", "read"],
    ["Grep", "{}", "read"],
    ["TodoWrite", "{}", "plan"],
    ["update_plan", "{}", "plan"],
    ["finish", '{"answer":"42"}', "control"],
    ["attempt_completion", "{}", "control"],
    ["web_search", "{}", "other"],
    // Anthropic's text editor: view reads, the other commands edit.
    ["str_replace_based_edit_tool", '{"command":"view","path":"a.py"}', "read"],
    ["str_replace_based_edit_tool", '{"command":"str_replace","path":"a.py"}', "edit"],
  ])("%s %s → %s", (name, args, kind) => {
    expect(classifyTool(name, args)).toBe(kind as ReturnType<typeof classifyTool>);
  });

  test("paths and intents", () => {
    expect(toolFacts("Edit", '{"file_path":"/work/src/a.py"}').intents).toEqual(["edit:a.py"]);
    expect(toolFacts("apply_patch", '{"input":"*** Begin Patch\\n*** Update File: x/a.py\\n*** Move to: x/b.py\\n"}').writes).toEqual(["x/a.py", "x/b.py"]);
    expect(patchPaths("--- a/f.txt\n+++ b/f.txt\n@@")).toEqual(["f.txt"]);
    expect(toolFacts("web_search", "{}").intents).toEqual(["tool:web_search"]);
  });

  test("shell tools", () => {
    expect(["bash", "Bash", "shell", "local_shell", "run_shell_command", "exec_command"].every(isShellTool)).toBe(true);
    expect(["Read", "edit", "bash_history"].some(isShellTool)).toBe(false);
  });

  test("shellCommandOf takes the script after -lc, and quotes an argv", () => {
    expect(shellCommandOf(shell(["bash", "-lc", "ls -la"]))).toBe("ls -la");
    expect(shellCommandOf(shell(["ls", "-la"]))).toBe("ls -la");
    expect(shellCommandOf(shell(["python3", "-c", "print(2 > 1)"]))).toBe("python3 -c 'print(2 > 1)'");
    expect(shellCommandOf("not json")).toBe("not json");
  });
});

describe("resultError: structured signals only", () => {
  test.each([
    ['{"output":"x","metadata":{"exit_code":1,"duration_seconds":0.1}}', null, true, true, "exit_code"],
    ['{"output":"x","metadata":{"exit_code":0}}', null, true, false, "exit_code"],
    ["Exit code: 2\nWall time: 0.1 seconds\nOutput:\nboom", null, true, true, "exit_code"],
    ["exit code 0\nhello", null, true, false, "exit_code"],
    ["Command: ls\nStdout: a\nExit Code: 0\nSignal: (none)", null, true, false, "exit_code"],
    ["Process exited with code 0", null, true, false, "exit_code"],
    ["anything", true, false, true, "flag"],
    ["Exit code 1", false, true, false, "flag"], // the protocol's flag decides
    ["<tool_use_error>File does not exist.</tool_use_error>", null, false, true, "envelope"],
    ['{"content":[{"type":"text","text":"x"}],"isError":true}', null, false, true, "envelope"],
    ['{"error":"not found"}', null, false, true, "envelope"],
    // Not errors, or unknown: text that looks like one is not a signal.
    ["Error: this line is the file's first line", null, false, null, null],
    ["Traceback (most recent call last):\n  File", null, true, null, null],
    ["bash: foo: command not found", null, true, null, null],
    ["the docs say: exit code 1 means failure", null, false, null, null],
    ["exit code 1", null, false, null, null], // a file's text, not a shell's report
    ['{"error":"x","output":"still ran"}', null, false, null, null],
  ] as const)("%j (flag %p, shell %p) → %p by %p", (text, flag, isShell, isError, signal) => {
    expect(resultError(text, flag, isShell)).toEqual({ isError, signal });
  });
});

describe("planStateOf", () => {
  test("Claude Code todos and Codex plan", () => {
    expect(planStateOf(JSON.stringify({ todos: [{ content: "a", status: "completed" }, { content: "b", status: "in_progress" }] }))).toEqual({ total: 2, completed: ["a"] });
    expect(planStateOf(JSON.stringify({ plan: [{ step: "a", status: "completed" }] }))).toEqual({ total: 1, completed: ["a"] });
    expect(planStateOf("{}")).toBeNull();
    expect(planStateOf("nope")).toBeNull();
  });
});
