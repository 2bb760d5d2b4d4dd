/**
 * GitOps end to end on a real git repo: a commit runs the experiments it changed through
 * the post-commit hook (local executor, real proxy, policy simulator), and every rollout
 * carries the commit SHA; a bad experiment blocks nothing else and is printed at commit time;
 * the example `init` writes scores for real; a clone works after `init .`; editing a task
 * re-runs the experiments that use it; a pushed-to bare repo is followed by `watch`.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import type { RolloutOutcome } from "../../workflows/testing.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readRecords } from "../../records/index.ts";
import { git, resolveCommit } from "../../gitops/git.ts";
import { initGitopsRepo } from "../../gitops/init.ts";
import { watchOnce } from "../../gitops/watch.ts";
import { COMMIT_LABEL } from "../../gitops/trigger.ts";

const FORGE_CLI = join(import.meta.dir, "..", "..", "bin", "forge.ts");

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

function newRepo(keepExample = false): string {
  const repo = mkdtempSync(join(tmpdir(), "forge-gitops-e2e-"));
  initGitopsRepo(repo, FORGE_CLI);
  git(repo, ["config", "user.email", "test@example.com"]);
  git(repo, ["config", "user.name", "Test"]);
  if (!keepExample) rmSync(join(repo, "experiments", "example.yaml"));
  return repo;
}

/** Commits through the real hook, in the foreground (so the test can wait for it) unless `background`. */
function commitWithHook(repo: string, message: string, background = false): { sha: string; output: string } {
  git(repo, ["add", "-A"]);
  const run = Bun.spawnSync(["git", "commit", "-q", "-m", message], {
    cwd: repo,
    // The experiments run sandbox: none (trusted test code); as root that needs the opt-in.
    env: { ...process.env, FORGE_GITOPS_FOREGROUND: background ? "0" : "1", FORGE_CLI: "", FORGE_ALLOW_ROOT_UNSANDBOXED: "1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { sha: resolveCommit(repo), output: run.stdout.toString() + run.stderr.toString() };
}

/** Each rollout of a run: its outcome and what its workspace's hello.txt says. */
function helloOutcomes(dataDir: string): { reward: number; hello: string }[] {
  const outcomes = JSON.parse(readFileSync(join(dataDir, "rollouts", "outcomes.json"), "utf8")) as RolloutOutcome[];
  return outcomes.map((o) => ({ reward: o.reward, hello: readFileSync(join(o.dir, "workspace", "hello.txt"), "utf8") }));
}

const CHECKOUT = join(import.meta.dir, "..", "..");

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

  test("the example gitops init writes is played by its policy script and scored by its task's test", async () => {
    const repo = newRepo(true);
    const { sha } = commitWithHook(repo, "start from the example");
    const outcomes = helloOutcomes(join(repo, ".forge", "runs", `example-${sha.slice(0, 12)}`));
    expect(outcomes).toHaveLength(4);
    // The simulator played the script (it wrote hello.txt; without a script it would only echo
    // the prompt) and the verifier scored exactly the content it asks for.
    for (const { reward, hello } of outcomes) {
      expect(["hello world\n", "Hello World\n"]).toContain(hello);
      expect(reward).toBe(hello === "hello world\n" ? 1 : 0);
    }
  }, 120_000);

  test("a clone works after `init .`; no file names the checkout; editing a task's test re-runs the experiments that use it", async () => {
    const origin = newRepo(true);
    // The origin's own hook must not run here.
    rmSync(join(origin, ".git", "hooks", "post-commit"));
    git(origin, ["add", "-A"]);
    git(origin, ["commit", "-q", "-m", "start"]);
    const clone = mkdtempSync(join(tmpdir(), "forge-gitops-clone-"));
    git(clone, ["clone", "-q", origin, "."]);
    git(clone, ["config", "user.email", "test@example.com"]);
    git(clone, ["config", "user.name", "Test"]);
    const { created, hook } = initGitopsRepo(clone, FORGE_CLI);
    expect(created).toEqual([]); // everything was cloned; init only installs the hook
    for (const file of [hook, join(clone, "README.md"), ...git(clone, ["ls-files"]).trim().split("\n").map((f) => join(clone, f))]) {
      expect(readFileSync(file, "utf8")).not.toContain(CHECKOUT);
    }
    // Accept either case: a test change alone must run the experiment again.
    const test = join(clone, "tasks", "hello", "tests", "test.sh");
    writeFileSync(test, readFileSync(test, "utf8").replace('grep -qx "hello world"', 'grep -qix "hello world"'));
    const { sha, output } = commitWithHook(clone, "accept any case");
    expect(output).toContain("experiments/example.yaml @");
    expect(output).toContain("(tasks/hello/tests/test.sh changed)");
    const outcomes = helloOutcomes(join(clone, ".forge", "runs", `example-${sha.slice(0, 12)}`));
    expect(outcomes.map((o) => o.reward)).toEqual([1, 1, 1, 1]);
  }, 120_000);

  test("in the background: a broken experiment is printed by git commit; the valid one runs detached", async () => {
    const repo = newRepo();
    writeFileSync(join(repo, "experiments", "good.yaml"), experiment("good", 1));
    writeFileSync(join(repo, "experiments", "bad.yaml"), experiment("bad", "three"));
    writeFileSync(join(repo, "experiments", "lost.yaml"), experiment("lost", 1).replace(/tasks:\n(.*\n){3}/, "tasks: ../no-such-tasks\n"));
    const { sha, output } = commitWithHook(repo, "three experiments", true);
    expect(output).toMatch(/openforge: experiments\/bad\.yaml:\d+:\d+: spec\.rollouts\.k/);
    expect(output).toContain('openforge: experiments/lost.yaml: spec.environment.tasks: "../no-such-tasks" (no-such-tasks) does not exist');
    expect(output).toContain(`openforge: running experiments/good.yaml @ ${sha.slice(0, 7)} in the background (log: .forge/gitops/hook.log`);
    // The detached run writes its outcome to the log; the test's timeout bounds the wait.
    const log = join(repo, ".forge", "gitops", "hook.log");
    while (!(existsSync(log) && readFileSync(log, "utf8").includes("forge run exited"))) await Bun.sleep(200);
    expect(readFileSync(log, "utf8")).toContain("gitops: experiments/good.yaml: forge run exited 0");
    expect(runDirs(repo)).toEqual([`good-${sha.slice(0, 12)}`]);
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
