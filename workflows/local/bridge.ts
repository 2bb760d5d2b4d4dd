/**
 * The host side of the sandbox's network bridge: a unix socket that carries a rollout's model
 * calls to the proxy. The socket file is bound into every sandbox; inside, bridge-inner.ts
 * listens on 127.0.0.1:<proxy port> and forwards to it, so the rollout's base URLs work
 * unchanged while the namespace has no other route out.
 *
 * The bridge speaks HTTP and passes on only the model routes (`/v1/…` and `/r/{rollout}/v1/…`):
 * the control API, `/metrics` and `/healthz` are not there for task code. A harness guessing
 * the admin token never reaches the proxy, so it cannot get the executor's own control calls
 * throttled (they leave from the same loopback address) and lose its run's results.
 */
import { type Socket } from "node:net";
import { rmSync } from "node:fs";

/** Pipes two sockets both ways; either side's end or error closes both. */
export function splice(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  const close = () => {
    a.destroy();
    b.destroy();
  };
  a.on("error", close);
  b.on("error", close);
  a.on("close", close);
  b.on("close", close);
}

/**
 * The paths a sandbox may reach: the model routes, by key (`/v1/…`) or by rollout
 * (`/r/{rollout}/v1/…`; the Anthropic base URL is `/r/{rollout}`). Checked on the path as
 * parsed (dot segments resolved), which is also the path passed on.
 *
 * @example
 * isModelRoute("/r/ro-1/v1/chat/completions"); // true
 * isModelRoute("/control/rollouts"); // false
 */
export function isModelRoute(pathname: string): boolean {
  return /^\/(?:r\/[^/]+\/)?v1(?:\/|$)/.test(pathname);
}

/** Headers of one hop, not passed on (RFC 9110 §7.6.1), and the length the body is re-framed by. */
const HOP_HEADERS = ["connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "host"];

/**
 * @example
 * const bridge = await startProxyBridge("/tmp/run/proxy.sock", { host: "127.0.0.1", port: 8080 });
 * await bridge.close();
 */
export async function startProxyBridge(socketPath: string, target: { host: string; port: number }): Promise<{ path: string; close(): Promise<void> }> {
  rmSync(socketPath, { force: true });
  const origin = `http://${target.host.includes(":") ? `[${target.host}]` : target.host}:${target.port}`;
  const server: Bun.Server<undefined> = Bun.serve({
    unix: socketPath,
    // Bodies are streamed on, and the proxy answers an oversized one itself (413 naming
    // --max-body-bytes); Bun's own cap would answer first, with an empty 413.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    async fetch(request) {
      const url = new URL(request.url);
      if (!isModelRoute(url.pathname)) {
        return Response.json(
          { error: { message: `${url.pathname} is not a model route: a rollout's sandbox reaches only /v1/… and /r/{rollout}/v1/… (the control API is the executor's)`, type: "invalid_request_error", param: null, code: "not_a_model_route" } },
          { status: 403 },
        );
      }
      // Model calls wait minutes for a first token: no idle timeout here (the proxy has its own).
      server.timeout(request, 0);
      const headers = new Headers(request.headers);
      for (const name of HOP_HEADERS) headers.delete(name);
      const hasBody = request.method !== "GET" && request.method !== "HEAD";
      try {
        const answer = await fetch(`${origin}${url.pathname}${url.search}`, {
          method: request.method,
          headers,
          // Streamed, keeping its Content-Length (the proxy checks it against --max-body-bytes
          // before reading; a chunked body it cuts at the limit): nothing is held here.
          body: hasBody ? request.body : undefined,
          duplex: "half",
          signal: request.signal,
          redirect: "manual",
          decompress: false,
        } as RequestInit);
        return new Response(answer.body, { status: answer.status, statusText: answer.statusText, headers: answer.headers });
      } catch (error) {
        if (request.signal.aborted) return new Response(null, { status: 499 });
        return Response.json({ error: { message: `the rollout's bridge cannot reach the proxy at ${origin}: ${(error as Error).message}`, type: "upstream_error", param: null, code: "proxy_unreachable" } }, { status: 502 });
      }
    },
  });
  return {
    path: socketPath,
    close: async () => {
      await server.stop(true);
      rmSync(socketPath, { force: true });
    },
  };
}
