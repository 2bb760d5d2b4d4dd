import { describe, expect, test } from "bun:test";
import { parsePolicyScriptFile, parsePolicyScriptText, PolicyScriptError } from "./policy-script.ts";

const problems = (source: string): string[] => {
  try {
    parsePolicyScriptText(source, "p.yaml");
  } catch (error) {
    expect(error).toBeInstanceOf(PolicyScriptError);
    return (error as PolicyScriptError).problems;
  }
  throw new Error("expected the script to be rejected");
};

describe("policy script schema", () => {
  test("the quickstart example parses with defaults filled", () => {
    const script = parsePolicyScriptFile(`${import.meta.dir}/../examples/policies/quickstart.yaml`);
    expect(script.tasks.map((t) => t.name)).toEqual(["hello-file", "sum-numbers", "fix-greeting", "shout", "capital"]);
    expect(script.failure_rate).toBe(0.3);
    expect(parsePolicyScriptText("", "empty.yaml")).toEqual({ version: 1, thinking: false, failure_rate: 0, tasks: [] });
  });

  test("errors name file, line:col and field", () => {
    const source = "tasks:\n  - name: t\n    match: x\n    steps:\n      - write: { path: a.txt }\n";
    expect(problems(source)).toEqual(["p.yaml:5:16: tasks[0].steps[0].write.content: expected the file content (a string)"]);
    expect(problems("failure_rate: 2\n")).toEqual(["p.yaml:1:15: failure_rate: expected a number from 0 to 1, got 2"]);
    expect(problems("tasks:\n  - name: t\n    match: x\n    steps: [{ bash: ls, read: a }]\n")[0]).toMatch(/^p\.yaml:4:\d+: tasks\[0\]\.steps\[0\]\.read: a step has one action; this one has bash and read/);
    expect(problems("tasks:\n  - name: t\n    match: x\n    stepz: []\n")).toContain(
      'p.yaml:4:5: tasks[0]: unknown field "stepz" (did you mean "steps"?)',
    );
    expect(problems("tasks:\n  - name: t\n    match: { regex: '(' }\n    steps: [{ say: hi }]\n")[0]).toMatch(/tasks\[0\]\.match\.regex: invalid regular expression/);
    expect(problems("tasks: [\n")[0]).toMatch(/^p\.yaml:\d+:\d+: YAML syntax error/);
    expect(problems("tasks:\n  - name: t\n    match: x\n    steps: [{}]\n")[0]).toMatch(/steps\[0\]: a step needs one of bash, write, read, finish, tool or say/);
  });

  test("a missing file names the path", () => {
    expect(() => parsePolicyScriptFile("/nonexistent/policy.yaml")).toThrow(/\/nonexistent\/policy\.yaml: cannot read the policy script/);
  });
});
