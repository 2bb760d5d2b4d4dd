/**
 * The real proxy (startProxy, in this process) in front of chaos upstreams, with helpers to
 * register rollouts, send raw HTTP calls and read the log back. Raw fetch rather than an SDK,
 * so a test sees exactly the status, headers and bytes a harness would.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { type ProxyOptions, type StartedProxy } from "../../proxy/testing.ts";
import { NOT_AN_ENGINE } from "../../proxy/testing.ts";
import { readRecords } from "../../records/index.ts";
import type { ModelCall } from "../../schemas/index.ts";
import { startChaosUpstream, type ChaosUpstream } from "./chaos-upstream.ts";

export const ADMIN = "faults-admin-token";

export interface ProxyUnderTest {
  proxy: StartedProxy;
  upstream: ChaosUpstream;
  dataDir: string;
  register(taskId?: string): Promise<{ rollout_id: string; api_key: string; openai_base_url: string }>;
  /** POST a chat call on the rollout's own route with its key. */
  chat(r: { rollout_id: string; api_key: string }, content: string, o?: { stream?: boolean; path?: string; headers?: Record<string, string> }): Promise<Response>;
  calls(): Promise<ModelCall[]>;
  close(): Promise<void>;
}

/**
 * Starts a chaos upstream and a proxy over it (plus `extraUpstreams` before it, e.g. a dead port).
 *
 * @example
 * const t = await startProxyUnderTest({ proxy: { idleTimeoutMs: 300 } });
 */
export async function startProxyUnderTest(o: { proxy?: Partial<ProxyOptions>; extraUpstreams?: string[]; chunks?: number; chunkDelayMs?: number; dataDir?: string } = {}): Promise<ProxyUnderTest> {
  const upstream = await startChaosUpstream({ chunks: o.chunks, chunkDelayMs: o.chunkDelayMs });
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), "forge-faults-"));
  const proxy = await startProxy({
    listen: "127.0.0.1:0",
    upstreams: [...(o.extraUpstreams ?? []), `${upstream.url}/v1`],
    dataDir,
    adminToken: ADMIN,
    groupCommitMs: 5,
    healthIntervalMs: 0,
    // The chaos upstream is a fault injector, not an engine: no start-up engine check
    // (docs/engines.md), so it sees exactly the calls the tests send.
    ...NOT_AN_ENGINE,
    ...o.proxy,
  });
  const t: ProxyUnderTest = {
    proxy,
    upstream,
    dataDir,
    async register(taskId = "task") {
      const r = await fetch(`${proxy.url}/control/rollouts`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: JSON.stringify({ experiment: "faults", task_id: taskId }),
      });
      if (r.status !== 201) throw new Error(`register: ${r.status} ${await r.text()}`);
      return (await r.json()) as any;
    },
    chat(r, content, opts = {}) {
      return fetch(`${proxy.url}${opts.path ?? `/r/${r.rollout_id}/v1/chat/completions`}`, {
        method: "POST",
        headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json", ...opts.headers },
        body: JSON.stringify({ model: "chaos", stream: opts.stream ?? false, messages: [{ role: "user", content }] }),
      });
    },
    async calls() {
      const out: ModelCall[] = [];
      for await (const { record } of readRecords(dataDir)) if (record.kind.case === "modelCall") out.push(record.kind.value);
      return out;
    },
    async close() {
      await proxy.stop();
      await upstream.stop();
      if (!o.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return t;
}

/** Reads a streamed body to its end; a transport error is returned, not thrown. */
export async function readAll(response: Response): Promise<{ text: string; error?: string }> {
  let text = "";
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    return { text };
  } catch (error) {
    return { text, error: (error as Error).message };
  }
}

/** Waits until `predicate` holds (records of streams land when the stream ends). */
export async function eventually<T>(f: () => Promise<T>, ok: (v: T) => boolean, ms = 3000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v) || Date.now() > end) return v;
    await Bun.sleep(20);
  }
}
