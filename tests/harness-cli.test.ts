/**
 * Each installed harness CLI, run by its adapter through the real proxy against the policy
 * simulator, offline, for a one-tool-call task (create a file with the shell). A harness whose
 * CLI is not installed is skipped with a message; codex (Responses API) and claude-code
 * (Anthropic Messages) are skipped while their front door does not answer a streaming request
 * with tools (404, or no answer in 10 s).
 *
 * Install the CLIs: npm install -g @openai/codex @anthropic-ai/claude-code @mariozechner/pi-coding-agent @qwen-code/qwen-code opencode-ai
 * OpenClaw needs Node ≥ 24 beside the system Node; see `.ci/run` (installs both under /opt).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy } from "../proxy/index.ts";
import { startPolicySimulator } from "../simulator/index.ts";
import type { PolicyScriptInput } from "../schemas/index.ts";
import { harnessUnavailable } from "../workflows/harnesses/index.ts";
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

/**
 * Whether the front door a harness needs answers a streaming request with a tool within a few
 * seconds (404 before it is served; a stream that never starts would only burn the timeout).
 */
const PROBES: Record<string, (base: { openai: string; anthropic: string; key: string }) => Promise<Response>> = {
  codex: (b) =>
    fetch(`${b.openai}/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${b.key}` },
      body: JSON.stringify({ model: "m", stream: true, input: "Create hello.txt", tools: [{ type: "function", name: "shell", parameters: { type: "object", properties: { command: { type: "string" } } } }] }),
      signal: AbortSignal.timeout(10_000),
    }),
  "claude-code": (b) =>
    fetch(`${b.anthropic}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": b.key, "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "m", max_tokens: 256, stream: true, messages: [{ role: "user", content: "Create hello.txt" }], tools: [{ name: "Bash", input_schema: { type: "object", properties: { command: { type: "string" } } } }] }),
      signal: AbortSignal.timeout(10_000),
    }),
};

async function frontDoorProblem(harness: string): Promise<string | undefined> {
  const probe = PROBES[harness];
  if (!probe) return undefined;
  const reg = (await (
    await fetch(`${proxy.url}/control/rollouts`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
      body: JSON.stringify({ experiment: "harness-cli-probe", task_id: `probe-${harness}` }),
    })
  ).json()) as { openai_base_url: string; anthropic_base_url: string; api_key: string };
  try {
    const response = await probe({ openai: reg.openai_base_url, anthropic: reg.anthropic_base_url, key: reg.api_key });
    await response.text();
    if (response.status === 404) return "the proxy does not serve its front door yet (404)";
    return undefined;
  } catch (error) {
    return `the proxy's front door did not answer a streaming request with tools in 10 s (${(error as Error).name})`;
  }
}

const cases: { harness: string; options?: Record<string, unknown> }[] = [
  { harness: "forge-react" },
  { harness: "pi", options: { api: "openai-completions" } },
  { harness: "qwen-code" },
  { harness: "opencode" },
  { harness: "codex" },
  { harness: "claude-code" },
  { harness: "openclaw" },
];


describe("harness CLIs through the proxy", () => {
  for (const { harness, options } of cases) {
    const why = harnessUnavailable(harness);
    if (why) console.warn(`harness-cli: skipping ${harness}: ${why}`);
    test.skipIf(Boolean(why))(
      `${harness}: creates the file; the rollout's records are complete`,
      async () => {
        const problem = await frontDoorProblem(harness);
        if (problem) {
          console.warn(`harness-cli: skipping ${harness}: ${problem}`);
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
        if (harness === "openclaw") {
          // OpenClaw re-appends its internal-context message at the end of every request, so a
          // later prompt is not a prefix extension of the earlier one: assembly forks a new sample
          // there instead of failing.
          const trajectory = (await (await fetch(`${proxy.url}/control/rollouts/${outcome.rollout_id}/trajectory`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as {
            valid: boolean;
            broken: unknown[];
            samples: unknown[];
            stats: { fork: number; broken: number };
          };
          expect({ valid: trajectory.valid, broken: trajectory.broken }).toEqual({ valid: true, broken: [] });
          expect(trajectory.stats.fork).toBeGreaterThanOrEqual(1);
          expect(trajectory.samples.length).toBe(trajectory.stats.fork + 1);
        }
      },
      150_000,
    );
  }
});
