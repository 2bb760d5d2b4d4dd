/**
 * What a request's bytes can do to the proxy: its size, its framing on the connection, its
 * nesting. Each of these attacks is tested here only.
 *
 * - a body far over `--max-body-bytes` (a declared 3 MB against 1 MiB) used to meet Bun's own
 *   `maxRequestBodySize` and an empty 413; the proxy now answers every declared length over
 *   the limit itself, with its JSON 413 naming the limit and the flag;
 * - pipelined requests: Bun 1.4.5 closes a connection whose next request arrives before the
 *   current one is answered, and aborts the current one (docs/proxy.md, Pipelining). The call
 *   was still recorded as answered (token status MISSING); now nothing is recorded for a call
 *   whose harness was gone before it went upstream;
 * - JSON nested 100,000 deep: the translators recurse, so Messages and Responses bodies nested
 *   over 512 levels are a 400 naming the nesting.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";
import { startProxyUnderTest, type ProxyUnderTest } from "../faults/proxy-under-test.ts";
import { CallStatus } from "../../schemas/index.ts";

const LIMIT = 1024 * 1024;
const json = { "content-type": "application/json" };
let h: ProxyHarness;
beforeAll(async () => {
  h = await startProxyHarness({ proxy: { maxBodyBytes: LIMIT } });
});
afterAll(() => h?.close());

/** Writes `bytes` on a fresh connection, and gives back what came back until it closed (or `waitMs`). */
function raw(port: number, bytes: string, waitMs = 3000): Promise<string> {
  return new Promise((resolve) => {
    let got = "";
    const socket = connect(port, "127.0.0.1", () => socket.write(bytes));
    socket.on("data", (data) => (got += data.toString()));
    socket.on("error", () => {});
    const timer = setTimeout(() => socket.destroy(), waitMs);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(got);
    });
  });
}

const port = () => Number(new URL(h.proxy.url).port);

describe("a body over --max-body-bytes", () => {
  for (const size of [1.5e6, 3e6, 40e6]) {
    test(`${size / 1e6} MB against 1 MiB: the proxy's JSON 413 naming the limit and the flag`, async () => {
      const r = await h.register();
      const served = h.sims[0]!.samples.length;
      const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(size) }] });
      const response = await fetch(`${r.openai_base_url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${r.api_key}` }, body });
      expect(response.status).toBe(413);
      const answer = (await response.json()) as { error: { message: string; code: string } };
      expect(answer.error.code).toBe("request_too_large");
      expect(answer.error.message).toContain(`limit of ${LIMIT} bytes`);
      expect(answer.error.message).toContain("--max-body-bytes");
      // Nothing of it went upstream or was recorded as a model call.
      expect(h.sims[0]!.samples.length).toBe(served);
      expect(await h.calls(r.rollout_id)).toHaveLength(0);
    });
  }

  test("a declared 3 GB with a few bytes sent: the JSON 413 at once, the connection closed", async () => {
    const r = await h.register();
    const head = `POST /r/${r.rollout_id}/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${r.api_key}\r\nContent-Length: 3000000000\r\n\r\n{"model":`;
    const answer = await raw(port(), head);
    expect(answer).toStartWith("HTTP/1.1 413");
    expect(answer).toContain("--max-body-bytes");
    expect(answer.toLowerCase()).toContain("connection: close");
  });

  test("a chunked body over the limit is cut there with the same 413", async () => {
    const r = await h.register();
    const served = h.sims[0]!.samples.length;
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 3e6) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const response = await fetch(`${r.openai_base_url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${r.api_key}` }, body: stream });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain("--max-body-bytes");
    expect(h.sims[0]!.samples.length).toBe(served);
    expect(await h.calls(r.rollout_id)).toHaveLength(0);
  });
});

describe("pipelined requests", () => {
  const chat = (r: { rollout_id: string; api_key: string }, content: string) => {
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content }] });
    return `POST /r/${r.rollout_id}/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${r.api_key}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  };

  test("two chat calls in one packet: whatever Bun answers, no call is recorded that was not answered", async () => {
    const r = await h.register();
    const answer = await raw(port(), chat(r, "first") + chat(r, "second"));
    const answered = answer.split("HTTP/1.1 200").length - 1;
    // Give the proxy time to finish (and record) anything it was still working on.
    await Bun.sleep(500);
    const calls = await h.calls(r.rollout_id);
    // Bun 1.4.5 answers none of them and closes the connection (docs/proxy.md, Pipelining);
    // should a later Bun answer them, each answered call is recorded once.
    expect(calls.filter((call) => call.httpStatus === 200)).toHaveLength(answered);
    expect(calls).toHaveLength(answered);
    // The connection is usable on its own: the same call alone is answered and recorded.
    const alone = await raw(port(), chat(r, "alone").replace("Host: x", "Host: x\r\nConnection: close"));
    expect(alone).toStartWith("HTTP/1.1 200");
    expect(await h.calls(r.rollout_id)).toHaveLength(answered + 1);
  });

  test("the next request sent while the first is upstream: the first ends client_aborted, never recorded as answered", async () => {
    const r = await h.register();
    const answer = await new Promise<string>((resolve) => {
      let got = "";
      const socket = connect(port(), "127.0.0.1", () => {
        socket.write(chat(r, "first"));
        setTimeout(() => socket.write(chat(r, "second")), 5);
      });
      socket.on("data", (data) => (got += data.toString()));
      socket.on("error", () => {});
      socket.on("close", () => resolve(got));
      setTimeout(() => socket.destroy(), 3000);
    });
    await Bun.sleep(500);
    const calls = await h.calls(r.rollout_id);
    const answered = answer.split("HTTP/1.1 200").length - 1;
    expect(calls.filter((call) => call.httpStatus === 200)).toHaveLength(answered);
    // What went upstream before the harness was gone is recorded as cut off, not as answered.
    for (const call of calls.filter((call) => call.httpStatus !== 200)) expect(call.status).toBe(CallStatus.CLIENT_ABORTED);
  });
});

describe("deeply nested JSON", () => {
  let t: ProxyUnderTest;
  beforeAll(async () => {
    t = await startProxyUnderTest();
  });
  afterAll(() => t.close());

  const deep = "[".repeat(100_000) + "]".repeat(100_000);
  const cases: [string, string][] = [
    ["/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"metadata":${deep}}`],
    ["/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":${deep}}]}`],
    ["/v1/responses", `{"model":"m","input":"x","metadata":${deep}}`],
    ["/v1/responses", `{"model":"m","input":${deep}}`],
  ];
  for (const [path, body] of cases) {
    test(`100k-deep JSON on ${path} is a 400 naming the nesting, and nothing goes upstream`, async () => {
      const r = await t.register();
      const sent = t.upstream.requests.length;
      const res = await fetch(`${t.proxy.url}/r/${r.rollout_id}${path}`, { method: "POST", headers: { ...json, authorization: `Bearer ${r.api_key}` }, body });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.message).toMatch(/nested more than 512 levels/);
      expect(t.upstream.requests.length).toBe(sent);
    });
  }
});
