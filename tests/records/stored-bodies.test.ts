/**
 * Request bodies stored as references (docs/record-format.md, "Stored bodies"), end to end:
 * bodies sent through the real proxy in every protocol, with odd formatting and screenshots,
 * come back byte for byte from every reader (requestBodyOf, the trajectory route, the
 * export's prompts, analytics' call_bodies); a log written before stored bodies
 * (records/fixtures/whole-bodies-log) still reads through the same functions.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { queryRows } from "../../analytics/metrics.ts";
import { openAnalytics } from "../../analytics/session.ts";
import { requestBodiesOf, startProxyHarness, upstreamRequestsOf, type ProxyHarness } from "../../proxy/testing.ts";
import { createContentStore, readRecords, requestBodyOf, upstreamRequestOf } from "../../records/index.ts";
import { conversationBody, screenshots } from "../../records/testing.ts";
import { collectRollouts, exportTrajectories, requestMessages, trajectoryOf } from "../../trajectories/index.ts";
import { Protocol } from "../../schemas/index.ts";

const decoder = new TextDecoder();
const FIXTURE = join(import.meta.dir, "..", "..", "records", "fixtures", "whole-bodies-log");

describe("a log written before stored bodies", () => {
  // Written by the proxy at commit e71c777: one rollout of 3 Chat turns carrying a 1.5 KB PNG,
  // then an Anthropic Messages and a Responses call with it (translated, so upstream bodies
  // are stored whole), the PNG as a Blob record, and the rollout's result.
  test("every reader gets request_body as it is", async () => {
    const records = [];
    for await (const { record } of readRecords(FIXTURE)) records.push(record);
    expect(records.map((r) => r.kind.case)).toEqual(["rollout", "blob", "modelCall", "modelCall", "modelCall", "modelCall", "modelCall", "rolloutResult"]);
    const calls = records.flatMap((r) => (r.kind.case === "modelCall" ? [r.kind.value] : []));
    const store = createContentStore();
    for (const call of calls) {
      expect(call.requestStored).toBeUndefined();
      expect(requestBodyOf(call, store)).toBe(call.requestBody);
      const up = upstreamRequestOf(call, store) as { messages: unknown[] };
      expect(up.messages.length).toBeGreaterThan(0);
    }
    expect(calls.map((c) => c.protocol)).toEqual([Protocol.CHAT, Protocol.CHAT, Protocol.CHAT, Protocol.ANTHROPIC_MESSAGES, Protocol.RESPONSES]);
    const rolloutId = calls[0]!.rolloutId;
    const trajectory = await trajectoryOf(readRecords(FIXTURE), rolloutId);
    expect(trajectory!.samples.length).toBeGreaterThan(0);
    for await (const collected of collectRollouts(readRecords(FIXTURE))) {
      expect(requestMessages(collected.calls[2]!.call, collected.content).map((m) => m.role)).toEqual(["system", "user", "assistant", "user", "assistant", "user"]);
    }
  });
});

describe("through the real proxy", () => {
  let h: ProxyHarness;
  beforeAll(async () => {
    h = await startProxyHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  /** Sends `body` as these exact bytes to the door of `protocol`. */
  async function send(r: { api_key: string; openai_base_url: string }, protocol: string, body: Uint8Array): Promise<void> {
    const path = protocol === "anthropic" ? "/messages" : protocol === "responses" ? "/responses" : protocol.startsWith("completions") ? "/completions" : "/chat/completions";
    const response = await fetch(`${r.openai_base_url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body,
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${protocol}: ${response.status} ${text}`);
  }

  const cases = [
    ["chat", { screenshots: screenshots(3, 4000, "chat"), keepScreenshots: 2 }],
    ["chat", { space: 3 }],
    ["anthropic", { screenshots: screenshots(2, 4000, "anthropic") }],
    ["responses", { screenshots: screenshots(2, 4000, "responses"), space: 1 }],
    ["completions", {}],
  ] as const;
  for (const [protocol, options] of cases) {
    test(`${protocol} ${JSON.stringify(Object.keys(options))}: 8 turns rebuild byte for byte, stored far below their sum`, async () => {
      const r = await h.register();
      const sent: Uint8Array[] = [];
      for (let turn = 1; turn <= 8; turn++) {
        // max_tokens / stream kept small and off: the simulator's answer is not what is tested.
        const body = conversationBody(protocol, turn, r.rollout_id, { resultBytes: 600, ...options, extra: protocol === "anthropic" ? { stream: false, max_tokens: 8 } : { stream: false, ...(protocol === "responses" ? { max_output_tokens: 8 } : { max_tokens: 8 }) } });
        sent.push(body);
        await send(r, protocol, body);
      }
      const calls = await h.calls(r.rollout_id);
      expect(calls.length).toBe(8);
      requestBodiesOf(calls).forEach((body, i) => expect(Buffer.from(body).equals(Buffer.from(sent[i]!))).toBe(true));
      if (protocol !== "completions") expect(calls.slice(1).every((c) => c.requestBody.length === 0 && c.requestStored!.prefixSeq === c.seq - 1)).toBe(true);
      const stored = calls.reduce((n, c) => n + c.content.reduce((m, p) => m + p.length, 0) + c.requestBody.length + c.upstreamRequestBody.length, 0);
      const total = sent.reduce((n, b) => n + b.length, 0);
      expect(stored).toBeLessThan(total / 2);
      // Translated calls: what went upstream is rebuilt too, and carries the screenshots.
      if (protocol === "anthropic" || protocol === "responses") {
        const ups = upstreamRequestsOf(calls) as { messages: unknown[] }[];
        expect(ups.every((u) => Array.isArray(u.messages))).toBe(true);
        if (protocol === "anthropic" && "screenshots" in options) expect(JSON.stringify(ups.at(-1)).includes(options.screenshots[0]!)).toBe(true);
      }
    });
  }

  test("every reader of the log: the trajectory route, the export's prompts, analytics' call_bodies", async () => {
    const r = await h.register();
    const shots = screenshots(2, 5000, "readers");
    const sent: Uint8Array[] = [];
    for (let turn = 1; turn <= 5; turn++) {
      const body = conversationBody("chat", turn, r.rollout_id, { screenshots: shots, extra: { stream: false, max_tokens: 8 } });
      sent.push(body);
      await send(r, "chat", body);
    }
    expect((await h.control(`/control/rollouts/${r.rollout_id}/finish`, { reward: 1, status: "ok" })).status).toBe(200);
    const route = await h.control(`/control/rollouts/${r.rollout_id}/trajectory`, undefined, "GET");
    const trajectory = (await route.json()) as { samples: unknown[] };
    expect(trajectory.samples.length).toBeGreaterThan(0);

    const out = await mkdtemp(join(tmpdir(), "forge-stored-export-"));
    try {
      const manifest = await exportTrajectories(readRecords(h.dataDir), { format: "jsonl", out: join(out, "batch.jsonl"), minGroupSize: 1 });
      expect(manifest.message_errors).toBe(0);
      const text = await Bun.file(join(out, "batch.jsonl")).text();
      const rows = text
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { rollout_id: string; prompt: { role: string; content: string }[] });
      const mine = rows.filter((row) => row.rollout_id === r.rollout_id);
      expect(mine.length).toBeGreaterThan(0);
      // The first sample's prompt is the first call's conversation: system and task, as sent.
      const first = JSON.parse(decoder.decode(sent[0]!)) as { messages: { content: string }[] };
      expect(mine[0]!.prompt.map((m) => m.content)).toEqual(first.messages.map((m) => m.content));

      const session = await openAnalytics(h.dataDir);
      try {
        const bodies = await queryRows(session.connection, `SELECT seq, request_body FROM call_bodies WHERE rollout_id = '${r.rollout_id}' ORDER BY seq`);
        expect(bodies.map((b) => b.request_body)).toEqual(sent.map((b) => decoder.decode(b)));
      } finally {
        session.close();
      }
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
});

