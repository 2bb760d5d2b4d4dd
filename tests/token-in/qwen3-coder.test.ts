/**
 * Token-in mode for a model served with `--tool-call-parser qwen3_coder` (Qwen3-Coder: its own
 * chat template, XML tool calls, no reasoning parser), through the real proxy against the
 * policy simulator playing that server, in both engine flavours (vLLM's /v1/completions with a
 * token-id prompt, SGLang's /generate with input_ids; docs/token-in.md):
 *
 * - a five-call tool loop over Chat, streamed and not, the harness echoing arguments compact: the
 *   engine samples Qwen3-Coder's XML, the harness gets the tool calls (arguments typed by the
 *   tool's schema, as vLLM's qwen3_coder parser types them), the prompt the ENGINE received for
 *   call n+1 begins with exactly call n's prompt + completion ids followed by the tokens
 *   Qwen3-Coder's template writes for the new messages, one chain, one sample, 0 drift;
 * - Anthropic Messages (streamed): the XML call reaches the harness as a tool_use block and the
 *   next call continues the chain;
 * - real harnesses (qwen-code, Qwen3-Coder's own CLI, over Chat; claude-code over Messages;
 *   forge-react) on the multi-step example: solved, reward 1, one agent sample, 0 drift, each
 *   call's prompt at the engine = its parent's prompt + completion ids. A harness whose CLI is not
 *   installed is skipped with a message.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readRecords } from "../../records/index.ts";
import { startProxy, tokenInOptions } from "../../proxy/index.ts";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";
import { ChainStart } from "../../schemas/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { parsePolicyScriptFile, type ModelCall } from "../../schemas/index.ts";
import type { RolloutTrajectory } from "../../trajectories/index.ts";
import { harnessUnavailable } from "../../workflows/harnesses/index.ts";
import { runLocal } from "../../workflows/local/executor.ts";
import { loadTaskDir } from "../../workflows/tasks/index.ts";
import { loadModel, QWEN3_CODER } from "../../model/index.ts";
import { chatCall, expectOneChain, expectOneSample, firstToolUse, messagesEvents, samplesOf, startsWith, STOCK_OPENING, stockLoop } from "./calls.ts";

const SLOW = 120_000;
const fn = (name: string, props: Record<string, string>, required: string[]) => ({
  type: "function",
  function: { name, description: `${name} tool`, parameters: { type: "object", properties: Object.fromEntries(Object.entries(props).map(([p, type]) => [p, { type }])), required } },
});
const tools = [fn("read", { path: "string" }, ["path"]), fn("bash", { command: "string", timeout: "integer" }, ["command"]), fn("write", { path: "string", content: "string" }, ["path", "content"])];
const script = {
  tasks: [
    {
      name: "stock",
      match: "stock.csv",
      steps: [
        { say: "I'll look at the file first.", read: "stock.csv" },
        { tool: { name: "bash", arguments: { command: "awk -F, 'NR > 1 { s += $2 } END { print s }' stock.csv", timeout: 30 } } },
        { write: { path: "total.txt", content: "42\n" } },
        { bash: "cat total.txt" },
        { finish: "total.txt holds 42." },
      ],
    },
  ],
};

/** One Chat call of the loop below (docs of chatCall: tests/token-in/calls.ts). */
const chat = (h: ProxyHarness, r: { api_key: string; openai_base_url: string }, body: Record<string, unknown>, stream: boolean) => chatCall(h, r, { model: "qwen3-coder", tools, ...body }, stream);

for (const engine of ["vllm", "sglang"] as const) {
  describe(`token-in mode with qwen3_coder, ${engine} flavour`, () => {
    let h: ProxyHarness;
    beforeAll(async () => {
      h = await startProxyHarness({ sim: { script, engine, toolCallParser: "qwen3_coder" }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3-coder" }) } });
    });
    afterAll(async () => {
      await h?.close();
    });

    test(
      "a five-call tool loop in Qwen3-Coder's XML: the engine's prompt n+1 = prompt n + completion n + the new messages; one sample, 0 drift",
      async () => {
        const model = await loadModel(QWEN3_CODER);
        const r = await h.register({ task_id: "stock" });
        const answers = await stockLoop((body, stream) => chat(h, r, body, stream));
        // The engine sampled XML; the harness got OpenAI tool calls, arguments typed by the schema (timeout an integer).
        const samples = samplesOf(h, r.rollout_id);
        expect(samples.length).toBe(5);
        expect(samples[0]!.text).toBe("I'll look at the file first.\n\n<tool_call>\n<function=read>\n<parameter=path>\nstock.csv\n</parameter>\n</function>\n</tool_call><|im_end|>");
        expect(samples[1]!.text).toContain("<parameter=timeout>\n30\n</parameter>");
        expect(samples.every((s) => !s.text.includes("<think>"))).toBe(true);
        expect(answers.map((a) => a.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)]))).toEqual([
          [["read", { path: "stock.csv" }]],
          [["bash", { command: "awk -F, 'NR > 1 { s += $2 } END { print s }' stock.csv", timeout: 30 }]],
          [["write", { path: "total.txt", content: "42\n" }]],
          [["bash", { command: "cat total.txt" }]],
          [],
        ]);
        expect(answers.map((a) => [a.content, a.reasoning])).toEqual([["I'll look at the file first.", ""], ["", ""], ["", ""], ["", ""], ["total.txt holds 42.", ""]]);

        // At the engine: each prompt is exactly the previous prompt and completion, then what
        // Qwen3-Coder's template writes after the turn (the tool results, the generation prompt).
        for (let i = 1; i < samples.length; i++) {
          const held = [...samples[i - 1]!.prompt_token_ids, ...samples[i - 1]!.token_ids];
          expect(startsWith(samples[i]!.prompt_token_ids, held)).toBe(true);
          const appended = model.tokenizer.decode(samples[i]!.prompt_token_ids.slice(held.length));
          expect(appended).toMatch(/^\n<\|im_start\|>user\n<tool_response>\n[\s\S]*\n<\/tool_response>\n<\|im_end\|>\n<\|im_start\|>assistant\n$/);
        }
        // The first prompt is Qwen3-Coder's rendering (its XML tools block).
        expect(samples[0]!.prompt_token_ids).toEqual(model.renderChatIds({ messages: [...STOCK_OPENING], tools }));

        // The records: one chain, each call continuing the one before, COMPLETE ids equal to the engine's.
        await expectOneChain(h, r.rollout_id, samples);

        await expectOneSample(h, r.rollout_id, samples);
      },
      SLOW,
    );

    test(
      "Anthropic Messages (streamed): the XML call reaches the harness as tool_use, the next call continues the chain",
      async () => {
        const r = (await h.register({ task_id: "stock-messages" })) as any;
        const user = "stock.csv lists items and counts. Write the total to total.txt.";
        const events = await messagesEvents(r, "qwen3-coder", tools, [{ role: "user", content: user }]);
        const { block: toolUse, input } = firstToolUse(events);
        expect(toolUse?.name).toBe("read");
        expect(input).toEqual({ path: "stock.csv" });
        expect(events.some((e) => e.type === "content_block_start" && e.content_block.type === "thinking")).toBe(false);
        const second = await messagesEvents(r, "qwen3-coder", tools, [
          { role: "user", content: user },
          { role: "assistant", content: [{ type: "text", text: "I'll look at the file first." }, { type: "tool_use", id: toolUse!.id, name: "read", input }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: toolUse!.id, content: "item,count\nbolts,12\n" }] },
        ]);
        expect(JSON.stringify(second).includes('"name":"bash"')).toBe(true);
        const calls = await h.calls(r.rollout_id);
        expect(calls.map((c) => [c.chainStart, c.chainParent])).toEqual([[ChainStart.FIRST, ""], [0, calls[0]!.callId]]);
        const samples = samplesOf(h, r.rollout_id);
        expect(startsWith(samples[1]!.prompt_token_ids, [...samples[0]!.prompt_token_ids, ...samples[0]!.token_ids])).toBe(true);
      },
      SLOW,
    );
  });
}

test("settings: modelDir qwen3-coder is Qwen3-Coder's template with the qwen3_coder parser and no reasoning parser", () => {
  const { model } = tokenInOptions({ modelDir: "qwen3-coder" });
  expect([model.toolParser, model.reasoningParser, model.chatTemplate]).toEqual(["qwen3_coder", null, QWEN3_CODER.chatTemplate]);
  // The parsers can still be named (a Qwen3-Coder served with qwen3_xml, the same parser class).
  expect(tokenInOptions({ modelDir: "qwen3-coder", toolParser: "qwen3_xml" }).model.toolParser).toBe("qwen3_xml");
  // The plain qwen3 directory keeps Qwen3's own template.
  expect(tokenInOptions({ modelDir: "qwen3" }).model.chatTemplate).toBeUndefined();
});

describe("real harnesses against a qwen3_coder server, token-in mode: the multi-step task", () => {
  const ADMIN = "token-in-qwen3-coder-admin";
  const EXAMPLE = join(import.meta.dir, "..", "..", "examples", "multistep");
  const multistep = { ...parsePolicyScriptFile(join(EXAMPLE, "policy.yaml")), failure_rate: 0 };
  const task = loadTaskDir(join(EXAMPLE, "tasks", "stock-total"));
  let root: string;
  let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "forge-token-in-coder-"));
    sim = await startPolicySimulator({ seed: 3, script: multistep, toolCallParser: "qwen3_coder" });
    proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: join(root, "data"), adminToken: ADMIN, mode: "train", healthIntervalMs: 0, tokenIn: tokenInOptions({ modelDir: "qwen3-coder" }) });
  });
  afterAll(async () => {
    await proxy?.stop();
    await sim?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  for (const harness of ["qwen-code", "claude-code", "forge-react"]) {
    const why = harnessUnavailable(harness);
    if (why) console.warn(`token-in-qwen3-coder: skipping ${harness}: ${why}`);
    test.skipIf(Boolean(why))(
      `${harness}: solves it from XML tool calls; 1 agent sample, 0 drift, every prompt at the engine continues its parent's`,
      async () => {
        const { outcomes } = await runLocal({
          run: `coder-${harness}`,
          experiment: "token-in-qwen3-coder",
          tasks: [task],
          k: 1,
          harness,
          model: "forge-sim/qwen3-coder-sim",
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
        const samples = sim.samples.filter((x) => x.rollout === outcome.rollout_id);
        // The engine wrote every call in Qwen3-Coder's XML (forge-react's final answer is a call too).
        expect(samples.slice(0, 4).every((x) => x.text.includes("<tool_call>\n<function="))).toBe(true);
        expect(samples.some((x) => x.text.includes("<tool_call>\n{") || x.text.includes("<think>"))).toBe(false);
        const calls: ModelCall[] = [];
        for await (const { record } of readRecords(join(root, "data"))) if (record.kind.case === "modelCall" && record.kind.value.rolloutId === outcome.rollout_id) calls.push(record.kind.value);
        expect(calls.map((c) => c.chainStart)).toEqual([ChainStart.FIRST, 0, 0, 0, 0]);
        expect(samples.length).toBe(5);
        for (let i = 1; i < samples.length; i++) expect(startsWith(samples[i]!.prompt_token_ids, [...samples[i - 1]!.prompt_token_ids, ...samples[i - 1]!.token_ids])).toBe(true);
        const t = (await (await fetch(`${proxy.url}/control/rollouts/${outcome.rollout_id}/trajectory`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as RolloutTrajectory;
        expect({ agentSamples: t.samples.filter((x) => !x.auxiliary).length, drift: t.stats.drift_tokens, valid: t.valid }).toEqual({ agentSamples: 1, drift: 0, valid: true });
      },
      300_000,
    );
  }
});
