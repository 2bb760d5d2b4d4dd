/**
 * Each installed harness CLI, run by its adapter through the real proxy against the policy
 * simulator, offline, for a one-tool-call task (create a file with the shell). A harness whose
 * CLI is not installed is skipped with a message; codex (Responses API) and claude-code
 * (Anthropic Messages) are skipped while the proxy answers 404 on those front doors.
 *
 * Install the CLIs: npm install -g @openai/codex @anthropic-ai/claude-code @mariozechner/pi-coding-agent @qwen-code/qwen-code opencode-ai
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPolicySimulator, startProxy } from "../proxy/index.ts";
import type { PolicyScriptInput } from "../schemas/policy-script.ts";
import { HARNESS_BINARIES } from "../workflows/harnesses/index.ts";
import { runLocal } from "../workflows/local/executor.ts";
import { taskFromSpec } from "../workflows/tasks/index.ts";

const ADMIN = "harness-cli-admin";
const CONTENT = "Hello, OpenForge!";
const script: PolicyScriptInput = {
  version: 1,
  failure_rate: 0,
  tasks: [{ name: "hello", match: "hello.txt", steps: [{ bash: `printf '${CONTENT}\\n' > hello.txt` }, { finish: "Created hello.txt." }] }],
};
const task = taskFromSpec(
  { id: "hello", instruction: `Create hello.txt containing exactly one line: ${CONTENT}`, files: {}, metadata: {}, test: `[ "$(cat hello.txt)" = "${CONTENT}" ]` },
  "harness-cli",
);

let root: string;
let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "forge-harness-cli-"));
  sim = await startPolicySimulator({ seed: 3, script });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: join(root, "data"), adminToken: ADMIN, mode: "train", healthIntervalMs: 0 });
});

afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** The front door a harness needs, or undefined when it speaks Chat Completions. */
const FRONT_DOOR: Record<string, string | undefined> = { codex: "/v1/responses", "claude-code": "/v1/messages" };

async function frontDoorMissing(path: string): Promise<boolean> {
  const response = await fetch(`${proxy.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  await response.body?.cancel();
  return response.status === 404;
}

const cases: { harness: string; options?: Record<string, unknown> }[] = [
  { harness: "forge-react" },
  { harness: "pi", options: { api: "openai-completions" } },
  { harness: "qwen-code" },
  { harness: "opencode" },
  { harness: "codex" },
  { harness: "claude-code" },
];

describe("harness CLIs through the proxy", () => {
  for (const { harness, options } of cases) {
    const binary = HARNESS_BINARIES[harness];
    const installed = !binary || Bun.which(binary) !== null;
    if (!installed) console.warn(`harness-cli: skipping ${harness}: \`${binary}\` is not on PATH`);
    test.skipIf(!installed)(
      `${harness}: creates the file; the rollout's records are complete`,
      async () => {
        const door = FRONT_DOOR[harness];
        if (door && (await frontDoorMissing(door))) {
          console.warn(`harness-cli: skipping ${harness}: the proxy has no ${door} front door yet (404)`);
          return;
        }
        const { outcomes } = await runLocal({
          run: `cli-${harness}`,
          experiment: "harness-cli",
          tasks: [task],
          k: 1,
          harness,
          harnessOptions: options,
          model: "forge-sim/qwen3-sim",
          proxyUrl: proxy.url,
          adminToken: ADMIN,
          dataDir: join(root, "data"),
          parallelism: 1,
          timeoutSeconds: 120,
          quiet: true,
        });
        const outcome = outcomes[0]!;
        const stderr = readFileSync(join(outcome.dir, "logs", "harness.stderr"), "utf8").slice(-2000);
        expect({ status: outcome.status, reward: outcome.reward, stderr: outcome.status === "ok" ? "" : stderr }).toEqual({ status: "ok", reward: 1, stderr: "" });
        expect(readFileSync(join(outcome.dir, "workspace", "hello.txt"), "utf8")).toBe(`${CONTENT}\n`);
        const info = (await (await fetch(`${proxy.url}/control/rollouts/${outcome.rollout_id}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as {
          rollout: { harness: string };
          result?: { reward?: number; status: string };
          calls: number;
          token_status_counts: Record<string, number>;
        };
        expect(info.rollout.harness).toBe(harness);
        expect(info.result).toMatchObject({ reward: 1, status: "ROLLOUT_STATUS_OK" });
        // At least the tool call and the answer after it (opencode adds a title call).
        expect(info.calls).toBeGreaterThanOrEqual(2);
        expect(info.token_status_counts.COMPLETE).toBe(info.calls);
      },
      150_000,
    );
  }
});
