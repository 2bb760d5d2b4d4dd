/**
 * Each installed harness CLI, run by its adapter through the real proxy against the policy
 * simulator, offline, on the multi-step example (examples/multistep: read, bash, write, check,
 * then the final answer). Checks the file, the reward, that every call is recorded COMPLETE, and
 * the trajectory: agent samples per rollout, the auxiliary calls recognised, and the reward on
 * the agent's final answer (docs/harnesses.md has the table, from bench/harness-samples.ts). A
 * harness whose CLI is not installed is skipped with a message; codex (Responses API) and
 * claude-code (Anthropic Messages) are skipped while their front door does not answer a
 * streaming request with tools (404, or no answer in 10 s).
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
import { parsePolicyScriptFile } from "../schemas/index.ts";
import type { RolloutTrajectory } from "../trajectories/index.ts";
import { harnessUnavailable } from "../workflows/harnesses/index.ts";
import { runLocal } from "../workflows/local/executor.ts";
import { loadTaskDir } from "../workflows/tasks/index.ts";

const ADMIN = "harness-cli-admin";
const EXAMPLE = join(import.meta.dir, "..", "examples", "multistep");
// The example's successful script every time: the reward must be 1.
const script = { ...parsePolicyScriptFile(join(EXAMPLE, "policy.yaml")), failure_rate: 0 };
const task = loadTaskDir(join(EXAMPLE, "tasks", "stock-total"));

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

/**
 * Per harness: model calls, agent samples (what the export trains on) and auxiliary calls per
 * rollout on the multi-step task, against the simulator that renders and parses as vLLM 0.33.0
 * does (docs/model.md). What a real vLLM does, the simulator does: the first turn's text before
 * its call ("I'll look at the file first.\n") comes back with the template's own newline added,
 * and a harness that does not send the reasoning back gets the think block dropped with the
 * newlines after it re-tokenized (one fork: 2 samples); a harness that streams and sends back
 * the newlines hermes streams as content before each call forks at every call (5 samples).
 * OpenClaw also re-appends its context message and renames tool-call ids: it forks at every call
 * in any case. docs/harnesses.md says which is which.
 */
type Expected = { calls: number; agentSamples: number; auxiliary: string[] };
const cases: { harness: string; options?: Record<string, unknown>; expected: Expected }[] = [
  { harness: "forge-react", expected: { calls: 5, agentSamples: 2, auxiliary: [] } },
  { harness: "pi", options: { api: "openai-completions" }, expected: { calls: 5, agentSamples: 2, auxiliary: [] } },
  { harness: "pi", options: { api: "openai-responses" }, expected: { calls: 5, agentSamples: 5, auxiliary: [] } },
  { harness: "pi", options: { api: "anthropic-messages" }, expected: { calls: 5, agentSamples: 2, auxiliary: [] } },
  // A window small enough that pi compacts after its final answer: the summary is auxiliary.
  { harness: "pi", options: { api: "openai-completions", contextWindow: 17000 }, expected: { calls: 6, agentSamples: 2, auxiliary: ["pi.compaction"] } },
  { harness: "qwen-code", expected: { calls: 5, agentSamples: 5, auxiliary: [] } },
  { harness: "opencode", expected: { calls: 6, agentSamples: 5, auxiliary: ["opencode.title"] } },
  { harness: "codex", expected: { calls: 5, agentSamples: 5, auxiliary: [] } },
  { harness: "claude-code", expected: { calls: 5, agentSamples: 2, auxiliary: [] } },
  { harness: "openclaw", expected: { calls: 5, agentSamples: 5, auxiliary: [] } },
];

describe("harness CLIs through the proxy: the multi-step task", () => {
  for (const { harness, options, expected } of cases) {
    const name = options ? `${harness} ${JSON.stringify(options)}` : harness;
    const why = harnessUnavailable(harness);
    if (why) console.warn(`harness-cli: skipping ${name}: ${why}`);
    test.skipIf(Boolean(why))(
      `${name}: solves it; ${expected.agentSamples} agent sample(s) per rollout, the reward on the final answer`,
      async () => {
        const problem = await frontDoorProblem(harness);
        if (problem) {
          console.warn(`harness-cli: skipping ${name}: ${problem}`);
          return;
        }
        const { outcomes } = await runLocal({
          run: `cli-${harness}-${cases.findIndex((c) => c.options === options)}`,
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
          timeoutSeconds: 240,
          quiet: true,
        });
        const outcome = outcomes[0]!;
        const stderr = readFileSync(join(outcome.dir, "logs", "harness.stderr"), "utf8").slice(-2000);
        expect({ status: outcome.status, reward: outcome.reward, stderr: outcome.status === "ok" ? "" : stderr }).toEqual({ status: "ok", reward: 1, stderr: "" });
        expect(readFileSync(join(outcome.dir, "workspace", "total.txt"), "utf8").trim()).toBe("42");
        const get = async (path: string) => (await fetch(`${proxy.url}/control/rollouts/${outcome.rollout_id}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json();
        const info = (await get("")) as { rollout: { harness: string }; result?: { reward?: number; status: string }; calls: number; token_status_counts: Record<string, number> };
        expect(info.rollout.harness).toBe(harness);
        expect(info.result).toMatchObject({ reward: 1, status: "ROLLOUT_STATUS_OK" });
        expect(info.token_status_counts.COMPLETE).toBe(info.calls);
        const t = (await get("/trajectory")) as RolloutTrajectory;
        const agent = t.samples.filter((s) => !s.auxiliary);
        expect({
          calls: t.stats.calls,
          agentSamples: agent.length,
          auxiliary: t.kinds.filter((k) => k.kind === "auxiliary").map((k) => k.fingerprint),
        }).toEqual(expected);
        expect({ valid: t.valid, broken: t.broken }).toEqual({ valid: true, broken: [] });
        // The reward sits on the sample holding the agent's last call, and nowhere else.
        const lastAgentCall = t.kinds.filter((k) => k.kind !== "auxiliary").at(-1)!.call_id;
        const final = t.samples.filter((s) => s.is_final);
        expect(final.map((s) => ({ reward: s.reward, auxiliary: s.auxiliary, holdsLastCall: s.call_ids.includes(lastAgentCall) }))).toEqual([{ reward: 1, auxiliary: null, holdsLastCall: true }]);
        for (const s of t.samples) if (!s.is_final) expect(s.reward).toBe(0);
      },
      // A loaded 2-core CI machine: OpenClaw alone spends ≈ 11 s starting, then five calls.
      300_000,
    );
  }
});
