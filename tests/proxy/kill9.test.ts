/**
 * SIGKILL of a real `forge proxy` process during 32 concurrent streams: the log reopens
 * cleanly and every call whose stream had completed at the client is in it, intact.
 */
import { expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CallStatus, TokenStatus, type ModelCall } from "../../schemas/index.ts";
import { openSegmentLog, readRecords } from "../../records/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";

test("kill -9 mid-way through 32 concurrent streams loses no completed call", async () => {
  const sim = await startPolicySimulator({ seed: 3, chunkDelayMs: 8 });
  const dataDir = await mkdtemp(join(tmpdir(), "forge-proxy-kill9-"));
  const token = "kill9-admin";
  const child = Bun.spawn(
    ["bun", "bin/forge.ts", "proxy", "--listen", "127.0.0.1:0", "--upstream", `${sim.url}/v1`, "--data", dataDir, "--admin-token", token, "--json", "--group-commit-ms", "1000"],
    { stdout: "pipe", stderr: "pipe" },
  );
  try {
    const reader = child.stdout.getReader();
    let line = "";
    while (!line.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`forge proxy exited early: ${await new Response(child.stderr).text()}`);
      line += new TextDecoder().decode(value);
    }
    const { url } = JSON.parse(line.split("\n")[0]!) as { url: string };
    const completed = new Map<string, string>(); // call id -> SSE text the client received
    let killed = false;
    const streams = Array.from({ length: 32 }, async (_, i) => {
      const reg = await fetch(`${url}/control/rollouts`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ experiment: "kill9", task_id: `t${i}` }),
      });
      const r = (await reg.json()) as { api_key: string; openai_base_url: string };
      try {
        const response = await fetch(`${r.openai_base_url}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "qwen3", stream: true, messages: [{ role: "user", content: "go ".repeat(1 + i * 2) }] }),
        });
        const text = await response.text();
        if (!killed && text.endsWith("data: [DONE]\n\n")) completed.set(response.headers.get("x-forge-call-id")!, text);
      } catch {
        // cut by the kill
      }
    });
    // Kill once about half the streams have completed.
    for (let i = 0; i < 4000 && completed.size < 12; i++) await Bun.sleep(5);
    killed = true;
    child.kill("SIGKILL");
    await child.exited;
    await Promise.all(streams);
    expect(completed.size).toBeGreaterThanOrEqual(12);
    expect(completed.size).toBeLessThan(32);

    const log = await openSegmentLog(dataDir); // opens cleanly: stale LOCK taken over, torn tail cut
    await log.close();
    const calls = new Map<string, ModelCall>();
    for await (const { record } of readRecords(dataDir, { onCorruption: (c) => { throw new Error(`corruption: ${JSON.stringify(c)}`); } })) {
      if (record.kind.case === "modelCall") calls.set(record.kind.value.callId, record.kind.value);
    }
    for (const [callId, text] of completed) {
      const call = calls.get(callId);
      expect(call).toBeDefined();
      expect(call!.status).toBe(CallStatus.OK);
      expect(call!.tokenStatus).toBe(TokenStatus.COMPLETE);
      expect(new TextDecoder().decode(call!.responseBody)).toBe(text);
      expect(call!.completionTokenIds.length).toBeGreaterThan(0);
    }
  } finally {
    child.kill("SIGKILL");
    await sim.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}, 60_000);
