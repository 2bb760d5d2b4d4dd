#!/usr/bin/env bun
/**
 * Runs inside a rollout's network namespace: `bridge-inner.ts PORT SOCKET -- argv...` listens on
 * 127.0.0.1:PORT, forwards each connection to the unix SOCKET (the host's proxy bridge), runs
 * argv, and exits with its exit code (127 when argv cannot be started: a launcher failure, as
 * a shell would say). Signals are passed on to the command.
 */
import { connect, createServer } from "node:net";
import { splice } from "./bridge.ts";

const [portText, socketPath, dashes, ...argv] = process.argv.slice(2);
if (!portText || !socketPath || dashes !== "--" || argv.length === 0) {
  console.error("usage: bridge-inner.ts PORT SOCKET -- COMMAND...");
  process.exit(2);
}
const server = createServer((client) => splice(client, connect(socketPath)));
await new Promise<void>((resolve, reject) => {
  server.once("error", reject);
  server.listen(Number(portText), "127.0.0.1", () => resolve());
});
let child: ReturnType<typeof Bun.spawn>;
try {
  child = Bun.spawn(argv, { stdin: "ignore", stdout: "inherit", stderr: "inherit" });
} catch (error) {
  console.error(`bridge-inner: cannot start ${argv[0]}: ${(error as Error).message}`);
  process.exit(127);
}
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, () => child.kill(signal));
const code = await child.exited;
server.close();
process.exit(child.signalCode ? 128 + 15 : code);
