import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startPolicySimulator } from "../../simulator/index.ts";
import { modelContextWindow } from "./context-window.ts";

let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let other: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  sim = await startPolicySimulator({ seed: 1, model: "qwen3-sim" });
  // A server that lists several models, one without a length, or answers an error.
  other = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/ok/v1/models") return Response.json({ data: [{ id: "a", max_model_len: 4096 }, { id: "b", max_model_len: 8192 }, { id: "c" }] });
      if (path === "/bad/v1/models") return new Response("not json", { status: 200 });
      return new Response("no", { status: 404 });
    },
  });
});

afterAll(async () => {
  await sim?.stop();
  other?.stop(true);
});

describe("modelContextWindow", () => {
  test("the simulator's /v1/models (vLLM's shape): max_model_len of the model served", async () => {
    expect(await modelContextWindow(`${sim.url}/v1`, "k", "qwen3-sim")).toBe(131072);
    // One model served: its window whatever name the harness uses for it.
    expect(await modelContextWindow(`${sim.url}/v1/`, "k", "forge-sim/other-name")).toBe(131072);
  });

  test("several models: the one asked for; none when it is not listed or gives no length", async () => {
    const base = `http://127.0.0.1:${other.port}/ok/v1`;
    expect(await modelContextWindow(base, "k", "b")).toBe(8192);
    expect(await modelContextWindow(base, "k", "c")).toBeUndefined();
    expect(await modelContextWindow(base, "k", "zzz")).toBeUndefined();
  });

  test("an error, a body that is not JSON, or nobody listening: undefined, never a throw", async () => {
    expect(await modelContextWindow(`http://127.0.0.1:${other.port}/missing/v1`, "k", "m")).toBeUndefined();
    expect(await modelContextWindow(`http://127.0.0.1:${other.port}/bad/v1`, "k", "m")).toBeUndefined();
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    const port = closed.port;
    closed.stop(true);
    expect(await modelContextWindow(`http://127.0.0.1:${port}/v1`, "k", "m")).toBeUndefined();
  });
});
