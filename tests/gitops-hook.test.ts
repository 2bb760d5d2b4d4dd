/**
 * GitOps end to end on a real git repo: a commit runs the experiments it changed through
 * the post-commit hook (local executor, real proxy, policy simulator), and every rollout
 * carries the commit SHA; a bad experiment blocks nothing else; a pushed-to bare repo is
 * followed by `watch`.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readRecords } from "../records/index.ts";
import { git, resolveCommit } from "../gitops/git.ts";
import { initGitopsRepo } from "../gitops/init.ts";
import { watchOnce } from "../gitops/watch.ts";
import { COMMIT_LABEL } from "../gitops/trigger.ts";

const FORGE_CLI = join(import.meta.dir, "..", "bin", "forge.ts");

const experiment = (name: string, k: number | string) => `apiVersion: openforge.dev/v1
kind: Experiment
metadata:
  name: ${name}
spec:
  policy:
    model: forge-sim/qwen3-sim
    mode: train
  harness:
    name: forge-react
  environment:
    tasks:
      - id: hello
        instruction: Create a file hello.txt containing exactly the line "hello world".
        test: grep -qx "hello world" hello.txt
  rollouts:
    k: ${k}
    parallelism: 2
    timeoutSeconds: 60
    sandbox: none
  metrics:
    k: [1]
`;

function newRepo(): string {
  const repo = mkdtempSync(join(tmpdir(), "forge-gitops-e2e-"));
  initGitopsRepo(repo, FORGE_CLI);
  git(repo, ["config", "user.email", "test@example.com"]);
  git(repo, ["config", "user.name", "Test"]);
  rmSync(join(repo, "experiments", "example.yaml"));
  return repo;
}

/** Commits through the real hook, in the foreground so the test can wait for it. */
function commitWithHook(repo: string, message: string): { sha: string; output: string } {
  git(repo, ["add", "-A"]);
  const run = Bun.spawnSync(["git", "commit", "-q", "-m", message], {
    cwd: repo,
    // The experiments run sandbox: none (trusted test code); as root that needs the opt-in.
    env: { ...process.env, FORGE_GITOPS_FOREGROUND: "1", FORGE_ALLOW_ROOT_UNSANDBOXED: "1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { sha: resolveCommit(repo), output: run.stdout.toString() + run.stderr.toString() };
}

async function rolloutLabels(dataDir: string): Promise<Record<string, string>[]> {
  const labels: Record<string, string>[] = [];
  for await (const { record } of readRecords(dataDir)) {
    if (record.kind.case === "rollout") labels.push(record.kind.value.labels);
  }
  return labels;
}

function runDirs(repo: string): string[] {
  const dir = join(repo, ".forge", "runs");
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

describe("gitops: a commit triggers the experiments it changed", () => {
  test("the post-commit hook runs the new experiment; its rollouts carry the SHA", async () => {
    const repo = newRepo();
    writeFileSync(join(repo, "experiments", "hello.yaml"), experiment("hello", 2));
    const { sha, output } = commitWithHook(repo, "add hello experiment");
    expect(output).toContain("experiments/hello.yaml");
    const [dir] = runDirs(repo);
    expect(dir).toBe(`hello-${sha.slice(0, 12)}`);
    const labels = await rolloutLabels(join(repo, ".forge", "runs", dir!));
    expect(labels).toHaveLength(2);
    for (const l of labels) expect(l[COMMIT_LABEL]).toBe(sha);
  }, 120_000);

  test("an invalid experiment is reported with file and field and blocks nothing else; a docs commit runs nothing", async () => {
    const repo = newRepo();
    writeFileSync(join(repo, "experiments", "good.yaml"), experiment("good", 1));
    writeFileSync(join(repo, "experiments", "bad.yaml"), experiment("bad", "three"));
    const { sha, output } = commitWithHook(repo, "two experiments, one broken");
    expect(output).toMatch(/experiments\/bad\.yaml:\d+:\d+: spec\.rollouts\.k/);
    expect(runDirs(repo)).toEqual([`good-${sha.slice(0, 12)}`]);
    expect(await rolloutLabels(join(repo, ".forge", "runs", runDirs(repo)[0]!))).toHaveLength(1);

    writeFileSync(join(repo, "README.md"), "notes\n");
    const docs = commitWithHook(repo, "docs only");
    expect(docs.output).toContain("changes no experiment");
    expect(runDirs(repo)).toHaveLength(1);

    rmSync(join(repo, "experiments", "good.yaml"));
    const removal = commitWithHook(repo, "retire good");
    expect(removal.output).toContain("experiments/good.yaml was deleted");
    expect(runDirs(repo)).toHaveLength(1);
  }, 120_000);

  test("watch follows a bare repo that is pushed to, each new commit once", async () => {
    const work = newRepo();
    // The working clone pushes; its own hook must not run (the server side does).
    rmSync(join(work, ".git", "hooks", "post-commit"));
    const bare = mkdtempSync(join(tmpdir(), "forge-gitops-bare-"));
    git(bare, ["init", "--quiet", "--bare", "--initial-branch=main"]);
    git(work, ["remote", "add", "origin", bare]);
    writeFileSync(join(work, "README.md"), "start\n");
    git(work, ["add", "-A"]);
    git(work, ["commit", "-q", "-m", "start"]);
    git(work, ["push", "-q", "origin", "main"]);
    const options = { repo: bare, branch: "main", executor: "local" as const, intervalMs: 10, log: () => {} };
    expect(await watchOnce(options)).toEqual([]);

    writeFileSync(join(work, "experiments", "pushed.yaml"), experiment("pushed", 1));
    git(work, ["add", "-A"]);
    git(work, ["commit", "-q", "-m", "add pushed"]);
    const sha = resolveCommit(work);
    git(work, ["push", "-q", "origin", "main"]);
    // watch starts `forge run` with this process's environment; sandbox: none as root needs the opt-in.
    process.env.FORGE_ALLOW_ROOT_UNSANDBOXED = "1";
    let outcomes;
    try {
      outcomes = await watchOnce(options);
    } finally {
      delete process.env.FORGE_ALLOW_ROOT_UNSANDBOXED;
    }
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]).toMatchObject({ path: "experiments/pushed.yaml", outcome: "ran", exitCode: 0 });
    const dataDir = (outcomes[0] as { dataDir: string }).dataDir;
    expect((await rolloutLabels(dataDir))[0]![COMMIT_LABEL]).toBe(sha);
    expect(readFileSync(join(bare, ".forge", "gitops", "watch.json"), "utf8")).toContain(sha);
    expect(await watchOnce(options)).toEqual([]);
  }, 120_000);
});
