/**
 * The CLI's usage errors as a new user meets them: a mistake in how a command was called (a
 * flag, a file it names, a field of the experiment) exits 2 with one clean message naming the
 * flag or the file and field; failures of the run itself exit 1.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-usage-"));
  made.push(dir);
  return dir;
}

function forge(...argv: string[]) {
  const run = Bun.spawnSync(["bun", "bin/forge.ts", ...argv], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  return { code: run.exitCode, stdout: run.stdout.toString(), stderr: run.stderr.toString() };
}

const experiment = (spec: { tasks?: string; script?: string } = {}) => `apiVersion: openforge.dev/v1
kind: Experiment
metadata:
  name: usage
spec:
  policy:
    model: forge-sim/qwen3-sim
${spec.script ? `    simulator:\n      script: ${spec.script}\n` : ""}  harness:
    name: forge-react
  environment:
    tasks: ${spec.tasks ?? "tasks"}
  rollouts:
    k: 1
    sandbox: none
`;

/** A directory with experiment.yaml and one valid task under tasks/hello. */
function project(spec: { tasks?: string; script?: string; taskToml?: string } = {}): string {
  const dir = tempDir();
  writeFileSync(join(dir, "experiment.yaml"), experiment(spec));
  mkdirSync(join(dir, "tasks", "hello", "tests"), { recursive: true });
  writeFileSync(join(dir, "tasks", "hello", "instruction.md"), "Create hello.txt.\n");
  writeFileSync(join(dir, "tasks", "hello", "tests", "test.sh"), "test -f hello.txt\n");
  if (spec.taskToml !== undefined) writeFileSync(join(dir, "tasks", "hello", "task.toml"), spec.taskToml);
  return dir;
}

describe("usage errors exit 2 and name what to fix", () => {
  test("an unknown option: one clean line and the usage, not parseArgs's text", () => {
    const run = forge("run", "--frobnicate");
    expect(run.code).toBe(2);
    expect(run.stderr.split("\n")[0]).toBe("forge run: unknown option --frobnicate");
    expect(run.stderr).toContain("usage: forge run EXPERIMENT");
    expect(run.stderr).not.toContain("To specify a positional argument");
    const value = forge("export", "--data");
    expect(value.code).toBe(2);
    expect(value.stderr.split("\n")[0]).toBe("forge export: option --data needs a value");
  });

  test("forge proxy --upstream that is not an http(s) URL", () => {
    for (const bad of ["notaurl", "ftp://example.com/v1"]) {
      const run = forge("proxy", "--upstream", bad, "--data", join(tmpdir(), "forge-usage-unused"));
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`forge proxy: --upstream: upstream "${bad}"`);
    }
  });

  test("forge policy-sim --script with a missing or invalid file", () => {
    const missing = forge("policy-sim", "--script", "/nonexistent/policy.yaml");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("forge policy-sim: --script /nonexistent/policy.yaml: cannot read the policy script");
    const dir = tempDir();
    writeFileSync(join(dir, "bad.yaml"), "version: 2\n");
    const invalid = forge("policy-sim", "--script", join(dir, "bad.yaml"));
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain(`${join(dir, "bad.yaml")}:1:10: version`);
  });

  test("forge run with a missing or invalid simulator script names the experiment field", () => {
    const missing = project({ script: "nowhere.yaml" });
    const run = forge("run", join(missing, "experiment.yaml"), "--quiet");
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`forge run: ${join(missing, "experiment.yaml")}: spec.policy.simulator.script: ${join(missing, "nowhere.yaml")}: cannot read`);
    const invalid = project({ script: "policy.yaml" });
    writeFileSync(join(invalid, "policy.yaml"), "tasks: 3\n");
    const bad = forge("run", join(invalid, "experiment.yaml"), "--quiet");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("spec.policy.simulator.script:");
    expect(bad.stderr).toContain(`${join(invalid, "policy.yaml")}:1:8: tasks`);
  });

  test("forge run with a missing tasks folder names the experiment file and spec.environment.tasks", () => {
    const dir = project({ tasks: "no-such-tasks" });
    const run = forge("run", join(dir, "experiment.yaml"), "--quiet");
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`forge run: ${join(dir, "experiment.yaml")}: spec.environment.tasks: "no-such-tasks" (${join(dir, "no-such-tasks")}) does not exist`);
  });

  test("forge run with an unknown key in a task.toml names the file and the key", () => {
    const dir = project({ taskToml: "[agent]\ntimeout_secs = 60\n" });
    const run = forge("run", join(dir, "experiment.yaml"), "--quiet");
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${join(dir, "tasks", "hello", "task.toml")}: [agent] unknown key "timeout_secs" (known: timeout_sec,`);
  });

  test("forge submit / watch --kubeconfig naming no file", () => {
    const submit = forge("submit", "examples/quickstart/experiment.yaml", "--kubeconfig", "/nonexistent/kubeconfig");
    expect(submit.code).toBe(2);
    expect(submit.stderr.trim()).toBe("forge submit: --kubeconfig /nonexistent/kubeconfig: no such file");
    const watch = forge("watch", "wf-1", "--kubeconfig", "/nonexistent/kubeconfig");
    expect(watch.code).toBe(2);
    expect(watch.stderr).toContain("forge watch: --kubeconfig /nonexistent/kubeconfig");
  });
});

test("forge gitops SUB --help prints that subcommand's usage, not the group's", () => {
  for (const [sub, line, flag] of [
    ["init", "usage: forge gitops init DIR", "git config openforge.cli"],
    ["render", "usage: forge gitops render [--repo DIR] [--check]", "--check"],
    ["hook", "usage: forge gitops hook", "--background"],
    ["watch", "usage: forge gitops watch", "--interval-seconds N"],
  ] as const) {
    const run = forge("gitops", sub, "--help");
    expect(run.code).toBe(0);
    expect(run.stdout.split("\n")[0]).toStartWith(line);
    expect(run.stdout).toContain(flag);
    expect(run.stdout).not.toContain("usage: forge gitops SUBCOMMAND");
  }
  const unknown = forge("gitops", "hook", "--frobnicate");
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toStartWith("forge gitops hook: unknown option --frobnicate\n\nusage: forge gitops hook");
});

test("bun run forge prints no `$ …` script line (the HTTP request limit is set without the noise)", () => {
  const run = Bun.spawnSync(["bun", "run", "forge", "--help"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  expect(run.exitCode).toBe(0);
  expect(run.stderr.toString()).toBe("");
  expect(run.stdout.toString()).toStartWith("usage: forge COMMAND");
  // The script still sets the limit for the process it starts.
  const script = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts.forge!;
  expect(script).toContain("BUN_CONFIG_MAX_HTTP_REQUESTS=");
});

test("the README's test command is the one CI runs, and it gives bun test a --timeout (bunfig's is ignored)", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  expect(readme).toContain("\nbun install && bun run test\n");
  const ci = readFileSync(join(ROOT, ".ci", "run"), "utf8").trim().split("\n");
  expect(ci.at(-1)).toBe("bun run test");
  expect(ci.filter((line) => /^\s*bun test\b/.test(line))).toEqual([]);
  const scripts = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
  // It builds (or, by its stamp, checks) the Python reference environment first (python/build-env.sh).
  expect(scripts.test).toMatch(/^bash python\/build-env\.sh && bun test --timeout \d{5,}$/);
  // Bun 1.4.5 does not apply bunfig's [test] timeout; one left there would mislead.
  const bunfig = Bun.TOML.parse(readFileSync(join(ROOT, "bunfig.toml"), "utf8")) as { test?: { timeout?: number } };
  expect(bunfig.test?.timeout).toBeUndefined();
});

test("Bun is pinned where users install it: README, packageManager, engines and .ci/run name one version", () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { packageManager: string; engines: { bun: string }; bin: Record<string, string> };
  const version = /^bun@(\d+\.\d+\.\d+)$/.exec(pkg.packageManager)?.[1];
  expect(version).toBeDefined();
  expect(pkg.engines.bun).toBe(version!);
  expect(Bun.version).toBe(version!);
  expect(readFileSync(join(ROOT, "README.md"), "utf8")).toContain(`npm install -g bun@${version}`);
  expect(readFileSync(join(ROOT, ".ci", "run"), "utf8")).toContain(`npm install -g bun@${version}`);
  expect(pkg.bin).toEqual({ forge: "bin/forge" });
});

test("forge by name (package.json bin, linked onto PATH by `bun link`): the CLI, with Bun's request limit set before Bun starts", () => {
  const dir = mkdtempSync(join(tmpdir(), "forge-bin-"));
  try {
    // Linked as `bun link` links it: a symlink elsewhere on PATH.
    mkdirSync(join(dir, "bin"));
    symlinkSync(join(ROOT, "bin", "forge"), join(dir, "bin", "forge"));
    const real = Bun.spawnSync([join(dir, "bin", "forge"), "--help"], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    expect(real.exitCode).toBe(0);
    expect(real.stdout.toString()).toStartWith("usage: forge COMMAND");
    // What the wrapper hands Bun: a `bun` first on PATH that prints its environment and arguments.
    mkdirSync(join(dir, "spy"));
    writeFileSync(join(dir, "spy", "bun"), '#!/bin/sh\necho "limit=$BUN_CONFIG_MAX_HTTP_REQUESTS"; for a in "$@"; do echo "arg=$a"; done\n');
    chmodSync(join(dir, "spy", "bun"), 0o755);
    const env: Record<string, string | undefined> = { ...process.env, PATH: `${join(dir, "spy")}:${process.env.PATH}` };
    delete env.BUN_CONFIG_MAX_HTTP_REQUESTS;
    const spied = (extra: Record<string, string>) =>
      Bun.spawnSync([join(dir, "bin", "forge"), "run", "a b.yaml"], { cwd: dir, env: { ...env, ...extra }, stdout: "pipe" }).stdout.toString().trim().split("\n");
    expect(spied({})).toEqual(["limit=4096", `arg=${join(ROOT, "bin", "forge.ts")}`, "arg=run", "arg=a b.yaml"]);
    expect(spied({ BUN_CONFIG_MAX_HTTP_REQUESTS: "8192" })[0]).toBe("limit=8192");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
