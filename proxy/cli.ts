/**
 * `forge proxy`: the recording proxy until Ctrl-C.
 */
import { intFlag, parseCommand, untilSignal, UsageError } from "../lib/index.ts";
import { DEFAULTS } from "./options.ts";
import { parseListen, startProxy } from "./server.ts";

const proxyUsage = `
usage: forge proxy --upstream URL [--upstream URL ...] --data DIR [--listen HOST:PORT]
                   [--mode train|eval] [--admin-token TOKEN] [--max-body-bytes N]
                   [--group-commit-ms N] [--first-byte-timeout-ms N] [--idle-timeout-ms N]
                   [--pause-bound-ms N] [--public-url URL] [--upstream-protocol chat|anthropic|responses]
                   [--connection-idle-timeout-s N] [--max-connections N] [--max-stream-bytes N] [--json]
                   [--engine vllm|sglang|auto]

Serves the recording proxy: OpenAI Chat Completions and Completions at /r/ROLLOUT/v1/... (and
/v1/... with a rollout's key), the control API at /control/..., /healthz and /metrics.
Every model call is recorded token for token to DIR/log (docs/proxy.md).

  --upstream URL            OpenAI-compatible base URL (vLLM, SGLang, any API); repeat for several
  --data DIR                data directory (segment log in DIR/log)
  --listen HOST:PORT        address (default ${DEFAULTS.listen})
  --mode train|eval         train: ask for and record token ids and logprobs (default); eval: requests unchanged
  --admin-token TOKEN       admin token of the control API (default: env FORGE_ADMIN_TOKEN, else generated and printed)
  --max-body-bytes N        largest request body (default ${DEFAULTS.maxBodyBytes})
  --group-commit-ms N       fsync interval of the log (default ${DEFAULTS.groupCommitMs})
  --first-byte-timeout-ms N upstream answer deadline (default ${DEFAULTS.firstByteTimeoutMs})
  --idle-timeout-ms N       longest gap between upstream stream chunks (default ${DEFAULTS.idleTimeoutMs})
  --pause-bound-ms N        longest a call waits while paused before 429 (default ${DEFAULTS.pauseBoundMs})
  --max-concurrent-calls N  model calls in flight past which new ones get 429 + Retry-After (default ${DEFAULTS.maxConcurrentCalls})
  --public-url URL          base URL handed to harnesses in registration answers (default: the listen
                            address; set it when harnesses reach the proxy under another name)
  --connection-idle-timeout-s N
                            seconds a harness connection may sit idle before it is closed, 1..255
                            (default ${DEFAULTS.connectionIdleTimeoutS}; a call in progress is never cut by it)
  --max-connections N       open descriptors (connections and files) past which idle connections are
                            closed and new requests get 503 (default: ulimit -n minus a reserve)
  --max-stream-bytes N      largest upstream stream one call may read; past it the call ends with an
                            error event and is recorded as such (default ${DEFAULTS.maxStreamBytes})
  --upstream-protocol P     chat (default): Anthropic Messages and Responses calls are translated to
                            Chat Completions; anthropic|responses: the upstream is that vendor API and
                            those calls pass through unchanged (eval only: no token ids; docs/front-doors.md)
  --json                    print one JSON line with the URL once listening
  --engine vllm|sglang|auto the inference engine of the upstreams (default auto: each says who it is); train
                            mode asks it for ids its own way and refuses at start an engine that returns
                            none, naming the version needed (docs/engines.md)

The upstream API key is read from env FORGE_UPSTREAM_API_KEY (or OPENAI_API_KEY).
`;

/**
 * @example
 * await proxyCommand(["--upstream", "http://127.0.0.1:8000/v1", "--data", "data"]);
 */
export async function proxyCommand(argv: string[]): Promise<number> {
  const args = parseCommand(
    {
      name: "proxy",
      usage: proxyUsage,
      options: {
        listen: { type: "string" },
        upstream: { type: "string", multiple: true },
        data: { type: "string" },
        mode: { type: "string" },
        "admin-token": { type: "string" },
        "max-body-bytes": { type: "string" },
        "group-commit-ms": { type: "string" },
        "first-byte-timeout-ms": { type: "string" },
        "idle-timeout-ms": { type: "string" },
        "pause-bound-ms": { type: "string" },
        "max-concurrent-calls": { type: "string" },
        "public-url": { type: "string" },
        "connection-idle-timeout-s": { type: "string" },
        "max-connections": { type: "string" },
        "max-stream-bytes": { type: "string" },
        "upstream-protocol": { type: "string" },
        engine: { type: "string" },
        json: { type: "boolean" },
      },
    },
    argv,
  );
  if (!args) return 0;
  const v = args.values;
  if (!v.upstream || v.upstream.length === 0) throw new UsageError(`forge proxy: --upstream URL is required\n${proxyUsage}`);
  if (!v.data) throw new UsageError(`forge proxy: --data DIR is required\n${proxyUsage}`);
  const mode = v.mode ?? "train";
  if (mode !== "train" && mode !== "eval") throw new UsageError(`--mode must be train or eval, got "${mode}"`);
  const upstreamProtocol = v["upstream-protocol"] ?? "chat";
  if (upstreamProtocol !== "chat" && upstreamProtocol !== "anthropic" && upstreamProtocol !== "responses") {
    throw new UsageError(`--upstream-protocol must be chat, anthropic or responses, got "${upstreamProtocol}"`);
  }
  if (upstreamProtocol !== "chat" && mode !== "eval") {
    throw new UsageError(`--upstream-protocol ${upstreamProtocol} passes calls through to a vendor API, which returns no token ids: add --mode eval`);
  }
  const engine = v.engine ?? "auto";
  if (engine !== "vllm" && engine !== "sglang" && engine !== "auto") throw new UsageError(`--engine must be vllm, sglang or auto, got "${engine}"`);
  const listen = v.listen ?? DEFAULTS.listen;
  let hostname: string;
  try {
    hostname = parseListen(listen).hostname;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const idleS = intFlag("connection-idle-timeout-s", v["connection-idle-timeout-s"], DEFAULTS.connectionIdleTimeoutS);
  if (idleS < 1 || idleS > 255) throw new UsageError(`--connection-idle-timeout-s must be from 1 to 255 seconds (Bun's range), got ${idleS}`);
  const explicitToken = v["admin-token"] ?? process.env.FORGE_ADMIN_TOKEN;
  if (!isLoopback(hostname) && !explicitToken) {
    console.error(`forge proxy: WARNING: listening on ${hostname} (not loopback) with a generated admin token; pass --admin-token or FORGE_ADMIN_TOKEN for a deployment`);
  }
  if (process.env.BUN_CONFIG_MAX_HTTP_REQUESTS === undefined) {
    // Bun reads this once at start: without it, upstream fetches past 256 at a time queue
    // inside the proxy, unseen by /metrics. `bun run forge` sets it; a bare `bun` does not.
    console.error("forge proxy: note: BUN_CONFIG_MAX_HTTP_REQUESTS is unset, so at most 256 upstream calls run at once; start with BUN_CONFIG_MAX_HTTP_REQUESTS=4096 (as `bun run forge` does) for more");
  }
  const started = await startProxy({
    listen,
    upstreams: v.upstream,
    dataDir: v.data,
    mode,
    adminToken: v["admin-token"],
    maxBodyBytes: intFlag("max-body-bytes", v["max-body-bytes"], DEFAULTS.maxBodyBytes),
    groupCommitMs: intFlag("group-commit-ms", v["group-commit-ms"], DEFAULTS.groupCommitMs),
    firstByteTimeoutMs: intFlag("first-byte-timeout-ms", v["first-byte-timeout-ms"], DEFAULTS.firstByteTimeoutMs),
    idleTimeoutMs: intFlag("idle-timeout-ms", v["idle-timeout-ms"], DEFAULTS.idleTimeoutMs),
    pauseBoundMs: intFlag("pause-bound-ms", v["pause-bound-ms"], DEFAULTS.pauseBoundMs),
    maxConcurrentCalls: intFlag("max-concurrent-calls", v["max-concurrent-calls"], DEFAULTS.maxConcurrentCalls),
    publicUrl: v["public-url"],
    upstreamProtocol,
    connectionIdleTimeoutS: idleS,
    maxConnections: intFlag("max-connections", v["max-connections"], DEFAULTS.maxConnections),
    maxStreamBytes: intFlag("max-stream-bytes", v["max-stream-bytes"], DEFAULTS.maxStreamBytes),
    engine,
  });
  const { state } = started.proxy;
  for (const r of state.log.recovered) {
    const what = r.truncated ? `cut ${r.cutBytes} bytes of a torn final frame` : `skipped ${r.bytes} damaged bytes (the records around them are read)`;
    console.error(`forge proxy: WARNING: ${state.log.dir}/${r.segment}: ${r.reason}: ${what}; copy in ${r.quarantine}`);
  }
  if (v.json) {
    console.log(JSON.stringify({ url: started.url, mode, data: v.data, restored: state.restored, ...(state.adminTokenGenerated ? { admin_token: state.adminToken } : {}) }));
  } else {
    console.log(`forge proxy listening on ${started.url} (${mode} mode), recording to ${state.log.dir}`);
    console.log(`upstreams: ${state.router.upstreams.map((u) => u.url).join(", ")}`);
    const e = state.engine;
    console.log(`engine: ${e.identified ? `${e.info.kind}${e.info.version ? ` ${e.info.version}` : ""} (${e.info.how})` : `not identified yet (${e.info.how})`}${e.pending.size ? `; waiting for ${[...e.pending].join(", ")}` : ""}`);
    if (state.restored.rollouts > 0) console.log(`continuing ${state.restored.rollouts} rollouts, ${state.restored.calls} calls from the log`);
    // Printed once, on purpose, so the operator can use it; never logged anywhere else.
    if (state.adminTokenGenerated) console.log(`admin token (generated): ${state.adminToken}`);
  }
  const signal = await untilSignal();
  console.error(`forge proxy: ${signal}, stopping`);
  await started.stop();
  return 0;
}


function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname.startsWith("127.") || hostname === "::1";
}
