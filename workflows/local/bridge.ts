/**
 * The host side of the sandbox's network bridge: a unix socket that forwards each connection
 * to the proxy's TCP port. The socket file is bound into every sandbox; inside, bridge-inner.ts
 * listens on 127.0.0.1:<proxy port> and forwards to it, so the rollout's base URLs work
 * unchanged while the namespace has no other route out.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
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
 * @example
 * const bridge = await startProxyBridge("/tmp/run/proxy.sock", { host: "127.0.0.1", port: 8080 });
 * await bridge.close();
 */
export async function startProxyBridge(socketPath: string, target: { host: string; port: number }): Promise<{ path: string; close(): Promise<void> }> {
  rmSync(socketPath, { force: true });
  const server: Server = createServer((client) => splice(client, connect(target.port, target.host)));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => resolve());
  });
  return {
    path: socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        rmSync(socketPath, { force: true });
      }),
  };
}
