/**
 * Harness connections against file-descriptor exhaustion. Every connection holds a descriptor,
 * and keep-alive connections cost nothing to open and hold (no key is needed): without limits,
 * `ulimit -n` idle connections leave the proxy unable to accept calls, open upstream sockets or
 * roll a log segment. Three defences (docs/proxy.md, Connections):
 *
 * - an idle timeout on every connection (Bun.serve `idleTimeout`): kept-alive connections are
 *   closed when idle. A request the proxy is working on (a model call waiting for its first
 *   token, a stream, a pause) is exempt while it runs (`hold`) and subject again once its
 *   answer is sent (`release`): Bun applies the timeout to a response in progress too, and keeps
 *   a request's setting for the connection after it.
 * - Bun's own header deadline: a connection that has not sent a complete request head within
 *   about 10 s is closed, however slowly it trickles bytes.
 * - a cap on open descriptors (sampled a few times a second from /proc/self/fd): past it, idle
 *   kept-alive connections are closed at once and new requests are refused with 503 and
 *   `Connection: close`, keeping a reserve for upstream sockets and the log.
 */
import { readdirSync, readFileSync } from "node:fs";
import type { Server } from "bun";
import { errorResponse, ProxyHttpError } from "./errors.ts";

export interface ConnectionGuardOptions {
  /** Seconds a connection may sit idle before it is closed (Bun's idleTimeout, 1..255). */
  idleTimeoutS: number;
  /** Open descriptors past which requests are refused; 0 = the descriptor limit minus a reserve. */
  maxConnections: number;
  /** How often the descriptors are counted. Default 250 ms. */
  sampleMs?: number;
}

export interface ConnectionGuard {
  /** The Bun.serve idleTimeout to start the server with. */
  readonly idleTimeoutS: number;
  /** The descriptor cap in force (0 where descriptors cannot be counted: no /proc). */
  readonly cap: number;
  /** Descriptors open at the last sample. */
  readonly open: number;
  /** Called with the server once it listens: enables `hold`, `release`, the cap and client addresses. */
  attach(server: Server<unknown>): void;
  /** A refusal for a new request while past the cap, else undefined. */
  refusal(): Response | undefined;
  /** Lifts the idle timeout off `request`'s connection while the proxy works on it. */
  hold(request: Request): void;
  /** Puts the idle timeout back on `request`'s connection (its answer is sent, or about to be). */
  release(request: Request): void;
  /** The client's address ("local" for a request that did not come through the server). */
  clientAddress(request: Request): string;
  stop(): void;
}

/** The process's soft limit on open files (Linux /proc), or undefined where it cannot be read. */
export function descriptorLimit(): number | undefined {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((l) => l.startsWith("Max open files"));
    const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0];
    const n = Number(soft);
    return Number.isFinite(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** Descriptors kept free for upstream sockets, the log and its fsyncs: 1/8 of the limit, 32..512. */
export function descriptorReserve(limit: number): number {
  return Math.min(512, Math.max(32, Math.floor(limit / 8)));
}

/**
 * A guard for one server.
 *
 * @example
 * const guard = createConnectionGuard({ idleTimeoutS: 60, maxConnections: 0 });
 * const server = Bun.serve({ idleTimeout: guard.idleTimeoutS, fetch: (req, srv) => guard.refusal() ?? app.fetch(req) });
 * guard.attach(server);
 */
export function createConnectionGuard(options: ConnectionGuardOptions): ConnectionGuard {
  const idleTimeoutS = options.idleTimeoutS;
  if (!(Number.isInteger(idleTimeoutS) && idleTimeoutS >= 1 && idleTimeoutS <= 255)) {
    throw new Error(`connection idle timeout must be a whole number of seconds from 1 to 255 (Bun's range), got ${idleTimeoutS}`);
  }
  const limit = descriptorLimit();
  const countable = limit !== undefined && countDescriptors() !== undefined;
  const cap = !countable ? 0 : options.maxConnections > 0 ? options.maxConnections : limit - descriptorReserve(limit);
  let server: Server<unknown> | undefined;
  let open = 0;
  let saturated = false;
  let timer: ReturnType<typeof setInterval> | undefined;

  let sampledAt = 0;
  const count = (): number => {
    sampledAt = performance.now();
    // Out of descriptors even for the count itself: as full as it gets.
    return countDescriptors() ?? limit ?? open;
  };
  const sample = () => {
    open = count();
    if (open >= cap && server) {
      // Kept-alive connections between requests are the cheapest to give back.
      server.closeIdleConnections();
      open = count();
    }
    saturated = open >= cap;
  };

  return {
    idleTimeoutS,
    cap,
    get open() {
      return open;
    },
    attach(s) {
      server = s;
      if (cap > 0 && !timer) {
        sample();
        timer = setInterval(sample, options.sampleMs ?? 250);
        timer.unref?.();
      }
    },
    refusal() {
      if (!saturated) return undefined;
      // The flag is from the last sample: look again (at most every few ms) before refusing,
      // since idle connections closed since then may have made room.
      if (performance.now() - sampledAt > 5) sample();
      if (!saturated) return undefined;
      const error = new ProxyHttpError(
        503,
        `the proxy has ${open} open connections and files, its limit (--max-connections ${cap}${limit ? `, of ulimit -n ${limit}` : ""}); idle connections are being closed, retry shortly`,
        "service_unavailable",
        "too_many_connections",
        null,
        { "retry-after": "1", connection: "close" },
      );
      return errorResponse(error);
    },
    hold(request) {
      try {
        server?.timeout(request, 0);
      } catch {
        // The connection is gone already: nothing to hold.
      }
    },
    release(request) {
      try {
        server?.timeout(request, idleTimeoutS);
      } catch {
        // The connection is gone already: nothing to release.
      }
    },
    clientAddress(request) {
      return server?.requestIP(request)?.address ?? "local";
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}

function countDescriptors(): number | undefined {
  try {
    return readdirSync("/proc/self/fd").length;
  } catch {
    return undefined;
  }
}
