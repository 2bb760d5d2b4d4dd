import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";
import { isModelRoute, startProxyBridge } from "./bridge.ts";

let h: ProxyHarness;
let dir: string;
let bridge: Awaited<ReturnType<typeof startProxyBridge>>;
beforeAll(async () => {
  h = await startProxyHarness({ proxy: { maxBodyBytes: 1024 * 1024 } });
  dir = mkdtempSync(join(tmpdir(), "forge-bridge-"));
  const url = new URL(h.proxy.url);
  bridge = await startProxyBridge(join(dir, "proxy.sock"), { host: url.hostname, port: Number(url.port) });
});
afterAll(async () => {
  await bridge?.close();
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A request as a sandbox sends it: over the unix socket, to the proxy's own URL. */
const viaBridge = (path: string, init: RequestInit = {}) => fetch(`http://127.0.0.1${path}`, { ...init, unix: bridge.path } as RequestInit);

test("isModelRoute: /v1/… and /r/{rollout}/v1/… only", () => {
  for (const path of ["/v1/chat/completions", "/v1/models", "/v1", "/r/ro-1/v1/messages", "/r/ro-1/v1/responses"]) expect(isModelRoute(path)).toBe(true);
  for (const path of ["/control/rollouts", "/metrics", "/healthz", "/", "/r/ro-1", "/r/ro-1/control/rollouts", "/v10/x", "/r//v1/chat/completions", "//v1/x"]) expect(isModelRoute(path)).toBe(false);
});

test("model calls pass, streamed ones as a stream; control, metrics and health are 403 at the bridge", async () => {
  const r = await h.register();
  const chat = (stream: boolean) =>
    viaBridge(`/r/${r.rollout_id}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${r.api_key}` }, body: JSON.stringify({ model: "m", stream, messages: [{ role: "user", content: "hi" }] }) });
  const plain = await chat(false);
  expect(plain.status).toBe(200);
  expect(((await plain.json()) as any).choices[0].message).toBeDefined();
  const streamed = await chat(true);
  expect(streamed.headers.get("content-type")).toStartWith("text/event-stream");
  expect(await streamed.text()).toContain("data: [DONE]");
  expect(await h.calls(r.rollout_id)).toHaveLength(2);
  for (const path of ["/control/rollouts", `/control/rollouts/${r.rollout_id}/finish`, "/metrics", "/healthz", "/v1/../control/rollouts"]) {
    const refused = await viaBridge(path, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${h.adminToken}` }, body: "{}" });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error.code).toBe("not_a_model_route");
  }
  // The admin token itself gets no further: the rollout is still open.
  expect((await chat(false)).status).toBe(200);
});

test("a body over the proxy's limit gets the proxy's JSON 413 through the bridge, at any size", async () => {
  const r = await h.register();
  for (const size of [3e6, 40e6]) {
    const response = await viaBridge(`/r/${r.rollout_id}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${r.api_key}` },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(size) }] }),
    });
    expect(response.status).toBe(413);
    expect(((await response.json()) as any).error.message).toContain("--max-body-bytes");
  }
});
