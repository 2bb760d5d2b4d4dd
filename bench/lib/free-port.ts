/** A free loopback port for a server (nginx) that cannot report the port it got from port 0. */
import { createServer } from "node:net";

/**
 * Binds port 0 on 127.0.0.1, reads the port the kernel chose and releases it.
 *
 * @example
 * const port = await freePort();
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}
