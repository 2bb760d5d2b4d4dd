/**
 * SIGKILL of a real `forge proxy --token-in` process mid-rollout, then a restart on the same
 * data dir (docs/token-in.md, "Restart"): the open rollouts' chains come back from their records
 * at their first call, so the conversation goes on as if the proxy had never stopped — the
 * prompt the engine (the simulator) receives next begins with exactly the previous prompt +
 * completion ids, the records hold one chain, the export one sample with 0 drift tokens — and a
 * call cut by the kill, sent again by its harness, gets exactly the prompt it had.
 */
import { expect, test } from "bun:test";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readRecords } from "../../records/index.ts";
import { ChainStart, TokenMode, TokenStatus, type ModelCall } from "../../schemas/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { type StartedPolicySimulator } from "../../simulator/testing.ts";
import { STOCK_TASK, STOCK_TOOLS, startsWith } from "./calls.ts";

const TOKEN = "kill9-token-in";
const tools = STOCK_TOOLS;
const script = { thinking: true, tasks: [STOCK_TASK] };

type Msg = { role: string; content?: string | null; tool_calls?: unknown[]; tool_call_id?: string };
type Rollout = { rollout_id: string; api_key: string; openai_base_url: string };

/** A real proxy process; resolves once it prints where it listens. */
async function spawnProxy(sim: StartedPolicySimulator, dataDir: string): Promise<{ child: Bun.Subprocess<"ignore", "pipe", "pipe">; url: string }> {
  const child = Bun.spawn(
    ["bun", "bin/forge.ts", "proxy", "--listen", "127.0.0.1:0", "--upstream", `${sim.url}/v1`, "--data", dataDir, "--admin-token", TOKEN, "--json", "--token-in", "--model-dir", "qwen3"],
    { stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  const reader = child.stdout.getReader();
  let line = "";
  while (!line.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`forge proxy exited early: ${await new Response(child.stderr).text()}`);
    line += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return { child, url: (JSON.parse(line.split("\n")[0]!) as { url: string }).url };
}

/** One Chat call as a harness makes it; the answer as the harness read it. */
async function chat(r: Rollout, messages: Msg[], stream: boolean): Promise<{ content: string; toolCalls: { id: string; name: string; arguments: string }[] }> {
  const response = await fetch(`${r.openai_base_url}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "qwen3", tools, messages, stream }),
  });
  if (response.status !== 200) throw new Error(`chat: HTTP ${response.status}: ${await response.text()}`);
  if (!stream) {
    const m = ((await response.json()) as any).choices[0].message;
    return { content: m.content ?? "", toolCalls: (m.tool_calls ?? []).map((c: any) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })) };
  }
  const out = { content: "", toolCalls: [] as { id: string; name: string; arguments: string }[] };
  for (const line of (await response.text()).split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const d = JSON.parse(line.slice(6)).choices[0]?.delta ?? {};
    out.content += d.content ?? "";
    for (const t of d.tool_calls ?? []) {
      const call = (out.toolCalls[t.index] ??= { id: "", name: "", arguments: "" });
      call.id += t.id ?? "";
      call.name += t.function?.name ?? "";
      call.arguments += t.function?.arguments ?? "";
    }
  }
  return out;
}

/** The harness's next messages: its echo of the answer (text trimmed, arguments compact, no reasoning), then the tool results. */
function after(messages: Msg[], a: Awaited<ReturnType<typeof chat>>): Msg[] {
  const echo: Msg = {
    role: "assistant",
    content: a.content.trim(),
    ...(a.toolCalls.length ? { tool_calls: a.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(JSON.parse(c.arguments)) } })) } : {}),
  };
  return [...messages, echo, ...a.toolCalls.map((c) => ({ role: "tool", tool_call_id: c.id, content: c.name === "read" ? "item,count\nbolts,12\nnuts,30\n" : "ok" }))];
}


test(
  "kill -9 of forge proxy --token-in mid-rollout: after a restart the rollout continues its chain (engine prompt = previous prompt + completion), one chain, one exported sample, 0 drift; a call cut by the kill gets its prompt again",
  async () => {
    // Streams are slow enough that one is still going when the proxy is killed.
    const sim = await startPolicySimulator({ seed: 11, script, chunkDelayMs: 25 });
    const dataDir = await mkdtemp(join(tmpdir(), "forge-token-in-kill9-"));
    let proxy = await spawnProxy(sim, dataDir);
    try {
      const register = async (url: string, task: string): Promise<Rollout> => {
        const reg = await fetch(`${url}/control/rollouts`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ experiment: "kill9", task_id: task }) });
        expect(reg.status).toBe(201);
        return (await reg.json()) as Rollout;
      };
      const a = await register(proxy.url, "stock-a");
      const b = await register(proxy.url, "stock-b");
      const user: Msg = { role: "user", content: "stock.csv lists items and counts. Write the total to total.txt." };
      let am: Msg[] = [{ role: "system", content: "You are a coding agent." }, user];
      am = after(am, await chat(a, am, false));
      am = after(am, await chat(a, am, true));
      const bm = after([user], await chat(b, [user], false));
      // B's second call is streaming when the proxy dies: its record is never written.
      const cut = fetch(`${b.openai_base_url}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${b.api_key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "qwen3", tools, messages: bm, stream: true }),
      }).then(async (r) => {
        const reader = r.body!.getReader();
        await reader.read();
        return reader;
      });
      const firstChunk = await cut;
      proxy.child.kill("SIGKILL");
      await proxy.child.exited;
      await firstChunk.read().catch(() => undefined);

      proxy = await spawnProxy(sim, dataDir);
      // Same keys and paths; the restarted proxy listens elsewhere.
      const moved = (r: Rollout): Rollout => ({ ...r, openai_base_url: r.openai_base_url.replace(/^http:\/\/[^/]+/, proxy.url) });
      // B's harness sends the cut call again.
      await chat(moved(b), bm, false);
      // A goes on to the end of its task.
      for (let i = 0; i < 3; i++) {
        const answer = await chat(moved(a), am, i % 2 === 0);
        am = after(am, answer);
        if (answer.toolCalls.length === 0) break;
      }
      const finish = await fetch(`${proxy.url}/control/rollouts/${a.rollout_id}/finish`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ reward: 1, status: "ok" }) });
      expect(finish.status).toBe(200);
      proxy.child.kill("SIGTERM");
      await proxy.child.exited;

      // At the engine: every prompt of A begins with exactly the previous prompt and completion, across the kill.
      const samplesA = sim.samples.filter((s) => s.rollout === a.rollout_id);
      expect(samplesA.length).toBe(5);
      for (let i = 1; i < samplesA.length; i++) {
        expect(startsWith(samplesA[i]!.prompt_token_ids, [...samplesA[i - 1]!.prompt_token_ids, ...samplesA[i - 1]!.token_ids])).toBe(true);
      }
      // B: the cut call reached the engine; sent again after the restart, its prompt is the same ids.
      const samplesB = sim.samples.filter((s) => s.rollout === b.rollout_id);
      expect(samplesB.length).toBe(3);
      expect(samplesB[2]!.prompt_token_ids).toEqual(samplesB[1]!.prompt_token_ids);
      expect(startsWith(samplesB[2]!.prompt_token_ids, [...samplesB[0]!.prompt_token_ids, ...samplesB[0]!.token_ids])).toBe(true);

      // The records: one chain per rollout, each call naming the call it continues.
      const calls: ModelCall[] = [];
      for await (const { record } of readRecords(dataDir)) if (record.kind.case === "modelCall") calls.push(record.kind.value);
      const callsA = calls.filter((c) => c.rolloutId === a.rollout_id);
      expect(callsA.map((c) => [c.tokenMode, c.tokenStatus, c.chainId, c.chainStart, c.chainStartDetail])).toEqual(callsA.map((_, i) => [TokenMode.TOKEN_IN, TokenStatus.COMPLETE, callsA[0]!.callId, i === 0 ? ChainStart.FIRST : ChainStart.UNSPECIFIED, ""]));
      expect(callsA.map((c) => c.chainParent)).toEqual(["", ...callsA.slice(0, -1).map((c) => c.callId)]);
      const callsB = calls.filter((c) => c.rolloutId === b.rollout_id);
      expect(callsB.map((c) => [c.chainStart, c.chainParent])).toEqual([[ChainStart.FIRST, ""], [ChainStart.UNSPECIFIED, callsB[0]!.callId]]);

      // The export: A is one sample with 0 drift tokens.
      const out = join(dataDir, "batch.jsonl");
      const run = Bun.spawn(["bun", "bin/forge.ts", "export", "--data", dataDir, "--format", "jsonl", "--out", out, "--min-group-size", "1", "--json"], { stdout: "pipe", stderr: "pipe" });
      const [printed, code] = [await new Response(run.stdout).text(), await run.exited];
      expect(code).toBe(0);
      const manifest = JSON.parse(printed) as { drift_tokens: number };
      const rows = (await readFile(out, "utf8")).trim().split("\n").map((l) => JSON.parse(l) as { rollout_id: string });
      expect({ rows: rows.filter((r) => r.rollout_id === a.rollout_id).length, drift: manifest.drift_tokens }).toEqual({ rows: 1, drift: 0 });
    } finally {
      proxy.child.kill("SIGKILL");
      await sim.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  },
  180_000,
);
