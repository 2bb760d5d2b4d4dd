/**
 * Test helpers: a real proxy in front of real policy simulators on loopback, a temp data dir,
 * rollout registration, and reading the log back.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "bun:test";
import OpenAI from "openai";
import { CallStatus, TokenStatus, type ModelCall, type Protocol, type Record as ForgeRecord } from "../schemas/index.ts";
import { createContentStore, readRecords, requestBodyOf, upstreamRequestOf } from "../records/index.ts";
import { startPolicySimulator } from "../simulator/index.ts";
import { type StartedPolicySimulator } from "../simulator/testing.ts";
import type { PolicySimulatorOptions } from "../simulator/testing.ts";
import { startProxy, type StartedProxy } from "./server.ts";
import type { ProxyOptions } from "./options.ts";
// Names only tests use outside the proxy area (docs/architecture.md: a face exports what other areas use).
export { createProxy, type Proxy } from "./app.ts";
export { parseListen, type StartedProxy } from "./server.ts";
export { DEFAULTS as PROXY_DEFAULTS, type ProxyOptions } from "./options.ts";
export { DEFAULT_FRONT_DOORS } from "./doors/index.ts";
export { adapterFor } from "./engines/adapters.ts";
export { vllmTokenCompletionRequest } from "./engines/vllm.ts";
export { TokenInSettingsError } from "./token-in/spec.ts";
export { engineAnswerReader } from "./token-in/engine-answer.ts";
export { chatJsonAnswer, chatStreamResponse } from "./token-in/chat-answer.ts";
export { sglangGenerateRequest } from "./engines/sglang.ts";
export { loadCalls } from "./engines/weight-sync.ts";

/**
 * Proxy options for a test upstream that is no inference engine (it answers without ids, or
 * late, on purpose): the start-up engine check (docs/engines.md) is skipped and calls are asked
 * for ids the vLLM way.
 */
export const NOT_AN_ENGINE = { engine: "vllm", engineProbe: false } as const satisfies Partial<ProxyOptions>;

export interface ProxyHarness {
  sims: StartedPolicySimulator[];
  proxy: StartedProxy;
  dataDir: string;
  adminToken: string;
  register(body?: Record<string, unknown>): Promise<{ rollout_id: string; api_key: string; openai_base_url: string; policy_version: number }>;
  client(rollout: { api_key: string; openai_base_url: string }): OpenAI;
  control(path: string, body?: unknown, method?: string): Promise<Response>;
  records(): Promise<ForgeRecord[]>;
  calls(rolloutId?: string): Promise<ModelCall[]>;
  /** Restarts the proxy on the same data dir (same upstreams and token). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Each call's request body as the harness sent it, rebuilt through one content store (`calls`
 * in log order, as `ProxyHarness.calls` returns them).
 *
 * @example
 * const [first] = requestBodiesOf(await h.calls(r.rollout_id));
 */
export function requestBodiesOf(calls: ModelCall[]): Uint8Array[] {
  const store = createContentStore();
  return calls.map((call) => requestBodyOf(call, store));
}

/**
 * Each call's upstream request as JSON (`upstreamRequestOf`), `calls` in log order.
 *
 * @example
 * upstreamRequestsOf(await h.calls(r.rollout_id))[0]!.return_token_ids // true
 */
export function upstreamRequestsOf(calls: ModelCall[]): Record<string, unknown>[] {
  const store = createContentStore();
  return calls.map((call) => upstreamRequestOf(call, store));
}

/**
 * Starts `simulators` simulators and a proxy over them on a fresh temp data dir.
 *
 * @example
 * const h = await startProxyHarness();
 * const r = await h.register();
 * await h.client(r).chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
 * await h.close();
 */
export async function startProxyHarness(
  options: { simulators?: number; sim?: Partial<PolicySimulatorOptions>; proxy?: Partial<ProxyOptions>; dataDir?: string } = {},
): Promise<ProxyHarness> {
  const sims: StartedPolicySimulator[] = [];
  for (let i = 0; i < (options.simulators ?? 1); i++) sims.push(await startPolicySimulator({ seed: 7 + i, ...options.sim }));
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), "forge-proxy-test-")));
  const adminToken = "test-admin-token";
  const proxyOptions: ProxyOptions = {
    listen: "127.0.0.1:0",
    upstreams: sims.map((s) => `${s.url}/v1`),
    dataDir,
    adminToken,
    groupCommitMs: 5,
    healthIntervalMs: 0,
    ...options.proxy,
  };
  let proxy = await startProxy(proxyOptions);
  const h: ProxyHarness = {
    sims,
    get proxy() {
      return proxy;
    },
    dataDir,
    adminToken,
    async register(body = {}) {
      const response = await h.control("/control/rollouts", { experiment: "test", task_id: "task-1", ...body });
      if (response.status !== 201) throw new Error(`register: ${response.status} ${await response.text()}`);
      return (await response.json()) as any;
    },
    client: (r) => new OpenAI({ baseURL: r.openai_base_url, apiKey: r.api_key, maxRetries: 0 }),
    control: (path, body, method = "POST") =>
      fetch(proxy.url + path, {
        method,
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    async records() {
      const out: ForgeRecord[] = [];
      for await (const { record } of readRecords(dataDir)) out.push(record);
      return out;
    },
    async calls(rolloutId) {
      return (await h.records())
        .flatMap((r) => (r.kind.case === "modelCall" ? [r.kind.value] : []))
        .filter((c) => rolloutId === undefined || c.rolloutId === rolloutId);
    },
    async restart() {
      // Same port, so the base URLs handed out at registration keep working.
      const port = new URL(proxy.url).port;
      await proxy.stop();
      proxy = await startProxy({ ...proxyOptions, listen: `127.0.0.1:${port}` });
    },
    async close() {
      await proxy.stop();
      for (const s of sims) await s.stop();
      if (!options.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
  return h;
}

/**
 * The full prompt of every call (prefix deltas resolved), in log order.
 *
 * @example
 * const prompts = resolvePrompts(await h.calls("ro-1"));
 */
export function resolvePrompts(calls: ModelCall[]): Map<string, number[]> {
  const tokens = new Map<string, number[]>();
  const prompts = new Map<string, number[]>();
  for (const c of calls) {
    const prefix = c.prefixOf === "" ? [] : tokens.get(c.prefixOf)!.slice(0, c.prefixLen);
    const prompt = prefix.concat(c.promptTokenIds);
    prompts.set(c.callId, prompt);
    tokens.set(c.callId, prompt.concat(c.completionTokenIds));
  }
  return prompts;
}

/**
 * Asserts `call` was served OK over `protocol` and recorded token-exact: its full prompt (the
 * delta chain resolved over `calls`) and its completion are the ids the simulator sampled.
 *
 * @example
 * expectTokenExact(call, calls, last(h.sims[0]!.samples), Protocol.RESPONSES);
 */
export function expectTokenExact(call: ModelCall, calls: ModelCall[], sample: { prompt_token_ids: number[]; token_ids: number[] }, protocol: Protocol): void {
  expect(call.protocol).toBe(protocol);
  expect(call.status).toBe(CallStatus.OK);
  expect(call.tokenStatus).toBe(TokenStatus.COMPLETE);
  expect(resolvePrompts(calls).get(call.callId)).toEqual(sample.prompt_token_ids);
  expect(call.completionTokenIds).toEqual(sample.token_ids);
}
