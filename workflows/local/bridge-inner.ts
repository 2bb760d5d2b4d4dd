#!/usr/bin/env bun
/**
 * Runs inside a rollout's network namespace: `bridge-inner.ts PORT SOCKET [PORT SOCKET]... --
 * argv...` listens on 127.0.0.1:PORT for each pair, forwards each connection to its unix SOCKET
 * (the host's proxy bridge; a browser task's site server), runs argv, and exits with its exit
 * code (127 when argv cannot be started: a launcher failure, as a shell would say). Signals are
 * passed on to the command.
 */
import { connect, createServer, type Server } from "node:net";
import { splice } from "./bridge.ts";

const args = process.argv.slice(2);
const dashes = args.indexOf("--");
const pairs = dashes < 0 ? [] : args.slice(0, dashes);
const argv = dashes < 0 ? [] : args.slice(dashes + 1);
if (pairs.length === 0 || pairs.length % 2 !== 0 || argv.length === 0 || pairs.some((value, i) => i % 2 === 0 && !/^\d+$/.test(value))) {
  console.error("usage: bridge-inner.ts PORT SOCKET [PORT SOCKET]... -- COMMAND...");
  process.exit(2);
}
const servers: Server[] = [];
for (let i = 0; i < pairs.length; i += 2) {
  const socketPath = pairs[i + 1]!;
  const server = createServer((client) => splice(client, connect(socketPath)));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(Number(pairs[i]), "127.0.0.1", () => resolve());
  });
  servers.push(server);
}
let child: ReturnType<typeof Bun.spawn>;
try {
  child = Bun.spawn(argv, { stdin: "ignore", stdout: "inherit", stderr: "inherit" });
} catch (error) {
  console.error(`bridge-inner: cannot start ${argv[0]}: ${(error as Error).message}`);
  process.exit(127);
}
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, () => child.kill(signal));
const code = await child.exited;
for (const server of servers) server.close();
process.exit(child.signalCode ? 128 + 15 : code);
