/**
 * How a stream ends is the proxy's to say, in every door (Chat, Messages, Responses):
 * - the terminal event (`[DONE]`, `message_stop`, `response.completed`) is sent only once the
 *   call is recorded: with the disk full, or token ids the record cannot hold, it is withheld;
 * - a stream cut short reaches the harness (the official SDKs) as an error, never as a whole
 *   answer;
 * - a JSON answer to a stream request reaches the SDK as its answer, not as an empty stream;
 * - events after `[DONE]` reach neither the harness nor the record;
 * - a stream past --max-stream-bytes ends with an error and a record saying why.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { fdatasync, fdatasyncSync, ftruncateSync, writevSync } from "node:fs";
import { promisify } from "node:util";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import type { WriterIo } from "../../records/index.ts";
import { CallStatus } from "../../schemas/index.ts";
import { chaosMarker } from "./chaos-upstream.ts";
import { readAll, startProxyUnderTest, type ProxyUnderTest } from "./proxy-under-test.ts";

type Door = "chat" | "messages" | "responses";
const DOORS: Door[] = ["chat", "messages", "responses"];
const TERMINAL: Record<Door, RegExp> = { chat: /data: \[DONE\]/, messages: /event: message_stop/, responses: /event: response\.completed/ };
const FAILURE: Record<Door, RegExp> = { chat: /data: \{"error":/, messages: /event: error/, responses: /event: response\.failed/ };

/** A streamed call through `door` with `content` as the user message. */
function post(t: ProxyUnderTest, r: { rollout_id: string; api_key: string }, door: Door, content: string, stream = true): Promise<Response> {
  const path = door === "chat" ? "/v1/chat/completions" : door === "messages" ? "/v1/messages" : "/v1/responses";
  const body =
    door === "chat"
      ? { model: "chaos", stream, messages: [{ role: "user", content }] }
      : door === "messages"
        ? { model: "chaos", stream, max_tokens: 64, messages: [{ role: "user", content }] }
        : { model: "chaos", stream, input: content };
  return fetch(`${t.proxy.url}/r/${r.rollout_id}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function recorded(t: ProxyUnderTest, res: Response) {
  const id = res.headers.get("x-forge-call-id");
  return (await t.calls()).find((c) => c.callId === id);
}

describe("the terminal event waits for the record", () => {
  let failing = false;
  const io: WriterIo = {
    writev: (fd, buffers, position) => {
      if (failing) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", errno: -28 });
      return writevSync(fd, buffers, position);
    },
    ftruncate: (fd, length) => ftruncateSync(fd, length),
    fdatasync: promisify(fdatasync),
    fdatasyncSync: (fd) => fdatasyncSync(fd),
  };

  for (const door of DOORS) {
    test(`${door}: the disk fills mid-stream: no ${TERMINAL[door].source}, an error event instead`, async () => {
      const t = await startProxyUnderTest({ chunks: 4, proxy: { recorderIo: io } });
      try {
        const r = await t.register();
        failing = true; // the recorder has not failed yet: it learns at this stream's end
        const res = await post(t, r, door, "first call after the disk filled");
        const { text } = await readAll(res);
        failing = false;
        expect(res.status).toBe(200);
        expect(await recorded(t, res)).toBeUndefined();
        expect(text).not.toMatch(TERMINAL[door]);
        expect(text).toMatch(FAILURE[door]);
        expect(text).toContain("could not be recorded");
      } finally {
        failing = false;
        await t.close();
      }
    });
  }

  for (const door of DOORS) {
    test(`${door}: token ids the record cannot hold: no ${TERMINAL[door].source}; the next call is served`, async () => {
      const t = await startProxyUnderTest({ chunks: 3 });
      try {
        const r = await t.register();
        const res = await post(t, r, door, `${chaosMarker("badids")} ids past uint32`);
        const { text } = await readAll(res);
        expect(await recorded(t, res)).toBeUndefined();
        expect(text).not.toMatch(TERMINAL[door]);
        expect(text).toMatch(FAILURE[door]);
        // One bad answer does not fail the log: the next call ends normally.
        const next = await post(t, r, door, "a normal call");
        expect((await readAll(next)).text).toMatch(TERMINAL[door]);
        expect((await recorded(t, next))?.status).toBe(CallStatus.OK);
      } finally {
        await t.close();
      }
    });
  }
});

describe("what the official SDKs see", () => {
  let t: ProxyUnderTest;
  let r: { rollout_id: string; api_key: string; openai_base_url: string };
  beforeAll(async () => {
    t = await startProxyUnderTest({ chunks: 4 });
    r = await t.register();
  });
  afterAll(() => t.close());

  const openai = () => new OpenAI({ apiKey: r.api_key, baseURL: `${t.proxy.url}/r/${r.rollout_id}/v1`, maxRetries: 0 });
  const anthropic = () => new Anthropic({ apiKey: r.api_key, baseURL: `${t.proxy.url}/r/${r.rollout_id}`, maxRetries: 0 });

  /** Runs the SDK's streaming call for `door` to its end: the answer text, or the error it raised. */
  async function sdkStream(door: Door, content: string): Promise<{ text?: string; error?: string }> {
    try {
      if (door === "chat") {
        let text = "";
        const stream = await openai().chat.completions.create({ model: "chaos", stream: true, messages: [{ role: "user", content }] });
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
        return { text };
      }
      if (door === "messages") {
        const message = await anthropic().messages.stream({ model: "chaos", max_tokens: 64, messages: [{ role: "user", content }] }).finalMessage();
        return { text: message.content.map((b) => (b.type === "text" ? b.text : "")).join("") };
      }
      const response = await openai().responses.stream({ model: "chaos", input: content }).finalResponse();
      if (response.status !== "completed") return { error: `response ${response.status}: ${JSON.stringify(response.error)}` };
      return { text: response.output_text };
    } catch (error) {
      return { error: (error as Error).message };
    }
  }

  for (const door of DOORS) {
    test(`${door}: a stream cut short (no [DONE], no finish reason) is an error, not a truncated answer`, async () => {
      const got = await sdkStream(door, `${chaosMarker("nodone", 2)} cut`);
      expect(got.text).toBeUndefined();
      expect(got.error).toMatch(/cut short|before the response was complete|not complete|incomplete|ended/i);
      const call = (await t.calls()).at(-1)!;
      expect(call.status).toBe(CallStatus.UPSTREAM_ERROR);
    });

    test(`${door}: a JSON answer to a stream request reaches the SDK as the answer`, async () => {
      const got = await sdkStream(door, `${chaosMarker("jsonstream")} whole`);
      expect(got).toEqual({ text: "w0 w1 w2 w3 " });
      const call = (await t.calls()).at(-1)!;
      expect(call.status).toBe(CallStatus.OK);
      expect(call.completionTokenIds).toEqual([1600, 1601, 1602, 1603]);
    });

    test(`${door}: events after [DONE] reach neither the harness nor the record`, async () => {
      const res = await post(t, r, door, `${chaosMarker("afterdone", 3)} late`);
      const { text } = await readAll(res);
      expect(text).not.toContain("after-done");
      expect(text).toMatch(TERMINAL[door]);
      if (door === "chat") expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
      const call = (await recorded(t, res))!;
      expect(call.status).toBe(CallStatus.OK);
      expect(call.completionTokenIds).toEqual([1600, 1601, 1602, 1603]);
      expect(new TextDecoder().decode(call.responseBody)).not.toContain("after-done");
      expect((await sdkStream(door, `${chaosMarker("afterdone", 3)} late`)).text).toBe("w0 w1 w2 w3 ");
    });
  }
});

describe("stream size cap", () => {
  let t: ProxyUnderTest;
  beforeAll(async () => {
    t = await startProxyUnderTest({ proxy: { maxStreamBytes: 256 * 1024 } });
  });
  afterAll(() => t.close());

  for (const door of DOORS) {
    test(`${door}: a stream past --max-stream-bytes ends with an error event and a record saying why`, async () => {
      const r = await t.register();
      const res = await post(t, r, door, `${chaosMarker("huge", 200)} big`); // ~3.2 MB upstream
      const { text } = await readAll(res);
      expect(text).not.toMatch(TERMINAL[door]);
      expect(text).toMatch(FAILURE[door]);
      expect(text).toContain("--max-stream-bytes");
      const c = (await recorded(t, res))!;
      expect(c.status).toBe(CallStatus.UPSTREAM_ERROR);
      expect(c.error).toMatch(/more than 262144 bytes.*--max-stream-bytes/);
      // The record holds what the harness got before the cut: bounded by the cap, not the stream
      // (a Responses failure repeats the text in its four closing events, hence up to 5x the cap).
      expect(c.responseBody.length).toBeLessThan(6 * 256 * 1024);
    });
  }
});
