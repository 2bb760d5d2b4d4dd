/**
 * Upstream failures reach each front door's harness in its own protocol's error shape, and
 * the failed call is recorded.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { CallStatus, Protocol } from "../../schemas/index.ts";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";

let h: ProxyHarness;
beforeAll(async () => {
  // Port 1 on loopback: nothing listens, the upstream is unreachable.
  h = await startProxyHarness({ simulators: 0, proxy: { upstreams: ["http://127.0.0.1:1/v1"] } });
});
afterAll(async () => {
  await h?.close();
});

test("unreachable upstream: Anthropic error body for Messages, OpenAI error body for Responses", async () => {
  const r = (await h.register()) as any;
  const anthropic = new Anthropic({ baseURL: r.anthropic_base_url, apiKey: r.api_key, maxRetries: 0 });
  const a = await anthropic.messages.create({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }).catch((e) => e);
  expect(a).toBeInstanceOf(Anthropic.APIError);
  expect(a.status).toBe(502);
  expect(a.error).toMatchObject({ type: "error", error: { type: "api_error" } });
  expect(a.error.error.message).toContain("could not be reached");

  const openai = new OpenAI({ baseURL: r.openai_base_url, apiKey: r.api_key, maxRetries: 0 });
  const o = await openai.responses.create({ model: "m", input: "hi" }).catch((e) => e);
  expect(o).toBeInstanceOf(OpenAI.APIError);
  expect(o.status).toBe(502);
  expect(o.error).toMatchObject({ type: "server_error" });

  const calls = await h.calls(r.rollout_id);
  expect(calls.map((c) => [c.protocol, c.status])).toEqual([
    [Protocol.ANTHROPIC_MESSAGES, CallStatus.UPSTREAM_UNREACHABLE],
    [Protocol.RESPONSES, CallStatus.UPSTREAM_UNREACHABLE],
  ]);
});
