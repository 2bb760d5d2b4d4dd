/**
 * Runs wrk (Debian's C load generator) with a Lua script that POSTs a JSON body to a list of
 * paths round-robin and prints its latency percentiles as one JSON line.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawn } from "node:child_process";

export interface WrkOptions {
  bin: string;
  /** Where the Lua script and body file go. */
  dir: string;
  /** `http://host:port`. */
  base: string;
  /** Request paths, taken in turn (e.g. one per rollout). */
  paths: string[];
  /** Per path, extra headers (e.g. that rollout's key); same length as paths when given. */
  pathHeaders?: Record<string, string>[];
  body: string | Uint8Array;
  headers?: Record<string, string>;
  connections: number;
  seconds: number;
  threads?: number;
}

export interface WrkResult {
  requests: number;
  seconds: number;
  rps: number;
  bytes: number;
  /** Latency of whole responses (the full stream), ms. */
  p50: number;
  p99: number;
  mean: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
}

function luaString(s: string): string {
  return JSON.stringify(s); // a JSON string literal is a valid Lua string literal for ASCII paths/headers
}

/**
 * One wrk run; resolves with its figures. wrk reads each response to its end (chunked SSE
 * included), so latency is the time of the whole stream.
 *
 * @example
 * const r = await runWrk({ bin: "wrk", dir, base: url, paths: ["/v1/chat/completions"], body, connections: 64, seconds: 5 });
 */
export async function runWrk(o: WrkOptions): Promise<WrkResult> {
  const bodyPath = join(o.dir, `body-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(bodyPath, o.body);
  const headers = { "Content-Type": "application/json", ...(o.headers ?? {}) };
  const lua = `
local f = io.open(${luaString(bodyPath)}, "rb")
local body = f:read("*a")
f:close()
local paths = { ${o.paths.map(luaString).join(", ")} }
local headers = { ${o.paths.map((_, i) => `{ ${Object.entries({ ...headers, ...(o.pathHeaders?.[i] ?? {}) }).map(([k, v]) => `[${luaString(k)}] = ${luaString(v)}`).join(", ")} }`).join(", ")} }
local counter = 0
function init(args)
  counter = math.random(#paths)
end
function request()
  counter = counter + 1
  local i = (counter % #paths) + 1
  return wrk.format("POST", paths[i], headers[i], body)
end
function done(summary, latency, requests)
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"p50":%f,"p99":%f,"mean":%f,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\\n',
    summary.requests, summary.duration, summary.bytes, latency:percentile(50), latency:percentile(99), latency.mean,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.status, summary.errors.timeout))
end
`;
  const luaPath = join(o.dir, `bench-${Math.random().toString(36).slice(2)}.lua`);
  writeFileSync(luaPath, lua);
  const threads = Math.min(o.threads ?? 2, o.connections);
  const args = ["-t", String(threads), "-c", String(o.connections), "-d", `${o.seconds}s`, "--timeout", "30s", "-s", luaPath, `${o.base}${o.paths[0]}`];
  const child = spawn(o.bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (b) => (out += b));
  child.stderr.on("data", (b) => (out += b));
  const code: number = await new Promise((resolve) => child.on("exit", (c) => resolve(c ?? 1)));
  const line = out.split("\n").find((l) => l.startsWith("WRKJSON "));
  if (code !== 0 || !line) throw new Error(`wrk ${args.join(" ")} failed (exit ${code}):\n${out}`);
  const j = JSON.parse(line.slice(8));
  const seconds = j.duration_us / 1e6;
  return {
    requests: j.requests,
    seconds,
    // Only answered calls count: a refused call (4xx/5xx) is not throughput.
    rps: (j.requests - j.status) / seconds,
    bytes: j.bytes,
    p50: j.p50 / 1000,
    p99: j.p99 / 1000,
    mean: j.mean / 1000,
    errors: { connect: j.connect, read: j.read, write: j.write, status: j.status, timeout: j.timeout },
  };
}
