/**
 * Bad input and upstream failures: each gets a clear OpenAI-style error body and status, and
 * the calls that reached the pipeline are recorded with their failure.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { CallStatus, TokenStatus } from "../../schemas/index.ts";
import { NOT_AN_ENGINE, startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";

let h: ProxyHarness;
beforeAll(async () => {
  h = await startProxyHarness({ proxy: { maxBodyBytes: 64 * 1024 } });
});
afterAll(async () => {
  await h.close();
});

type Registered = Awaited<ReturnType<ProxyHarness["register"]>>;
const post = (r: Registered, body: string | ReadableStream<Uint8Array> | null, headers: Record<string, string> = {}) =>
  fetch(`${r.openai_base_url}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json", ...headers }, body });

async function expectError(response: Response, status: number, code: string, text?: RegExp) {
  expect(response.status).toBe(status);
  const body = (await response.json()) as any;
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"]);
  expect(body.error.code).toBe(code);
  if (text) expect(body.error.message).toMatch(text);
  return body;
}

const chat = { model: "qwen3", messages: [{ role: "user", content: "hi" }] };

describe("bad requests", () => {
  test("invalid JSON → 400", async () => {
    const r = await h.register();
    await expectError(await post(r, "{not json"), 400, "invalid_json", /not valid JSON/);
  });
  test("a body that is not an object, or misses messages → 400 naming the field", async () => {
    const r = await h.register();
    await expectError(await post(r, "[1]"), 400, "invalid_json", /JSON object/);
    const body = await expectError(await post(r, JSON.stringify({ model: "m" })), 400, "invalid_value", /messages/);
    expect(body.error.param).toBe("messages");
  });
  test("wrong content type → 415", async () => {
    const r = await h.register();
    await expectError(await post(r, JSON.stringify(chat), { "content-type": "text/plain" }), 415, "unsupported_media_type", /application\/json/);
  });
  test("body over the limit → 413, declared or streamed", async () => {
    const r = await h.register();
    const big = JSON.stringify({ ...chat, messages: [{ role: "user", content: "x".repeat(100 * 1024) }] });
    await expectError(await post(r, big), 413, "request_too_large", /--max-body-bytes/);
    // Chunked, without Content-Length: cut once the limit is passed.
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 40; i++) controller.enqueue(new TextEncoder().encode("x".repeat(4096)));
        controller.close();
      },
    });
    await expectError(await post(r, chunks), 413, "request_too_large");
  });
  test("unknown rollout → 404", async () => {
    const r = await h.register();
    const response = await fetch(`${h.proxy.url}/r/no-such-rollout/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" },
      body: JSON.stringify(chat),
    });
    await expectError(response, 404, "rollout_not_found", /no-such-rollout/);
  });
  test("missing or wrong key → 401; another rollout's key does not open this one", async () => {
    const a = await h.register();
    const b = await h.register();
    await expectError(await post(a, JSON.stringify(chat), { authorization: "" }), 401, "missing_api_key");
    await expectError(await post(a, JSON.stringify(chat), { authorization: "Bearer fk-wrong" }), 401, "invalid_api_key");
    await expectError(await post(a, JSON.stringify(chat), { authorization: `Bearer ${b.api_key}` }), 401, "invalid_api_key");
    const viaClient = new OpenAI({ baseURL: `${h.proxy.url}/v1`, apiKey: "fk-nobody", maxRetries: 0 });
    const error = await viaClient.chat.completions.create(chat as any).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
  });
  test("/v1 routes find the rollout by its key (Bearer or x-api-key)", async () => {
    const r = await h.register();
    const viaBearer = await new OpenAI({ baseURL: `${h.proxy.url}/v1`, apiKey: r.api_key, maxRetries: 0 }).chat.completions.create(chat as any);
    expect(viaBearer.choices[0]!.message.content).toContain("hi");
    const viaHeader = await fetch(`${h.proxy.url}/v1/chat/completions`, { method: "POST", headers: { "x-api-key": r.api_key, "content-type": "application/json" }, body: JSON.stringify(chat) });
    expect(viaHeader.status).toBe(200);
    expect((await h.calls(r.rollout_id)).length).toBe(2);
    const models = await new OpenAI({ baseURL: `${h.proxy.url}/v1`, apiKey: r.api_key, maxRetries: 0 }).models.list();
    expect(models.data.length).toBeGreaterThan(0);
  });
  test("control routes need the admin token; bodies are validated", async () => {
    const noToken = await fetch(`${h.proxy.url}/control/rollouts`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    await expectError(noToken, 401, "invalid_admin_token");
    const bad = await h.control("/control/rollouts", { experiment: "e" });
    await expectError(bad, 400, "invalid_body", /task_id/);
    const r = await h.register();
    await expectError(await h.control(`/control/rollouts/${r.rollout_id}/finish`, { reward: "high", status: "ok" }), 400, "invalid_body", /reward/);
  });
});

describe("upstream failures", () => {
  test("upstream HTTP error is passed through with its status and recorded as UPSTREAM_ERROR", async () => {
    const r = await h.register();
    const error = await h.client(r).chat.completions.create({ ...chat, max_tokens: 0 } as any).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const [call] = await h.calls(r.rollout_id);
    expect(call!.status).toBe(CallStatus.UPSTREAM_ERROR);
    expect(call!.httpStatus).toBe(400);
    expect(call!.error).toContain("HTTP 400");
  });

  test("upstream down → 502, recorded as UPSTREAM_UNREACHABLE", async () => {
    const dead = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const url = `http://127.0.0.1:${dead.port}/v1`;
    await dead.stop(true);
    const d = await startProxyHarness({ simulators: 0, proxy: { upstreams: [url] } });
    try {
      const r = await d.register();
      const response = await fetch(`${r.openai_base_url}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" }, body: JSON.stringify(chat) });
      await expectError(response, 502, "upstream_unreachable", /could not be reached/);
      const [call] = await d.calls(r.rollout_id);
      expect(call!.status).toBe(CallStatus.UPSTREAM_UNREACHABLE);
      expect(call!.httpStatus).toBe(502);
    } finally {
      await d.close();
    }
  });

  test("upstream slow: 504 on the first-byte timeout (a non-streamed answer that takes too long)", async () => {
    // The simulator delays only streamed tokens, so a stand-in that answers late is used here.
    const slow = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: async () => (await Bun.sleep(1500), Response.json({})) });
    const s = await startProxyHarness({ simulators: 0, proxy: { upstreams: [`http://127.0.0.1:${slow.port}/v1`], firstByteTimeoutMs: 200, ...NOT_AN_ENGINE } });
    try {
      const r = await s.register();
      const response = await fetch(`${r.openai_base_url}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" }, body: JSON.stringify(chat) });
      await expectError(response, 504, "upstream_timeout", /within 200 ms/);
      const [call] = await s.calls(r.rollout_id);
      expect(call!.status).toBe(CallStatus.TIMEOUT);
      expect(call!.httpStatus).toBe(504);
    } finally {
      await s.close();
      await slow.stop(true);
    }
  });

  test("a non-streamed body that stalls after its headers → 504, recorded as TIMEOUT", async () => {
    const stall = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      fetch: () =>
        new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('{"id":')) }), { headers: { "content-type": "application/json" } }),
    });
    const s = await startProxyHarness({ simulators: 0, proxy: { upstreams: [`http://127.0.0.1:${stall.port}/v1`], idleTimeoutMs: 200, ...NOT_AN_ENGINE } });
    try {
      const r = await s.register();
      const response = await fetch(`${r.openai_base_url}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" }, body: JSON.stringify(chat) });
      await expectError(response, 504, "upstream_timeout", /200 ms/);
      const [call] = await s.calls(r.rollout_id);
      expect(call!.status).toBe(CallStatus.TIMEOUT);
    } finally {
      await s.close();
      await stall.stop(true);
    }
  });

  test("upstream stalls mid-stream: the idle timeout ends the stream with an error event, recorded as TIMEOUT", async () => {
    const s = await startProxyHarness({ sim: { chunkDelayMs: 600 }, proxy: { idleTimeoutMs: 200 } });
    try {
      const r = await s.register();
      const streamed = await fetch(`${r.openai_base_url}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" },
        body: JSON.stringify({ ...chat, stream: true, max_tokens: 4 }),
      });
      const text = await streamed.text();
      // The first chunk comes at once, the next after 600 ms: a stall past the 200 ms idle timeout.
      expect(streamed.status).toBe(200);
      expect(text).toContain("upstream_timeout");
      const [call] = await s.calls(r.rollout_id);
      expect(call!.status).toBe(CallStatus.TIMEOUT);
      expect(call!.error).toContain("200 ms");
      expect(call!.tokenStatus).toBe(TokenStatus.PARTIAL);
    } finally {
      await s.close();
    }
  });

  test("client disconnect mid-stream aborts the upstream and records CLIENT_ABORTED with the tokens so far", async () => {
    const s = await startProxyHarness({ sim: { chunkDelayMs: 30 } });
    try {
      const r = await s.register();
      const controller = new AbortController();
      const response = await fetch(`${r.openai_base_url}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "qwen3", messages: [{ role: "user", content: "please write a long answer about many things at length" }], stream: true }),
        signal: controller.signal,
      });
      const reader = response.body!.getReader();
      let seen = "";
      while ((seen.match(/data: /g) ?? []).length < 4) seen += new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      let calls = await s.calls(r.rollout_id);
      for (let i = 0; i < 50 && calls.length === 0; i++) {
        await Bun.sleep(20);
        calls = await s.calls(r.rollout_id);
      }
      const [call] = calls;
      expect(call!.status).toBe(CallStatus.CLIENT_ABORTED);
      expect(call!.tokenStatus).toBe(TokenStatus.PARTIAL);
      expect(call!.completionTokenIds.length).toBeGreaterThan(0);
      const sample = s.sims[0]!.samples.at(-1)!;
      expect(sample.token_ids.slice(0, call!.completionTokenIds.length)).toEqual(call!.completionTokenIds);
      expect(call!.completionTokenIds.length).toBeLessThan(sample.token_ids.length);
    } finally {
      await s.close();
    }
  });
});
