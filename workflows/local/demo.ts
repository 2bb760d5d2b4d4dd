/**
 * `forge demo`: the simulator and the proxy in this process, one recorded call sent through
 * them with the official OpenAI client, and what the log holds for it.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { parseCommand } from "../../lib/index.ts";
import { CallStatus, TokenStatus } from "../../schemas/index.ts";
import { readRecords } from "../../records/index.ts";

const demoUsage = `
usage: forge demo [--data DIR] [--json]

Starts the policy simulator (a stand-in for the model) and the recording proxy in this process
on free loopback ports, registers a rollout, sends one streaming chat call through the proxy
with the official openai client, and prints the record it wrote.

  --data DIR   data directory (default: a new temp dir)
  --json       print the summary as JSON
`;

/**
 * @example
 * await demoCommand([]); // prints seq, token counts, token_status, policy version, data dir
 */
export async function demoCommand(argv: string[]): Promise<number> {
  const args = parseCommand({ name: "demo", usage: demoUsage, options: { data: { type: "string" }, json: { type: "boolean" } } }, argv);
  if (!args) return 0;
  const dataDir = args.values.data ?? (await mkdtemp(join(tmpdir(), "forge-demo-")));
  if (!args.values.json) console.error("demo: starting the policy simulator (loading the Qwen3 tokenizer) and the proxy...");
  const { startPolicySimulator } = await import("../../simulator/index.ts");
  const sim = await startPolicySimulator({ seed: 1 });
  const adminToken = `demo-${crypto.randomUUID()}`;
  const { startProxy } = await import("../../proxy/index.ts");
  const proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [`${sim.url}/v1`], dataDir, mode: "train", adminToken, healthIntervalMs: 0 });
  try {
    const registered = await fetch(`${proxy.url}/control/rollouts`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ experiment: "demo", task_id: "hello", harness: "openai-node" }),
    });
    if (registered.status !== 201) throw new Error(`registering the demo rollout failed: HTTP ${registered.status} ${await registered.text()}`);
    const rollout = (await registered.json()) as { rollout_id: string; api_key: string; openai_base_url: string };
    const client = new OpenAI({ baseURL: rollout.openai_base_url, apiKey: rollout.api_key, maxRetries: 0 });
    let text = "";
    const stream = await client.chat.completions.create({ model: "forge-sim/qwen3-sim", messages: [{ role: "user", content: "Say hello to OpenForge." }], stream: true });
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    await fetch(`${proxy.url}/control/rollouts/${rollout.rollout_id}/finish`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ reward: 1, status: "ok" }),
    });
    let summary: Record<string, unknown> | undefined;
    for await (const { record } of readRecords(dataDir)) {
      if (record.kind.case !== "modelCall") continue;
      const c = record.kind.value;
      summary = {
        rollout_id: c.rolloutId,
        seq: c.seq,
        call_id: c.callId,
        status: CallStatus[c.status],
        stream: c.stream,
        prompt_tokens: c.promptLen,
        completion_tokens: c.completionTokenIds.length,
        logprobs: c.completionLogprobs.length,
        token_status: TokenStatus[c.tokenStatus],
        policy_version: c.policyVersion,
        upstream: c.upstream,
        data_dir: dataDir,
        answer: text,
      };
    }
    if (!summary) throw new Error(`no ModelCall record found in ${dataDir}`);
    if (args.values.json) console.log(JSON.stringify(summary));
    else {
      console.log(`harness received: ${JSON.stringify(text)}`);
      console.log("recorded ModelCall:");
      for (const [k, val] of Object.entries(summary)) if (k !== "answer") console.log(`  ${k.padEnd(17)} ${val}`);
    }
    return 0;
  } finally {
    await proxy.stop();
    await sim.stop();
  }
}
