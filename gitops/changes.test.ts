import { describe, expect, test } from "bun:test";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { experimentChanges, isExperimentPath, commitExperimentChanges } from "./changes.ts";
import { git, resolveCommit } from "./git.ts";

function tempRepo(): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-git-"));
  git(dir, ["init", "--quiet", "--initial-branch=main"]);
  git(dir, ["config", "user.email", "test@example.com"]);
  git(dir, ["config", "user.name", "Test"]);
  return dir;
}

function commitFiles(repo: string, files: Record<string, string | null>, message: string): string {
  for (const [path, content] of Object.entries(files)) {
    if (content === null) rmSync(join(repo, path));
    else {
      mkdirSync(join(repo, path, ".."), { recursive: true });
      writeFileSync(join(repo, path), content);
    }
  }
  git(repo, ["add", "-A"]);
  git(repo, ["commit", "--quiet", "--no-verify", "-m", message]);
  return resolveCommit(repo);
}

describe("isExperimentPath", () => {
  test("only yaml files directly under experiments/", () => {
    expect(isExperimentPath("experiments/a.yaml")).toBe(true);
    expect(isExperimentPath("experiments/a.yml")).toBe(true);
    expect(isExperimentPath("experiments/sub/a.yaml")).toBe(false);
    expect(isExperimentPath("experiments/README.md")).toBe(false);
    expect(isExperimentPath("tasks/a.yaml")).toBe(false);
    expect(isExperimentPath("deploy/manifests/a.yaml")).toBe(false);
  });
});

describe("experimentChanges", () => {
  test("a rename unschedules the old path and runs the new one", () => {
    expect(experimentChanges([{ status: "renamed", from: "experiments/a.yaml", path: "experiments/b.yaml" }])).toEqual([
      { kind: "deleted", path: "experiments/a.yaml" },
      { kind: "run", path: "experiments/b.yaml" },
    ]);
  });
});

describe("experiments whose inputs a commit changed", () => {
  const experiments = [
    { path: "experiments/a.yaml", inputs: ["tasks", "policies/a.yaml"] },
    { path: "experiments/b.yaml", inputs: ["tasks/b.jsonl"] },
    { path: "experiments/inline.yaml", inputs: [] },
  ];
  test("a file under an experiment's tasks folder, or its policy script, runs it again, saying which file", () => {
    expect(experimentChanges([{ status: "modified", path: "tasks/hello/tests/test.sh" }], experiments)).toEqual([
      { kind: "run", path: "experiments/a.yaml", because: "tasks/hello/tests/test.sh" },
    ]);
    expect(experimentChanges([{ status: "modified", path: "policies/a.yaml" }], experiments)).toEqual([{ kind: "run", path: "experiments/a.yaml", because: "policies/a.yaml" }]);
    expect(experimentChanges([{ status: "deleted", path: "tasks/b.jsonl" }], experiments).map((c) => c.path)).toEqual(["experiments/a.yaml", "experiments/b.yaml"]);
    // A rename out of the folder changes it too.
    expect(experimentChanges([{ status: "renamed", from: "tasks/x/instruction.md", path: "old/x.md" }], experiments).map((c) => c.path)).toEqual(["experiments/a.yaml"]);
  });
  test("a file that only shares a prefix, or a change to the experiment itself, is counted once and plainly", () => {
    expect(experimentChanges([{ status: "modified", path: "tasks-old/x" }, { status: "modified", path: "policies/a.yaml.bak" }], experiments)).toEqual([]);
    expect(experimentChanges([{ status: "modified", path: "experiments/a.yaml" }, { status: "modified", path: "tasks/t/x" }], experiments)).toEqual([
      { kind: "run", path: "experiments/a.yaml" },
    ]);
  });
});

const experimentYaml = (tasks: string, script?: string) => `apiVersion: openforge.dev/v1
kind: Experiment
metadata:
  name: e${Math.random().toString(36).slice(2, 8)}
spec:
  policy:
    model: m
${script ? `    simulator:\n      script: ${script}\n` : ""}  harness:
    name: forge-react
  environment:
    tasks: ${tasks}
`;

describe("commitExperimentChanges on a real repo", () => {
  test("a commit that edits a task's test re-runs the experiments that read that task, not the others", () => {
    const repo = tempRepo();
    commitFiles(
      repo,
      {
        "experiments/folder.yaml": experimentYaml("../tasks", "../policies/p.yaml"),
        "experiments/one.yaml": experimentYaml("../tasks/two"),
        "experiments/inline.yaml": experimentYaml("[{id: a, instruction: hi}]"),
        "experiments/broken.yaml": "spec: [\n",
        "tasks/one/instruction.md": "x",
        "tasks/one/tests/test.sh": "true",
        "tasks/two/instruction.md": "y",
        "policies/p.yaml": "version: 1\n",
      },
      "start",
    );
    const edit = commitFiles(repo, { "tasks/one/tests/test.sh": "false" }, "stricter test");
    expect(commitExperimentChanges(repo, edit)).toEqual([{ kind: "run", path: "experiments/folder.yaml", because: "tasks/one/tests/test.sh" }]);
    const two = commitFiles(repo, { "tasks/two/instruction.md": "z" }, "reword");
    expect(commitExperimentChanges(repo, two).map((c) => c.path).sort()).toEqual(["experiments/folder.yaml", "experiments/one.yaml"]);
    const policy = commitFiles(repo, { "policies/p.yaml": "version: 1\nfailure_rate: 0.5\n" }, "policy");
    expect(commitExperimentChanges(repo, policy)).toEqual([{ kind: "run", path: "experiments/folder.yaml", because: "policies/p.yaml" }]);
  });


  test("added, modified and deleted experiments; other files ignored", () => {
    const repo = tempRepo();
    const first = commitFiles(repo, { "experiments/a.yaml": "a: 1\n", "README.md": "x" }, "add a");
    expect(commitExperimentChanges(repo, first)).toEqual([{ kind: "run", path: "experiments/a.yaml" }]);
    const second = commitFiles(repo, { "experiments/a.yaml": "a: 2\n", "experiments/b.yaml": "b: 1\n", "tasks/t/instruction.md": "x" }, "change");
    expect(commitExperimentChanges(repo, second)).toEqual([
      { kind: "run", path: "experiments/a.yaml" },
      { kind: "run", path: "experiments/b.yaml" },
    ]);
    const third = commitFiles(repo, { "experiments/a.yaml": null }, "delete a");
    expect(commitExperimentChanges(repo, third)).toEqual([{ kind: "deleted", path: "experiments/a.yaml" }]);
    const fourth = commitFiles(repo, { "README.md": "y" }, "docs");
    expect(commitExperimentChanges(repo, fourth)).toEqual([]);
  });

  test("an unknown commit is a clear GitError", () => {
    const repo = tempRepo();
    expect(() => commitExperimentChanges(repo, "0123456789abcdef0123456789abcdef01234567")).toThrow(/git diff-tree/);
  });
});

export { tempRepo, commitFiles };
