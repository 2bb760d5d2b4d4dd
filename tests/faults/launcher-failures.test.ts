/**
 * Failures of the machine, not the policy, are infra_error (left out of pass@k, counted), never
 * `failed`: a harness binary that is missing or not executable (exit 127 / 126 from the
 * launcher), sandboxed or not. Tasks whose ids collide once made safe are refused before any
 * rollout is registered.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { runLocal, type LocalRunOptions } from "../../workflows/local/executor.ts";
import { findBwrap } from "../../workflows/local/sandbox.ts";
import { TaskError, taskFromSpec } from "../../workflows/tasks/index.ts";

const ADMIN = "launcher-admin";
let root: string;
let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let runs = 0;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "forge-launcher-"));
  sim = await startPolicySimulator({ seed: 1 });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: join(root, "data"), adminToken: ADMIN, mode: "train", healthIntervalMs: 0 });
});
afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
  rmSync(root, { recursive: true, force: true });
});

// harness.sh is written without the executable bit (task files are plain files).
const task = taskFromSpec({ id: "t", instruction: "x", files: { "harness.sh": "#!/bin/sh\nexit 0\n" }, metadata: {}, test: "true" }, "t");
const run = (options: Partial<LocalRunOptions>) =>
  runLocal({
    run: `launch${runs++}`,
    experiment: "launcher",
    tasks: [task],
    k: 1,
    harness: "command",
    model: "m",
    proxyUrl: proxy.url,
    adminToken: ADMIN,
    dataDir: join(root, "data"),
    parallelism: 1,
    timeoutSeconds: 30,
    graceMs: 300,
    quiet: true,
    allowRootUnsandboxed: true,
    ...options,
  });

async function recordedStatus(id: string): Promise<string> {
  const info = (await (await fetch(`${proxy.url}/control/rollouts/${id}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as { result: { status: string } };
  return info.result.status;
}

for (const sandbox of ["bwrap", "none"] as const) {
  describe.skipIf(sandbox === "bwrap" && !findBwrap())(`launcher failures (sandbox ${sandbox})`, () => {
    test("a missing harness binary and a non-executable one are infra_error, and the verifier is not run", async () => {
      const cases = [
        { command: ["no-such-harness-binary", "--run"], error: /cannot start no-such-harness-binary|launcher failed with exit 127/ },
        { command: ["bash", "-c", "exec no-such-harness-binary"], error: /launcher failed with exit 127 \(command not found\) running bash/ },
        { command: ["bash", "-c", "exec ./harness.sh"], error: /launcher failed with exit 126 \(command found but not executable\)/ },
      ];
      for (const { command, error } of cases) {
        const { outcomes } = await run({ sandbox, harnessCommand: command });
        expect(outcomes[0]).toMatchObject({ status: "infra_error", reward: 0, verifier_output: "" });
        expect(outcomes[0]!.error).toMatch(error);
        expect(await recordedStatus(outcomes[0]!.rollout_id)).toBe("ROLLOUT_STATUS_INFRA_ERROR");
      }
    }, 60_000);
  });
}

test("task ids that collide once made safe are refused, naming both, before anything is registered", async () => {
  const tasks = [
    taskFromSpec({ id: "a/b", instruction: "x", files: {}, metadata: {}, test: "true" }, "tasks.jsonl:1"),
    taskFromSpec({ id: "a_b", instruction: "y", files: {}, metadata: {}, test: "true" }, "tasks.jsonl:2"),
  ];
  const attempt = run({ tasks, sandbox: "none", run: "collide" });
  await expect(attempt).rejects.toThrow(TaskError);
  await expect(attempt).rejects.toThrow('task ids "a/b" and "a_b" both become "a_b" in rollout ids (tasks.jsonl:1 and tasks.jsonl:2): rename one');
  const unknown = await fetch(`${proxy.url}/control/rollouts/collide.i0.a_b.0`, { headers: { authorization: `Bearer ${ADMIN}` } });
  expect(unknown.status).toBe(404);
});
