/**
 * Sticky routing of rollouts over several upstreams: rendezvous (highest random weight)
 * hashing of the rollout id, so all calls of a rollout hit one upstream's prefix cache and
 * only the rollouts of a failed upstream move. Periodic health checks take an upstream out and
 * put it back.
 */
import { createHash } from "node:crypto";

export interface UpstreamState {
  url: string;
  healthy: boolean;
  lastError: string;
  lastCheckUnixMs: number;
}

export interface UpstreamRouter {
  readonly upstreams: readonly UpstreamState[];
  /** Upstreams in preference order for a rollout: healthy ones by rendezvous weight, then unhealthy ones. */
  rank(rolloutId: string): UpstreamState[];
  /** Marks an upstream down after a connection failure (the next health check may restore it). */
  markDown(url: string, reason: string): void;
  /** Runs one round of health checks now. */
  checkAll(): Promise<void>;
  stop(): void;
}

export interface RouterOptions {
  /** Base URLs (`http://host:port`, with or without a trailing `/v1`). */
  urls: string[];
  /** Health check interval; 0 disables periodic checks. Default 5000. */
  healthIntervalMs?: number;
  /** Per-check timeout. Default 2000. */
  healthTimeoutMs?: number;
  /** Headers for health checks (the upstream API key). */
  headers?: Record<string, string>;
}

/**
 * Normalises an upstream base URL to its origin + path without `/v1` or a trailing slash.
 *
 * @example
 * normalizeUpstream("http://127.0.0.1:8000/v1/") // "http://127.0.0.1:8000"
 */
export function normalizeUpstream(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`upstream "${url}" is not a URL (expected e.g. http://127.0.0.1:8000/v1)`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error(`upstream "${url}" must be http or https`);
  return (parsed.origin + parsed.pathname).replace(/\/+$/, "").replace(/\/v1$/, "");
}

/**
 * A router over `urls` with health checks (`GET /health`, then `GET /v1/models`).
 *
 * @example
 * const router = createUpstreamRouter({ urls: ["http://a:8000", "http://b:8000"] });
 * router.rank("ro-1")[0]!.url // the same every time for ro-1
 */
export function createUpstreamRouter(options: RouterOptions): UpstreamRouter {
  if (options.urls.length === 0) throw new Error("at least one upstream is needed (--upstream URL)");
  const upstreams: UpstreamState[] = options.urls.map((u) => ({ url: normalizeUpstream(u), healthy: true, lastError: "", lastCheckUnixMs: 0 }));
  const timeoutMs = options.healthTimeoutMs ?? 2000;

  const check = async (u: UpstreamState) => {
    const ok = async (path: string) => {
      const response = await fetch(u.url + path, { headers: options.headers, signal: AbortSignal.timeout(timeoutMs) });
      await response.arrayBuffer().catch(() => {});
      return response.ok;
    };
    try {
      const healthy = (await ok("/health").catch(() => false)) || (await ok("/v1/models"));
      u.healthy = healthy;
      u.lastError = healthy ? "" : "health check answered with an HTTP error";
    } catch (error) {
      u.healthy = false;
      u.lastError = `health check failed: ${(error as Error).message}`;
    }
    u.lastCheckUnixMs = Date.now();
  };

  const interval = options.healthIntervalMs ?? 5000;
  const timer = interval > 0 ? setInterval(() => void router.checkAll(), interval) : undefined;
  timer?.unref?.();

  const router: UpstreamRouter = {
    upstreams,
    rank(rolloutId) {
      if (upstreams.length === 1) return upstreams.slice();
      const weighted = upstreams.map((u) => ({ u, w: weight(rolloutId, u.url) }));
      weighted.sort((a, b) => (a.u.healthy === b.u.healthy ? (b.w < a.w ? -1 : b.w > a.w ? 1 : 0) : a.u.healthy ? -1 : 1));
      return weighted.map((x) => x.u);
    },
    markDown(url, reason) {
      const u = upstreams.find((x) => x.url === url);
      if (u) {
        u.healthy = false;
        u.lastError = reason;
      }
    },
    async checkAll() {
      await Promise.all(upstreams.map(check));
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
  return router;
}

function weight(key: string, node: string): bigint {
  return createHash("sha256").update(key).update("\0").update(node).digest().readBigUInt64BE(0);
}
