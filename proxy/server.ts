/** Serves the proxy with Bun.serve. */
import { createProxy, type Proxy } from "./app.ts";
import { withDefaults, type ProxyOptions } from "./options.ts";
import { declaredTooLarge } from "./body.ts";
import { errorResponse } from "./errors.ts";

export interface StartedProxy {
  /** `http://HOST:PORT`. */
  url: string;
  proxy: Proxy;
  /** Stops serving (open streams are cut) and closes the log. */
  stop(): Promise<void>;
}

/**
 * Parses `HOST:PORT` (`[::1]:8787` for IPv6).
 *
 * @example
 * parseListen("127.0.0.1:0") // { hostname: "127.0.0.1", port: 0 }
 */
export function parseListen(listen: string): { hostname: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(listen);
  if (!match) throw new Error(`--listen must be HOST:PORT (e.g. 127.0.0.1:8787), got "${listen}"`);
  const port = Number(match[3]);
  if (port > 65535) throw new Error(`--listen port ${port} is over 65535`);
  return { hostname: (match[1] ?? match[2])!, port };
}

/**
 * Starts the proxy.
 *
 * @example
 * const { url, stop } = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir });
 */
export async function startProxy(options: ProxyOptions): Promise<StartedProxy> {
  const { listen, maxBodyBytes } = withDefaults(options);
  const { hostname, port } = parseListen(listen);
  const proxy = await createProxy(options);
  let server: ReturnType<typeof Bun.serve>;
  try {
    server = Bun.serve({
      hostname,
      port,
      // Idle connections are closed (a kept-alive connection holds a descriptor for nothing);
      // requests the proxy is working on are exempt while they run (proxy/connections.ts).
      idleTimeout: proxy.state.connections.idleTimeoutS,
      // Bodies are limited by the proxy itself (413 with a clear error): Bun's own cap answers a
      // declared length over it with an empty 413 before the proxy sees the request, so it is
      // lifted, and a declared length over --max-body-bytes is refused here, ahead of routing
      // (a chunked body is cut at the limit as it is read: body.ts).
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      fetch: (request, bun) => {
        const tooLarge = declaredTooLarge(request, maxBodyBytes);
        if (!tooLarge) return proxy.fetch(request, bun);
        // The body is not read: the connection cannot carry another request after it.
        const refusal = errorResponse(tooLarge);
        refusal.headers.set("connection", "close");
        return refusal;
      },
    });
  } catch (error) {
    await proxy.close();
    throw error;
  }
  const host = server.hostname?.includes(":") ? `[${server.hostname}]` : server.hostname;
  const url = `http://${host}:${server.port}`;
  proxy.state.connections.attach(server);
  proxy.setListenUrl(url);
  return {
    url,
    proxy,
    async stop() {
      await server.stop(true);
      await proxy.close();
    },
  };
}
