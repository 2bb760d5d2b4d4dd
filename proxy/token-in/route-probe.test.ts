/**
 * `--token-in-route auto`'s probe against the policy simulator speaking vLLM 0.33.0 with and
 * without `--enable-scale-out`, SGLang (no such route), and an upstream that does not answer.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startPolicySimulator } from "../../simulator/index.ts";
import { type StartedPolicySimulator } from "../../simulator/testing.ts";
import { createUpstreamClient } from "../upstream/client.ts";
import { createUpstreamRouter } from "../upstream/router.ts";
import type { RolloutState } from "../state/rollouts.ts";
import { probeGenerateRoute } from "./route-probe.ts";

/** The probe through a real upstream client to `url`, for a rollout without its own servers. */
const probe = (url: string) => {
  const client = createUpstreamClient({ router: createUpstreamRouter({ urls: [url], healthIntervalMs: 0 }), firstByteTimeoutMs: 5000 });
  return probeGenerateRoute({ rollout: { rolloutId: "ro-probe" } } as unknown as RolloutState, client);
};

describe("the generate route's probe", () => {
  const sims: StartedPolicySimulator[] = [];
  let scaleOut: string, plain: string, sglang: string;
  beforeAll(async () => {
    for (const options of [{}, { enableScaleOut: false }, { engine: "sglang" as const }]) sims.push(await startPolicySimulator({ seed: 1, ...options }));
    [scaleOut, plain, sglang] = sims.map((s) => s.url) as [string, string, string];
  });
  afterAll(async () => {
    for (const s of sims) await s.stop();
  });

  test("vLLM with --enable-scale-out refuses the empty body naming token_ids: the generate route, nothing generated", async () => {
    const found = await probe(scaleOut);
    expect(found?.route).toBe("generate");
    expect(found?.why).toContain(`${scaleOut}/inference/v1/generate is served`);
    expect(sims[0]!.samples).toHaveLength(0);
  });

  test("vLLM without it (403) and a server without the route (404): /v1/completions, saying which", async () => {
    expect(await probe(plain)).toEqual({ route: "completions", why: `${plain}/inference/v1/generate answered 403 (vLLM started without --enable-scale-out): token-in calls go to /v1/completions` });
    expect(await probe(sglang)).toEqual({ route: "completions", why: `${sglang}/inference/v1/generate answered 404 (no such route): token-in calls go to /v1/completions` });
  });

  test("an upstream that does not answer: no finding (the call keeps /v1/completions and the next asks again)", async () => {
    const closed = Bun.serve({ port: 0, fetch: () => new Response("") });
    const url = `http://127.0.0.1:${closed.port}`;
    closed.stop(true);
    expect(await probe(url)).toBeUndefined();
  });
});
