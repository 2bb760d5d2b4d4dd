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

describe("commitExperimentChanges on a real repo", () => {
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
