/**
 * A seeded fuzz of every front door's request parser (chat, completions, responses, messages)
 * through the real proxy app in this process, over the policy simulator: random bytes, random
 * JSON, and valid bodies mutated field by field or as text. Every input must get a 2xx or a
 * 4xx with a readable error body, within a bounded time, and the proxy must stay healthy.
 *
 *   FUZZ_SEED=123 FUZZ_N=2000 bun test tests/front-doors/fuzz.test.ts   (defaults: seed 8, 250 per door)
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createProxy, type Proxy } from "../../proxy/testing.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { type StartedPolicySimulator } from "../../simulator/testing.ts";
import { fuzzInput, SEED_BODIES } from "../faults/fuzz-bodies.ts";

const SEED = Number(process.env.FUZZ_SEED ?? 8);
const N = Number(process.env.FUZZ_N ?? 250);
const PER_CALL_MS = 5000;
const ADMIN = "fuzz-admin";
const DOORS: Record<keyof typeof SEED_BODIES, string> = {
  chat: "/v1/chat/completions",
  completions: "/v1/completions",
  responses: "/v1/responses",
  messages: "/v1/messages",
};

let sim: StartedPolicySimulator;
let proxy: Proxy;
let dir: string;
let rollout: { rollout_id: string; api_key: string };
beforeAll(async () => {
  sim = await startPolicySimulator({ seed: SEED });
  dir = mkdtempSync(join(tmpdir(), "forge-fuzz-"));
  proxy = await createProxy({ upstreams: [`${sim.url}/v1`], dataDir: dir, adminToken: ADMIN, healthIntervalMs: 0, groupCommitMs: 20 });
  const reg = await proxy.fetch(
    new Request("http://proxy/control/rollouts", { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ experiment: "fuzz", task_id: "fuzz" }) }),
  );
  rollout = (await reg.json()) as typeof rollout;
});
afterAll(async () => {
  await proxy.close();
  await sim.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The error message in any protocol's error body (OpenAI `{error:{message}}`, Anthropic `{type:"error",error:{message}}`). */
function errorMessage(text: string): string | undefined {
  try {
    const j = JSON.parse(text);
    return typeof j?.error?.message === "string" ? j.error.message : undefined;
  } catch {
    return undefined;
  }
}

for (const door of Object.keys(DOORS) as (keyof typeof SEED_BODIES)[]) {
  test(`${door}: ${N} fuzzed bodies (seed ${SEED}) get 2xx or 4xx with an error message, never 5xx or a hang`, async () => {
    const problems: string[] = [];
    const statuses = new Map<number, number>();
    for (let i = 0; i < N; i++) {
      const input = fuzzInput(door, SEED, i);
      const headers: Record<string, string> = { authorization: `Bearer ${rollout.api_key}`, "anthropic-version": "2023-06-01" };
      if (input.contentType) headers["content-type"] = input.contentType;
      const request = new Request(`http://proxy/r/${rollout.rollout_id}${DOORS[door]}`, { method: "POST", headers, body: input.body });
      const what = () => `#${i} (${input.kind}) ${new TextDecoder().decode(input.body.slice(0, 160))}`;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const hang = new Promise<"hang">((resolve) => (timer = setTimeout(() => resolve("hang"), PER_CALL_MS)));
      const answered = (async () => {
        const res = await proxy.fetch(request);
        return { status: res.status, text: await res.text() };
      })();
      let result: { status: number; text: string } | "hang";
      try {
        result = await Promise.race([answered, hang]);
      } catch (error) {
        problems.push(`${what()}: threw ${(error as Error).message}`);
        continue;
      } finally {
        clearTimeout(timer);
      }
      if (result === "hang") {
        problems.push(`${what()}: no answer within ${PER_CALL_MS} ms`);
        continue;
      }
      statuses.set(result.status, (statuses.get(result.status) ?? 0) + 1);
      const ok2xx = result.status >= 200 && result.status < 300;
      const ok4xx = result.status >= 400 && result.status < 500;
      if (!ok2xx && !ok4xx) problems.push(`${what()}: HTTP ${result.status} ${result.text.slice(0, 300)}`);
      else if (ok4xx && !errorMessage(result.text)) problems.push(`${what()}: HTTP ${result.status} without an error message: ${result.text.slice(0, 200)}`);
    }
    if (process.env.FUZZ_VERBOSE) console.error(`${door}: ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(problems.slice(0, 10)).toEqual([]);
    // The fuzz reached past the parser too: some inputs were valid calls.
    expect([...statuses.keys()].some((s) => s === 200)).toBe(true);
    const health = await proxy.fetch(new Request("http://proxy/healthz"));
    expect(health.status).toBe(200);
  }, 60_000);
}

// Inputs the fuzz found (seeds 1-3, 2,500 per door); each must be a 4xx and leave the proxy serving.
const FOUND: { name: string; path: string; body: unknown; fixed?: boolean }[] = [
  { name: "completions prompt of token ids outside uint32", fixed: true, path: "/v1/completions", body: { model: "m", prompt: [9007199254740991], max_tokens: 2 } },
  { name: "responses tools: [null]", fixed: true, path: "/v1/responses", body: { model: "m", input: "hi", tools: [null] } },
];
for (const found of FOUND) {
  // Not fixed yet are kept as known failures (test.failing), so the suite stays green and says so.
  (found.fixed ? test : test.failing)(`found by the fuzz: ${found.name} → 4xx, and the next valid call is still served`, async () => {
    const post = (path: string, body: unknown) =>
      proxy.fetch(
        new Request(`http://proxy/r/${rollout.rollout_id}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${rollout.api_key}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
    const res = await post(found.path, found.body);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    const next = await post("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "still there?" }] });
    expect(next.status).toBe(200);
  });
}
