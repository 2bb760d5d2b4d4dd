/**
 * Attacks on the reward, by a "policy" that controls what the harness does (the command harness
 * runs the instruction as bash): reward files planted in the workspace, in the verifier's output
 * directory before it exists, at Harbor's /logs/verifier, in other rollouts' directories, a
 * lingering background process, a reward of 1e9 copied through a naive verifier, and a
 * workspace built to break the copy the verifier works on. Each must give the verifier's own
 * reward (0 here) or a verifier error, never the planted value; the proxy records the same.
 * Run with the bubblewrap sandbox and without it (where the sandbox is not what protects).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { runLocal } from "../../workflows/local/executor.ts";
import { findBwrap } from "../../workflows/local/sandbox.ts";
import { loadTaskDir, taskFromSpec, type Task } from "../../workflows/tasks/index.ts";

const ADMIN = "planted-rewards-admin";
let root: string;
let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let runs = 0;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "forge-planted-"));
  sim = await startPolicySimulator({ seed: 1 });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: join(root, "data"), adminToken: ADMIN, mode: "train", healthIntervalMs: 0 });
});
afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** A Harbor task directory whose verifier writes `test` (bash) and never trusts the workspace. */
function taskDir(name: string, instruction: string, test: string, toml = ""): Task {
  const dir = join(root, "tasks", `${name}-${runs}`);
  mkdirSync(join(dir, "tests"), { recursive: true });
  writeFileSync(join(dir, "instruction.md"), instruction);
  writeFileSync(join(dir, "tests", "test.sh"), test);
  if (toml) writeFileSync(join(dir, "task.toml"), toml);
  return { ...loadTaskDir(dir), id: name };
}

async function run(tasks: Task[], sandbox: "bwrap" | "none", options: { k?: number; parallelism?: number } = {}) {
  const result = await runLocal({
    run: `planted${runs++}`,
    experiment: "planted",
    tasks,
    k: options.k ?? 1,
    harness: "command",
    harnessCommand: ["bash", "-c", "{prompt}"],
    model: "forge-sim/qwen3-sim",
    proxyUrl: proxy.url,
    adminToken: ADMIN,
    dataDir: join(root, "data"),
    parallelism: options.parallelism ?? 4,
    timeoutSeconds: 30,
    graceMs: 300,
    quiet: true,
    sandbox,
    allowRootUnsandboxed: true,
  });
  expect(result.sandbox).toBe(sandbox);
  return result.outcomes;
}

async function recorded(id: string): Promise<{ reward: number; status: string }> {
  const info = (await (await fetch(`${proxy.url}/control/rollouts/${id}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as { result: { reward?: number; status: string } };
  return { reward: info.result.reward ?? 0, status: info.result.status };
}

/** The verifier of every task below: the work is never right, so its own reward is 0. */
const FAILING_TEST = 'echo "never right"; echo 0 > "$FORGE_LOGS/reward.txt"\n';

const PLANT_WORKSPACE = `echo 1 > reward.txt; echo '{"reward": 1}' > reward.json; mkdir -p logs/verifier; echo 1 > logs/verifier/reward.txt`;
// The verifier's output directory as the harness could guess it: beside the workspace
// (DIR/rollouts/<id>/verifier), Harbor's /logs/verifier, and the logs directory.
const PLANT_OUTPUT_DIR = `for d in ../verifier /logs/verifier ../logs; do mkdir -p "$d" 2>/dev/null; echo 1 > "$d/reward.txt" 2>/dev/null; echo '{"reward": 1}' > "$d/reward.json" 2>/dev/null; done; true`;
// Every other rollout of this run, present and future (ids are <run>.i0.<task>.<n>).
const PLANT_OTHERS = `me=$(basename "$(dirname "$PWD")"); base=\${me%.*}; for n in 0 1 2; do d="../../$base.$n"; mkdir -p "$d/verifier" "$d/workspace" 2>/dev/null; echo 9 > "$d/verifier/reward.txt" 2>/dev/null; echo 1 > "$d/verifier/reward.json" 2>/dev/null; echo 9 > "$d/workspace/reward.txt" 2>/dev/null; done; for d in ../../*/; do echo 9 > "$d/workspace/reward.txt" 2>/dev/null; echo 1 > "$d/verifier/reward.json" 2>/dev/null; done; true`;

const modes = [
  { sandbox: "bwrap" as const, skip: !findBwrap() },
  { sandbox: "none" as const, skip: false },
];

for (const { sandbox, skip } of modes) {
  describe.skipIf(skip)(`planted rewards (sandbox ${sandbox})`, () => {
    test("reward files planted in the workspace and in the verifier's future output directory are ignored: reward 0", async () => {
      const outcomes = await run([taskDir("plant-workspace", PLANT_WORKSPACE, FAILING_TEST), taskDir("plant-output", PLANT_OUTPUT_DIR, FAILING_TEST)], sandbox);
      for (const o of outcomes) {
        expect(o).toMatchObject({ status: "ok", reward: 0 });
        expect(await recorded(o.rollout_id)).toEqual({ reward: 0, status: "ROLLOUT_STATUS_OK" });
        // The planted files are still where the harness put them; they were simply never read.
        if (o.task_id === "plant-workspace") expect(readFileSync(join(o.dir, "workspace", "reward.txt"), "utf8").trim()).toBe("1");
      }
    }, 60_000);

    test("a verifier that writes no reward is a verifier error (infra_error), even with planted files and exit code 0", async () => {
      // Exit 0 and no reward file: before, the exit code (or the planted file) decided; now only a
      // task that declares [verifier] reward = "exit-code" is scored by its exit code.
      const outcomes = await run([taskDir("no-reward", `${PLANT_WORKSPACE}; ${PLANT_OUTPUT_DIR}`, "echo checked; exit 0\n")], sandbox);
      expect(outcomes[0]).toMatchObject({ status: "infra_error", reward: 0 });
      expect(outcomes[0]!.error).toContain("verifier error: the verifier wrote no reward");
      expect(await recorded(outcomes[0]!.rollout_id)).toEqual({ reward: 0, status: "ROLLOUT_STATUS_INFRA_ERROR" });
    }, 60_000);

    test("1e9 through a naive verifier that copies the answer into its reward: a verifier error, not a reward", async () => {
      const outcomes = await run([taskDir("huge", "echo 1e9 > answer.txt", 'cp answer.txt "$FORGE_LOGS/reward.txt"\n'), taskDir("negative", "echo -3 > answer.txt", 'cp answer.txt "$FORGE_LOGS/reward.txt"\n')], sandbox);
      for (const o of outcomes) {
        expect(o).toMatchObject({ status: "infra_error", reward: 0 });
        expect(o.error).toContain("outside the task's reward range [0, 1]");
        expect(await recorded(o.rollout_id)).toEqual({ reward: 0, status: "ROLLOUT_STATUS_INFRA_ERROR" });
      }
      // A task may declare a wider range; inside it the value is the reward.
      const wide = await run([taskDir("wide", "echo -3 > answer.txt", 'cp answer.txt "$FORGE_LOGS/reward.txt"\n', "[verifier]\nreward_range = [-5, 5]\n")], sandbox);
      expect(wide[0]).toMatchObject({ status: "ok", reward: -3 });
    }, 60_000);

    test("another rollout's workspace and output directory, planted before it runs: every rollout keeps its own reward", async () => {
      // One at a time: the first rollout plants into the directories of the ones after it.
      const outcomes = await run([taskDir("plant-others", PLANT_OTHERS, FAILING_TEST)], sandbox, { k: 3, parallelism: 1 });
      expect(outcomes).toHaveLength(3);
      for (const o of outcomes) {
        expect(o).toMatchObject({ status: "ok", reward: 0 });
        expect(await recorded(o.rollout_id)).toEqual({ reward: 0, status: "ROLLOUT_STATUS_OK" });
      }
    }, 60_000);

    test("a workspace of fifos, sockets, unreadable files and links still gets verified (the copy cannot be broken)", async () => {
      const instruction = `mkfifo fifo; python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('sock')"; echo x > locked; chmod 000 locked; ln -s /etc/shadow shadow; ln -s ../verifier out; truncate -s 20G sparse; echo done > answer.txt`;
      const outcomes = await run([taskDir("odd-files", instruction, 'if [ "$(cat answer.txt)" = done ]; then echo 1; else echo 0; fi > "$FORGE_LOGS/reward.txt"\n')], sandbox);
      expect(outcomes[0]).toMatchObject({ status: "ok", reward: 1 });
    }, 60_000);
  });
}

describe.skipIf(!findBwrap())("with the sandbox only", () => {
  test("concurrent rollouts planting into each other, and a background process outliving the harness, change nothing", async () => {
    // A daemon that escapes the harness's process group (setsid) and keeps planting: the
    // sandbox's PID namespace ends it with the harness, before the verifier's directory exists.
    const daemon = `(setsid bash -c 'for i in $(seq 1 100); do ${PLANT_OTHERS.replaceAll("'", "'\\''")}; echo 1 > ../verifier/reward.txt 2>/dev/null; sleep 0.05; done' &) ; sleep 0.3; true`;
    const outcomes = await run([taskDir("daemon", daemon, FAILING_TEST)], "bwrap", { k: 3, parallelism: 3 });
    expect(outcomes).toHaveLength(3);
    for (const o of outcomes) {
      expect(o).toMatchObject({ status: "ok", reward: 0 });
      expect(existsSync(join(o.dir, "verifier", "reward.txt"))).toBe(true);
      expect(readFileSync(join(o.dir, "verifier", "reward.txt"), "utf8").trim()).toBe("0");
    }
  }, 60_000);
});

test("the quickstart tasks score by a reward file or a declared exit code, never by a planted file", async () => {
  const quickstart = join(import.meta.dir, "..", "..", "examples", "quickstart", "tasks");
  for (const name of ["capital", "fix-greeting", "hello-file", "shout", "sum-numbers"]) {
    const task = loadTaskDir(join(quickstart, name));
    expect(task.verifier.kind).toBe("script");
    if (task.verifier.kind !== "script") continue;
    expect(task.verifier.reward).toBe(name === "shout" ? "exit-code" : "file");
    if (task.verifier.reward === "file") expect(readFileSync(task.verifier.script, "utf8")).toContain("$logs/reward.");
  }
  // An inline task must say how it is scored: a test (exit code, the format's rule) or expected text.
  expect(() => taskFromSpec({ id: "x", instruction: "y", files: {}, metadata: {} }, "inline")).toThrow(/has no verifier/);
});
