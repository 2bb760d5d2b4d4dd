import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadTaskDir } from "./directory.ts";
import { validateTaskToml } from "./task-toml.ts";
import { TaskError } from "./types.ts";

const FILE = "tasks/a/task.toml";

function problem(toml: Record<string, unknown>): string {
  try {
    validateTaskToml(toml, FILE);
  } catch (error) {
    expect(error).toBeInstanceOf(TaskError);
    return (error as Error).message;
  }
  throw new Error("accepted");
}

describe("task.toml", () => {
  test("Harbor's keys are accepted, used ones typed, unused ones kept", () => {
    const toml = {
      version: "1.0",
      metadata: { difficulty: "easy", anything: { nested: true } },
      agent: { timeout_sec: 60 },
      verifier: { timeout_sec: 30.5, env: { A: "1" }, reward: "file", reward_range: [0, 1] },
      environment: { cpus: 1, memory_mb: 512, docker_image: "ubuntu:24.04", gpus: 0, allow_internet: false },
      solution: { env: {} },
      task: { name: "org/a", keywords: ["x"] },
    };
    expect(validateTaskToml(toml, FILE)).toEqual(toml);
    expect(validateTaskToml({}, FILE)).toEqual({});
  });

  test("an unknown key is refused naming the file, the table and the key", () => {
    expect(problem({ verifer: {} })).toBe(`${FILE}: unknown key "verifer" (known: version, schema_version, source, task, metadata, agent, verifier, environment, solution)`);
    expect(problem({ agent: { timeout_secs: 60 } })).toBe(`${FILE}: [agent] unknown key "timeout_secs" (known: timeout_sec, network_mode, allowed_hosts, user)`);
    expect(problem({ environment: { cpu: 1, ram: 2 } })).toStartWith(`${FILE}: [environment] unknown keys "cpu", "ram" (known: build_timeout_sec, docker_image, cpus,`);
  });

  test("a timeout that is no positive number, a section that is no table", () => {
    expect(problem({ agent: { timeout_sec: -1 } })).toBe(`${FILE}: agent.timeout_sec must be a positive number of seconds, got -1`);
    expect(problem({ verifier: { timeout_sec: "30" } })).toBe(`${FILE}: verifier.timeout_sec must be a positive number of seconds, got "30"`);
    expect(problem({ agent: 3 })).toBe(`${FILE}: [agent] must be a table`);
  });

  test("loadTaskDir refuses a task whose task.toml has a typo", () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-task-toml-"));
    try {
      mkdirSync(join(dir, "t", "tests"), { recursive: true });
      writeFileSync(join(dir, "t", "instruction.md"), "do it\n");
      writeFileSync(join(dir, "t", "tests", "test.sh"), 'echo 1 > "$FORGE_LOGS/reward.txt"\n');
      writeFileSync(join(dir, "t", "task.toml"), "[verifier]\ntimeout = 30\n");
      expect(() => loadTaskDir(join(dir, "t"))).toThrow(`${join(dir, "t", "task.toml")}: [verifier] unknown key "timeout"`);
      writeFileSync(join(dir, "t", "task.toml"), "[verifier]\ntimeout_sec = 30\n");
      expect(loadTaskDir(join(dir, "t")).verifierTimeoutSeconds).toBe(30);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
