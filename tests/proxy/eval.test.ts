/**
 * Eval mode as a user meets it: streamed Chat and Completions calls are recorded with their
 * token counts (the proxy asks the upstream for stream usage and hides the extra chunk from a
 * harness that did not ask), vendor passthrough bodies are left alone, and `forge proxy --eval`
 * prints a ready base URL and key that a client can use at once.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { readRecords } from "../../records/index.ts";
import { TokenStatus, type ModelCall } from "../../schemas/index.ts";
import { startProxyHarness } from "../../proxy/testing.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { evalRequest } from "../../proxy/capture/tokens.ts";

const MODEL = "forge-sim/qwen3-sim";
const decoder = new TextDecoder();

describe("eval mode: streamed calls carry token counts", () => {
  test("a Chat stream without include_usage: usage recorded, no usage chunk or field reaches the harness", async () => {
    const h = await startProxyHarness({ proxy: { mode: "eval" } });
    try {
      const r = await h.register();
      const stream = await h.client(r).chat.completions.create({ model: MODEL, stream: true, messages: [{ role: "user", content: "count my tokens" }] });
      const chunks: any[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      expect(chunks.length).toBeGreaterThan(1);
      expect(chunks.filter((c) => c.usage !== undefined || c.choices.length === 0)).toEqual([]);
      const [call] = await h.calls(r.rollout_id);
      expect(call!.tokenStatus).toBe(TokenStatus.NOT_REQUESTED);
      expect(call!.usage?.promptTokens).toBeGreaterThan(0);
      expect(call!.usage?.completionTokens).toBeGreaterThan(0);
      expect(call!.usage!.totalTokens).toBe(call!.usage!.promptTokens + call!.usage!.completionTokens);
      // What was added upstream is recorded; what the harness saw has no usage.
      expect(JSON.parse(decoder.decode(call!.upstreamRequestPatch))).toEqual({ stream_options: { include_usage: true } });
      expect(decoder.decode(call!.responseBody)).not.toContain('"usage"');
    } finally {
      await h.close();
    }
  });

  test("a harness that asked for usage gets it; a Completions stream is counted too", async () => {
    const h = await startProxyHarness({ proxy: { mode: "eval" } });
    try {
      const r = await h.register();
      const stream = await h.client(r).chat.completions.create({ model: MODEL, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hi" }] });
      let usage: unknown;
      for await (const chunk of stream) usage ??= chunk.usage ?? undefined;
      expect(usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
      const completions = await h.client(r).completions.create({ model: MODEL, stream: true, prompt: "Say hi", max_tokens: 8 });
      for await (const chunk of completions) expect((chunk as { usage?: unknown }).usage ?? null).toBeNull();
      const calls = await h.calls(r.rollout_id);
      expect(calls).toHaveLength(2);
      // The harness's own request went upstream as sent: no patch recorded.
      expect(calls[0]!.upstreamRequestPatch.length).toBe(0);
      for (const call of calls) expect(call.usage?.completionTokens).toBeGreaterThan(0);
    } finally {
      await h.close();
    }
  });

  test("only Chat and Completions streams are changed (vendor APIs and non-streams pass as sent)", () => {
    const stream = { model: "m", stream: true, messages: [] };
    expect(evalRequest("/v1/chat/completions", stream)).toEqual({ ...stream, stream_options: { include_usage: true } });
    expect(evalRequest("/v1/completions", { ...stream, stream_options: { continuous_usage_stats: true } }).stream_options).toEqual({ continuous_usage_stats: true, include_usage: true });
    expect(evalRequest("/v1/messages", stream)).toBe(stream);
    expect(evalRequest("/v1/responses", stream)).toBe(stream);
    const plain = { model: "m", messages: [] };
    expect(evalRequest("/v1/chat/completions", plain)).toBe(plain);
  });
});

/** Starts `forge proxy` and resolves with its first stdout line (the --json line). */
async function startForgeProxy(argv: string[]) {
  const child = Bun.spawn(["bun", "bin/forge.ts", "proxy", ...argv], { cwd: join(import.meta.dir, "..", ".."), stdout: "pipe", stderr: "pipe", env: { ...process.env, FORGE_ADMIN_TOKEN: "" } });
  const reader = child.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
  }
  reader.releaseLock();
  return { child, text, firstLine: text.split("\n")[0]! };
}

describe("forge proxy --eval", () => {
  test("registers a rollout and prints its base URLs and key; a client pointed there is recorded", async () => {
    const sim = await startPolicySimulator({ seed: 1 });
    const dir = mkdtempSync(join(tmpdir(), "forge-eval-cli-"));
    const { child, firstLine } = await startForgeProxy(["--eval", "--upstream", `${sim.url}/v1`, "--listen", "127.0.0.1:0", "--data", dir, "--rollout", "my-eval", "--json"]);
    try {
      const started = JSON.parse(firstLine);
      expect(started).toMatchObject({ mode: "eval", data: dir, rollout: { rollout_id: "my-eval", openai_base_url: `${started.url}/r/my-eval/v1`, anthropic_base_url: `${started.url}/r/my-eval` } });
      expect(started.admin_token).toMatch(/^fa-/);
      const client = new OpenAI({ baseURL: started.rollout.openai_base_url, apiKey: started.rollout.api_key, maxRetries: 0 });
      const answer = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hello" }] });
      expect(answer.choices[0]!.message.content).toBeTruthy();
      const read = await fetch(`${started.url}/control/rollouts/my-eval`, { headers: { authorization: `Bearer ${started.admin_token}` } });
      expect(await read.json()).toMatchObject({ calls: 1, token_status_counts: { NOT_REQUESTED: 1 } });
    } finally {
      child.kill("SIGTERM");
      expect(await child.exited).toBe(0);
      await sim.stop();
    }
    const calls: ModelCall[] = [];
    for await (const { record } of readRecords(dir)) if (record.kind.case === "modelCall") calls.push(record.kind.value);
    expect(calls.map((c) => [c.rolloutId, c.tokenStatus])).toEqual([["my-eval", TokenStatus.NOT_REQUESTED]]);
    // The same id again on the same data dir: its key is not kept, so it cannot be handed out.
    const again = Bun.spawnSync(["bun", "bin/forge.ts", "proxy", "--eval", "--upstream", "http://127.0.0.1:9/v1", "--listen", "127.0.0.1:0", "--data", dir, "--rollout", "my-eval"], { cwd: join(import.meta.dir, "..", ".."), stdout: "pipe", stderr: "pipe" });
    expect(again.exitCode).toBe(2);
    expect(again.stderr.toString()).toContain("--rollout my-eval: a rollout of that id is already recorded");
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  test("the human-readable start names the exports to set and how to read the calls back", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-eval-cli-"));
    // No upstream call is made: the upstream need not be up for the proxy to start.
    const { child, text } = await startForgeProxy(["--eval", "--upstream", "http://127.0.0.1:9/v1", "--listen", "127.0.0.1:0", "--data", dir]);
    let stdout = text;
    try {
      const deadline = Date.now() + 30_000;
      const reader = child.stdout.getReader();
      while (!stdout.includes("call_bodies") && Date.now() < deadline) {
        const { done, value } = await reader.read();
        if (done) break;
        stdout += decoder.decode(value);
      }
      reader.releaseLock();
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
    expect(stdout).toMatch(/export OPENAI_BASE_URL=http:\/\/127\.0\.0\.1:\d+\/r\/eval-[\d-]+\/v1/);
    expect(stdout).toMatch(/export OPENAI_API_KEY=fk-/);
    expect(stdout).toMatch(/export ANTHROPIC_BASE_URL=http:\/\/127\.0\.0\.1:\d+\/r\/eval-[\d-]+\n/);
    expect(stdout).toContain(`forge analyze --data ${dir}`);
    expect(stdout).toContain("admin token (generated): fa-");
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  test("--eval refuses --mode train; --rollout needs --eval", async () => {
    const run = (...argv: string[]) => Bun.spawnSync(["bun", "bin/forge.ts", "proxy", ...argv], { cwd: join(import.meta.dir, "..", ".."), stdout: "pipe", stderr: "pipe" });
    const train = run("--eval", "--mode", "train", "--upstream", "http://127.0.0.1:9/v1");
    expect(train.exitCode).toBe(2);
    expect(train.stderr.toString()).toContain("--eval records without token ids");
    const rollout = run("--rollout", "x", "--upstream", "http://127.0.0.1:9/v1", "--data", "/tmp/unused");
    expect(rollout.exitCode).toBe(2);
    expect(rollout.stderr.toString()).toContain("--rollout names the rollout --eval registers");
  });
});
