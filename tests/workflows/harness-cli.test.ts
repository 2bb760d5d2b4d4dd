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
 * Token-in mode (docs/token-in.md) runs every case again through a second proxy that renders
 * prompts itself and sends the engine token ids, over simulators of both engine flavours (vLLM's
 * /v1/completions, SGLang's /generate, alternating by case): the same task solved, 1 agent sample
 * per rollout (OpenClaw: one per call, its rewrites), 0 drift tokens, every call either
 * continuing its chain (the prompt the SIMULATOR received begins with exactly its parent call's
 * prompt + completion ids) or starting one for the reason expected.
 *
 * Install the CLIs: npm install -g @openai/codex @anthropic-ai/claude-code @mariozechner/pi-coding-agent @qwen-code/qwen-code opencode-ai
 * OpenClaw needs Node ≥ 24 beside the system Node; see `.ci/run` (installs both under /opt).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy, tokenInOptions } from "../../proxy/index.ts";
import { readRecords } from "../../records/index.ts";
import { resolvePrompts } from "../../proxy/testing.ts";
import { ChainStart, type ModelCall } from "../../schemas/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { parsePolicyScriptFile } from "../../schemas/index.ts";
import type { RolloutTrajectory } from "../../trajectories/index.ts";
import { harnessUnavailable } from "../../workflows/harnesses/index.ts";
import { runLocal } from "../../workflows/local/executor.ts";
import { loadTaskDir } from "../../workflows/tasks/index.ts";

const ADMIN = "harness-cli-admin";
const EXAMPLE = join(import.meta.dir, "..", "..", "examples", "multistep");
// The example's successful script every time: the reward must be 1.
const script = { ...parsePolicyScriptFile(join(EXAMPLE, "policy.yaml")), failure_rate: 0 };
const task = loadTaskDir(join(EXAMPLE, "tasks", "stock-total"));

let root: string;
let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;
/** Token-in mode: a simulator and a token-in proxy per engine flavour. */
const tokenIn: Record<"vllm" | "sglang", { sim: Awaited<ReturnType<typeof startPolicySimulator>>; proxy: Awaited<ReturnType<typeof startProxy>>; dataDir: string }> = {} as never;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "forge-harness-cli-"));
  sim = await startPolicySimulator({ seed: 3, script });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: join(root, "data"), adminToken: ADMIN, mode: "train", healthIntervalMs: 0 });
  for (const engine of ["vllm", "sglang"] as const) {
    const s = await startPolicySimulator({ seed: 3, script, engine });
    const dataDir = join(root, `data-token-in-${engine}`);
    tokenIn[engine] = { sim: s, dataDir, proxy: await startProxy({ listen: "127.0.0.1:0", upstreams: [s.url], dataDir, adminToken: ADMIN, mode: "train", healthIntervalMs: 0, tokenIn: tokenInOptions({ modelDir: "qwen3" }) }) };
  }
});

afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
  for (const t of Object.values(tokenIn)) {
    await t.proxy.stop();
    await t.sim.stop();
  }
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

async function frontDoorProblem(harness: string, proxyUrl: string): Promise<string | undefined> {
  const probe = PROBES[harness];
  if (!probe) return undefined;
  const reg = (await (
    await fetch(`${proxyUrl}/control/rollouts`, {
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
/**
 * Token-in mode: 1 agent sample for every harness but OpenClaw, whose every call moves its
 * context message (a rewritten history: a new chain per call, forced); the chains started and
 * why (a title or a compaction summary is another conversation).
 */
type TokenInExpected = Expected & { chainStarts: Record<string, number> };
const FIRST = { first: 1 };
const cases: { harness: string; options?: Record<string, unknown>; expected: Expected; tokenIn: TokenInExpected }[] = [
  { harness: "forge-react", expected: { calls: 5, agentSamples: 2, auxiliary: [] }, tokenIn: { calls: 5, agentSamples: 1, auxiliary: [], chainStarts: FIRST } },
  { harness: "pi", options: { api: "openai-completions" }, expected: { calls: 5, agentSamples: 2, auxiliary: [] }, tokenIn: { calls: 5, agentSamples: 1, auxiliary: [], chainStarts: FIRST } },
  { harness: "pi", options: { api: "openai-responses" }, expected: { calls: 5, agentSamples: 5, auxiliary: [] }, tokenIn: { calls: 5, agentSamples: 1, auxiliary: [], chainStarts: FIRST } },
  { harness: "pi", options: { api: "anthropic-messages" }, expected: { calls: 5, agentSamples: 2, auxiliary: [] }, tokenIn: { calls: 5, agentSamples: 1, auxiliary: [], chainStarts: FIRST } },
  // A window small enough that pi compacts after its final answer: the summary is auxiliary.
  {
    harness: "pi",
    options: { api: "openai-completions", contextWindow: 17000 },
    expected: { calls: 6, agentSamples: 2, auxiliary: ["pi.compaction"] },
    tokenIn: { calls: 6, agentSamples: 1, auxiliary: ["pi.compaction"], chainStarts: { first: 1, "new conversation": 1 } },
  },
  { harness: "qwen-code", expected: { calls: 5, agentSamples: 5, auxiliary: [] }, tokenIn: { calls: 5, agentSamples: 1, auxiliary: [], chainStarts: FIRST } },
  { harness: "opencode", expected: { calls: 6, agentSamples: 5, auxiliary: ["opencode.title"] }, tokenIn: { calls: 6, agentSamples: 1, auxiliary: ["opencode.title"], chainStarts: { first: 1, "new conversation": 1 } } },
  { harness: "codex", expected: { calls: 5, agentSamples: 5, auxiliary: [] }, tokenIn: { calls: 5, agentSamples: 1, auxiliary: [], chainStarts: FIRST } },
  { harness: "claude-code", expected: { calls: 5, agentSamples: 2, auxiliary: [] }, tokenIn: { calls: 5, agentSamples: 1, auxiliary: [], chainStarts: FIRST } },
  { harness: "openclaw", expected: { calls: 5, agentSamples: 5, auxiliary: [] }, tokenIn: { calls: 5, agentSamples: 5, auxiliary: [], chainStarts: { first: 1, "history rewritten": 4 } } },
];

/** A chain start as the tables print it: HISTORY_REWRITTEN → "history rewritten". */
const chainStartName = (why: ChainStart): string => (ChainStart[why] ?? String(why)).toLowerCase().replaceAll("_", " ");

/** The calls of a rollout as recorded, in log order. */
async function callsOf(dataDir: string, rolloutId: string): Promise<ModelCall[]> {
  const out: ModelCall[] = [];
  for await (const { record } of readRecords(dataDir)) if (record.kind.case === "modelCall" && record.kind.value.rolloutId === rolloutId) out.push(record.kind.value);
  return out;
}

const startsWith = (ids: readonly number[], prefix: readonly number[]) => ids.length >= prefix.length && prefix.every((id, i) => ids[i] === id);

for (const mode of ["engine", "token-in"] as const) {
  describe(`harness CLIs through the proxy, ${mode} mode: the multi-step task`, () => {
    cases.forEach(({ harness, options, expected: engineExpected, tokenIn: tokenInExpected }, index) => {
      const name = options ? `${harness} ${JSON.stringify(options)}` : harness;
      const why = harnessUnavailable(harness);
      if (why && mode === "engine") console.warn(`harness-cli: skipping ${name}: ${why}`);
      // Token-in cases alternate between the engine flavours: vLLM's /v1/completions, SGLang's /generate.
      const flavour = index % 2 === 0 ? "vllm" : "sglang";
      const expected = mode === "engine" ? engineExpected : tokenInExpected;
      test.skipIf(Boolean(why))(
        `${name}${mode === "token-in" ? ` (${flavour} flavour)` : ""}: solves it; ${expected.agentSamples} agent sample(s) per rollout, the reward on the final answer`,
        async () => {
          const target = mode === "engine" ? { proxy, dataDir: join(root, "data") } : tokenIn[flavour];
          const problem = await frontDoorProblem(harness, target.proxy.url);
          if (problem) {
            console.warn(`harness-cli: skipping ${name}: ${problem}`);
            return;
          }
          const { outcomes } = await runLocal({
            run: `cli-${mode}-${harness}-${index}`,
            experiment: "harness-cli",
            tasks: [task],
            k: 1,
            harness,
            harnessOptions: options,
            model: "forge-sim/qwen3-sim",
            proxyUrl: target.proxy.url,
            adminToken: ADMIN,
            dataDir: target.dataDir,
            parallelism: 1,
            timeoutSeconds: 240,
            quiet: true,
          });
          const outcome = outcomes[0]!;
          const stderr = readFileSync(join(outcome.dir, "logs", "harness.stderr"), "utf8").slice(-2000);
          expect({ status: outcome.status, reward: outcome.reward, stderr: outcome.status === "ok" ? "" : stderr }).toEqual({ status: "ok", reward: 1, stderr: "" });
          expect(readFileSync(join(outcome.dir, "workspace", "total.txt"), "utf8").trim()).toBe("42");
          const get = async (path: string) => (await fetch(`${target.proxy.url}/control/rollouts/${outcome.rollout_id}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json();
          const info = (await get("")) as { rollout: { harness: string }; result?: { reward?: number; status: string }; calls: number; token_status_counts: Record<string, number> };
          expect(info.rollout.harness).toBe(harness);
          expect(info.result).toMatchObject({ reward: 1, status: "ROLLOUT_STATUS_OK" });
          expect(info.token_status_counts.COMPLETE).toBe(info.calls);
          const t = (await get("/trajectory")) as RolloutTrajectory;
          const agent = t.samples.filter((s) => !s.auxiliary);
          const calls = mode === "token-in" ? await callsOf(target.dataDir, outcome.rollout_id) : [];
          const chainStarts: Record<string, number> = {};
          for (const c of calls) if (c.chainStart !== ChainStart.UNSPECIFIED) chainStarts[chainStartName(c.chainStart)] = (chainStarts[chainStartName(c.chainStart)] ?? 0) + 1;
          expect({
            calls: t.stats.calls,
            agentSamples: agent.length,
            auxiliary: t.kinds.filter((k) => k.kind === "auxiliary").map((k) => k.fingerprint),
            ...(mode === "token-in" ? { chainStarts } : {}),
          }).toEqual(expected);
          expect({ valid: t.valid, broken: t.broken }).toEqual({ valid: true, broken: [] });
          // The reward sits on the sample holding the agent's last call, and nowhere else.
          const lastAgentCall = t.kinds.filter((k) => k.kind !== "auxiliary").at(-1)!.call_id;
          const final = t.samples.filter((s) => s.is_final);
          expect(final.map((s) => ({ reward: s.reward, auxiliary: s.auxiliary, holdsLastCall: s.call_ids.includes(lastAgentCall) }))).toEqual([{ reward: 1, auxiliary: null, holdsLastCall: true }]);
          for (const s of t.samples) if (!s.is_final) expect(s.reward).toBe(0);
          if (mode !== "token-in") return;
          expect(t.stats.drift_tokens).toBe(0);
          // At the engine: a call that continues a chain was sent exactly its parent's prompt +
          // completion ids, then the new messages' tokens.
          const samples = tokenIn[flavour].sim.samples.filter((s) => s.rollout === outcome.rollout_id);
          const prompts = resolvePrompts(calls);
          const sampleOf = (c: ModelCall) => {
            const found = samples.find((s) => s.token_ids.length === c.completionTokenIds.length && s.token_ids.every((id, i) => id === c.completionTokenIds[i]) && startsWith(s.prompt_token_ids, prompts.get(c.callId)!) && s.prompt_token_ids.length === prompts.get(c.callId)!.length);
            expect(found).toBeDefined();
            return found!;
          };
          expect(samples.length).toBe(calls.length);
          let continued = 0;
          for (const c of calls) {
            if (c.chainParent === "") continue;
            const parent = sampleOf(calls.find((p) => p.callId === c.chainParent)!);
            const own = sampleOf(c);
            expect(startsWith(own.prompt_token_ids, [...parent.prompt_token_ids, ...parent.token_ids])).toBe(true);
            continued++;
          }
          expect(continued).toBe(calls.length - Object.values(tokenInExpected.chainStarts).reduce((a, b) => a + b, 0));
        },
        // A loaded 2-core CI machine: OpenClaw alone spends ≈ 11 s starting, then five calls.
        300_000,
      );
    });
  });
}
