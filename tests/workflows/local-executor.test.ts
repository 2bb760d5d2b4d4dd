/**
 * The local executor end to end: real proxy, the policy simulator as the model, real harness
 * processes (forge-react and bash via the command harness), real verifiers. Faults: a hang
 * (timeout, whole group killed), a crash, failing and hanging verifiers, reward files, Ctrl-C,
 * bad task directories, JSONL tasks, the sandbox's network and filesystem view.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { runLocal, type LocalRunOptions } from "../../workflows/local/executor.ts";
import { findBwrap } from "../../workflows/local/sandbox.ts";
import { loadJsonlTasks, loadTaskDir, loadTasks, TaskError, taskFromSpec, type Task } from "../../workflows/tasks/index.ts";

const ADMIN = "test-admin-token";
const QUICKSTART = join(import.meta.dir, "..", "..", "examples", "quickstart");
let root: string;
let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let dataDir: string;
let runs = 0;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "forge-local-"));
  dataDir = join(root, "data");
  sim = await startPolicySimulator({ seed: 7, script: join(QUICKSTART, "..", "policies", "quickstart.yaml") });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir, adminToken: ADMIN, mode: "train", healthIntervalMs: 0 });
});

afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function rolloutInfo(id: string): Promise<{ rollout: Record<string, unknown>; result?: Record<string, any>; calls: number; token_status_counts: Record<string, number> }> {
  const response = await fetch(`${proxy.url}/control/rollouts/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  expect(response.status).toBe(200);
  return (await response.json()) as never;
}

function run(options: Partial<LocalRunOptions> & { tasks: Task[] }) {
  return runLocal({
    run: `t${runs++}`,
    experiment: "local-test",
    k: 1,
    harness: "command",
    harnessCommand: ["bash", "-c", "{prompt}"],
    model: "forge-sim/qwen3-sim",
    proxyUrl: proxy.url,
    adminToken: ADMIN,
    dataDir,
    parallelism: 4,
    timeoutSeconds: 30,
    graceMs: 300,
    quiet: true,
    // These tests run task code of their own unsandboxed on purpose (sandbox: "none"), as root here.
    allowRootUnsandboxed: true,
    ...options,
  });
}

/** A task directory in the Harbor layout, built in the test. */
function taskDir(name: string, parts: { instruction?: string; toml?: string; env?: Record<string, string>; test?: string }): string {
  const dir = join(root, "tasks", name);
  mkdirSync(dir, { recursive: true });
  if (parts.instruction !== undefined) writeFileSync(join(dir, "instruction.md"), parts.instruction);
  if (parts.toml !== undefined) writeFileSync(join(dir, "task.toml"), parts.toml);
  for (const [path, content] of Object.entries(parts.env ?? {})) {
    mkdirSync(join(dir, "environment"), { recursive: true });
    writeFileSync(join(dir, "environment", path), content);
  }
  if (parts.test !== undefined) {
    mkdirSync(join(dir, "tests"), { recursive: true });
    writeFileSync(join(dir, "tests", "test.sh"), parts.test);
  }
  return dir;
}

/** Running (a zombie waiting for a container's PID 1 to reap it is dead). */
const alive = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
};

describe("local executor", () => {
  test("a small quickstart: forge-react against the simulator, real verifiers, complete records", async () => {
    const tasks = loadTasks(join(QUICKSTART, "tasks")).filter((t) => ["hello-file", "sum-numbers", "fix-greeting"].includes(t.id));
    expect(tasks.map((t) => t.id)).toEqual(["fix-greeting", "hello-file", "sum-numbers"]);
    const { outcomes } = await run({ tasks, k: 2, harness: "forge-react", harnessCommand: undefined, harnessOptions: { maxTurns: 8 } });
    expect(outcomes).toHaveLength(6);
    for (const o of outcomes) {
      expect(o.status).toBe("ok");
      const ws = join(o.dir, "workspace");
      // The reward is what the task's own check says about the workspace, recomputed here.
      const right =
        o.task_id === "hello-file"
          ? existsSync(join(ws, "hello.txt")) && readFileSync(join(ws, "hello.txt"), "utf8") === "Hello, OpenForge!\n"
          : o.task_id === "sum-numbers"
            ? existsSync(join(ws, "sum.txt")) && readFileSync(join(ws, "sum.txt"), "utf8").trim() === "100"
            : Bun.spawnSync(["bash", "greet.sh", "World"], { cwd: ws }).stdout.toString() === "Hello, World!\n";
      expect(o.reward).toBe(right ? 1 : 0);
      expect(existsSync(join(ws, "Dockerfile"))).toBe(false);
      expect(existsSync(join(ws, "test.sh"))).toBe(false); // the tests are never in the workspace
      expect(readFileSync(join(o.dir, "logs", "harness.stderr"), "utf8")).toContain("forge-react: turn 1");
      const info = await rolloutInfo(o.rollout_id);
      expect(info.rollout).toMatchObject({ rollout_id: o.rollout_id, experiment: "local-test", task_id: o.task_id, harness: "forge-react" });
      expect(info.result?.reward ?? 0).toBe(o.reward);
      expect(info.result?.status).toBe("ROLLOUT_STATUS_OK");
      expect(info.calls).toBeGreaterThanOrEqual(2);
      expect(info.token_status_counts.COMPLETE).toBe(info.calls);
    }
  }, 60_000);

  test("hang → timeout with the whole group killed; crash → failed; verifier verdicts; others unaffected", async () => {
    const tasks = [
      taskFromSpec({ id: "hang", instruction: "sleep 300 & echo $! > bg.pid; sleep 300", files: {}, metadata: {}, test: "true" }, "t"),
      taskFromSpec({ id: "crash", instruction: "echo partial > out.txt; exit 3", files: {}, metadata: {}, test: "grep -q partial out.txt" }, "t"),
      taskFromSpec({ id: "wrong", instruction: "echo wrong > answer.txt", files: {}, metadata: {}, test: '[ "$(cat answer.txt)" = right ]' }, "t"),
      taskFromSpec({ id: "right", instruction: "echo right > answer.txt", files: {}, metadata: {}, test: '[ "$(cat answer.txt)" = right ]' }, "t"),
      loadTaskDir(taskDir("verifier-hangs", { instruction: "true", toml: "[verifier]\ntimeout_sec = 1\n", test: "sleep 300\n" })),
      loadTaskDir(taskDir("half", { instruction: "cat seed.txt > copy.txt", env: { "seed.txt": "x\n" }, test: 'cmp seed.txt copy.txt && echo \'{"reward": 0.5}\' > "$FORGE_LOGS/reward.json"\n' })),
      loadTaskDir(taskDir("bad-reward", { instruction: "true", test: 'echo lots > "$FORGE_LOGS/reward.txt"\n' })),
    ];
    const started = performance.now();
    const { outcomes } = await run({ tasks, timeoutSeconds: 1, sandbox: "none" });
    const by = Object.fromEntries(outcomes.map((o) => [o.task_id, o]));
    expect(performance.now() - started).toBeLessThan(10_000);

    expect(by.hang!.status).toBe("timeout");
    expect(by.hang!.error).toContain("killed after 1 s");
    const bg = Number(readFileSync(join(by.hang!.dir, "workspace", "bg.pid"), "utf8"));
    expect(alive(bg)).toBe(false); // the background child went with its group

    expect(by.crash!.status).toBe("failed");
    expect(by.crash!.harness_exit_code).toBe(3);
    expect(by.crash!.reward).toBe(1); // the verifier still ran: the work was done before the crash

    expect(by.wrong!).toMatchObject({ status: "ok", reward: 0 });
    expect(by.right!).toMatchObject({ status: "ok", reward: 1 });
    expect(by["verifier-hangs"]!).toMatchObject({ status: "timeout", reward: 0 });
    expect(by.half!).toMatchObject({ status: "ok", reward: 0.5 });
    // A malformed reward is a verifier error: no reward is recorded for it, and it is not scored.
    expect(by["bad-reward"]!).toMatchObject({ status: "infra_error", reward: 0 });
    expect(by["bad-reward"]!.error).toContain("reward.txt: expected a finite number");

    for (const o of outcomes) {
      const info = await rolloutInfo(o.rollout_id);
      expect(info.result?.status).toBe(`ROLLOUT_STATUS_${o.status.toUpperCase()}`);
      expect(JSON.parse(readFileSync(join(o.dir, "result.json"), "utf8")).status).toBe(o.status);
    }
  }, 30_000);

  test("abort (Ctrl-C): running groups are killed and finished as infra_error; unstarted rollouts are not registered", async () => {
    const controller = new AbortController();
    const tasks = [taskFromSpec({ id: "slow", instruction: "sleep 300 & echo $! > bg.pid; sleep 300", files: {}, metadata: {}, test: "true" }, "t")];
    setTimeout(() => controller.abort(), 700);
    const { outcomes, aborted } = await run({ tasks, k: 3, parallelism: 2, signal: controller.signal, sandbox: "none" });
    expect(aborted).toBe(true);
    expect(outcomes).toHaveLength(2);
    for (const o of outcomes) {
      expect(o.status).toBe("infra_error");
      expect(o.error).toContain("interrupted");
      expect(alive(Number(readFileSync(join(o.dir, "workspace", "bg.pid"), "utf8")))).toBe(false);
      expect((await rolloutInfo(o.rollout_id)).result?.status).toBe("ROLLOUT_STATUS_INFRA_ERROR");
    }
  }, 20_000);

  test("JSONL tasks: verify scripts, expected answers, inline files", async () => {
    const file = join(root, "tasks.jsonl");
    writeFileSync(
      file,
      [
        JSON.stringify({ id: "say-paris", instruction: "echo The capital is Paris", expected: "Paris" }),
        JSON.stringify({ id: "say-lyon", instruction: "echo Lyon", expected: "Paris" }),
        "",
        JSON.stringify({ id: "copy", instruction: "cat in.txt > out.txt", files: { "in.txt": "data\n" }, verify: "cmp in.txt out.txt" }),
      ].join("\n"),
    );
    const tasks = loadJsonlTasks(file);
    expect(tasks.map((t) => t.verifier.kind)).toEqual(["expected", "expected", "inline"]);
    const { outcomes } = await run({ tasks });
    expect(Object.fromEntries(outcomes.map((o) => [o.task_id, o.reward]))).toEqual({ "say-paris": 1, "say-lyon": 0, copy: 1 });
  }, 20_000);

  test("bad tasks: errors name the file and what is missing", () => {
    expect(() => loadTaskDir(taskDir("no-instruction", { test: "true" }))).toThrow(/no-instruction: instruction.md is missing/);
    const noScript = taskDir("no-script", { instruction: "x" });
    mkdirSync(join(noScript, "tests"));
    expect(() => loadTaskDir(noScript)).toThrow(/tests\/test.sh is missing/);
    expect(() => loadTaskDir(taskDir("bad-toml", { instruction: "x", toml: "[agent\ntimeout_sec = 1" }))).toThrow(/bad-toml\/task.toml: not valid TOML/);
    expect(() => loadTaskDir(taskDir("bad-timeout", { instruction: "x", toml: '[agent]\ntimeout_sec = "soon"\n' }))).toThrow(/task.toml: agent.timeout_sec must be a positive number/);
    expect(() => loadTasks(join(root, "nope"))).toThrow(TaskError);
    const jsonl = (name: string, text: string) => {
      writeFileSync(join(root, name), text);
      return join(root, name);
    };
    expect(() => loadJsonlTasks(jsonl("a.jsonl", '{"id": "a", "instruction": "x", "expected": "y"}\n{oops'))).toThrow(/a.jsonl:2: not JSON/);
    expect(() => loadJsonlTasks(jsonl("b.jsonl", '{"instruction": "x"}'))).toThrow(/b.jsonl:1: id:/);
    expect(() => loadJsonlTasks(jsonl("c.jsonl", '{"id": "a", "instruction": "x", "expected": "y"}\n{"id": "a", "instruction": "y", "expected": "y"}'))).toThrow(/c.jsonl:2: duplicate task id "a"/);
    expect(() => loadJsonlTasks(jsonl("d.jsonl", '{"id": "a", "instruction": "x", "verfy": "true"}'))).toThrow(/d.jsonl:1/);
    // A task without a verifier is refused, never scored by the harness's exit code.
    expect(() => loadJsonlTasks(jsonl("e.jsonl", '{"id": "a", "instruction": "x"}'))).toThrow(/e.jsonl:1: task "a" has no verifier/);
    expect(() => loadTaskDir(taskDir("no-tests", { instruction: "x" }))).toThrow(/no-tests: no verifier: add tests\/test.sh/);
    expect(() => loadTaskDir(taskDir("bad-source", { instruction: "x", test: "true", toml: '[verifier]\nreward = "exit"\n' }))).toThrow(/verifier.reward must be "file"/);
    expect(() => loadTaskDir(taskDir("bad-range", { instruction: "x", test: "true", toml: "[verifier]\nreward_range = [1, 0]\n" }))).toThrow(/verifier.reward_range must be \[min, max\]/);
    expect(() => loadTaskDir(taskDir("narrow", { instruction: "x", test: "true", toml: '[verifier]\nreward = "exit-code"\nreward_range = [0.5, 1]\n' }))).toThrow(/an exit-code reward is 0 or 1/);
    // Ids stay unique after they are made safe for rollout ids and paths.
    expect(() => loadJsonlTasks(jsonl("f.jsonl", '{"id": "a/b", "instruction": "x", "expected": "y"}\n{"id": "a_b", "instruction": "y", "expected": "y"}'))).toThrow(
      /task ids "a\/b" and "a_b" both become "a_b" in rollout ids \(.*f.jsonl:1 and .*f.jsonl:2\): rename one/,
    );
  });

  test.skipIf(!findBwrap())("bwrap sandbox: the proxy is reachable, other ports and files outside the workspace are not", async () => {
    const secret = join(root, "secret.txt");
    writeFileSync(secret, "top secret");
    const other: Server = createServer((socket) => socket.end("hello from the host\n"));
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", () => resolve()));
    const port = (other.address() as { port: number }).port;
    const probe = `
      const out = [];
      const r = await fetch(process.env.OPENAI_BASE_URL + "/chat/completions", { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer " + process.env.OPENAI_API_KEY }, body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }) });
      out.push("proxy " + r.status);
      try { await Bun.connect({ hostname: "127.0.0.1", port: ${port}, socket: { data() {} } }); out.push("other reachable"); } catch { out.push("other blocked"); }
      out.push(require("node:fs").existsSync(${JSON.stringify(secret)}) ? "secret visible" : "secret hidden");
      await Bun.write("probe.txt", out.join("\\n"));`;
    writeFileSync(join(root, "probe.ts"), probe);
    const tasks = [taskFromSpec({ id: "probe", instruction: "run the probe", files: { "probe.ts": probe }, metadata: {}, test: "cat probe.txt" }, "t")];
    try {
      const { outcomes, sandbox } = await run({ tasks, sandbox: "bwrap", harnessCommand: [process.execPath, "probe.ts"] });
      expect(sandbox).toBe("bwrap");
      expect(outcomes[0]!.status).toBe("ok");
      expect(readFileSync(join(outcomes[0]!.dir, "workspace", "probe.txt"), "utf8").split("\n")).toEqual(["proxy 200", "other blocked", "secret hidden"]);
      expect((await rolloutInfo(outcomes[0]!.rollout_id)).calls).toBe(1);
    } finally {
      other.close();
    }
  }, 20_000);
});
