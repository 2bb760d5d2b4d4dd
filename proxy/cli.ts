/**
 * `forge proxy`: the recording proxy until Ctrl-C.
 */
import { join } from "node:path";
import { intFlag, parseCommand, untilSignal, UsageError } from "../lib/index.ts";
import { evalInstructions, registerEvalRollout, type EvalRollout } from "./eval-rollout.ts";
import { DEFAULTS, type ProxyOptions } from "./options.ts";
import { parseListen, startProxy, type StartedProxy } from "./server.ts";
import { parseShards, type ShardOptions } from "./shards.ts";
import { hostname } from "node:os";
import { normalizeUpstream } from "./upstream/router.ts";
import type { Recovered } from "../records/index.ts";
import { tokenInOptions, TokenInSettingsError } from "./token-in/spec.ts";
import type { TokenInOptions } from "./token-in/index.ts";

const proxyUsage = `
usage: forge proxy --upstream URL [--upstream URL ...] --data DIR [--listen HOST:PORT]
                   [--mode train|eval] [--upstream-protocol chat|anthropic|responses]
                   [--engine vllm|sglang|auto] [--admin-token TOKEN] [--public-url URL] [--json] [limits...]
                   [--token-in --model-dir DIR [--tool-call-parser P] [--reasoning-parser P] [--max-model-len N]]
       forge proxy --eval --upstream URL [--data DIR] [--rollout ID] [--upstream-protocol P]

Serves the recording proxy. Harnesses call it at /r/ROLLOUT/v1/... (or /v1/... with a rollout's
key) with any of four APIs: OpenAI Chat Completions (/v1/chat/completions), Completions
(/v1/completions), Anthropic Messages (/v1/messages, with count_tokens) and OpenAI Responses
(/v1/responses). The control API is at /control/..., plus /healthz and /metrics. Every model
call is recorded token for token to DIR/log (docs/proxy.md).

  --upstream URL            base URL of the model server (vLLM, SGLang, any OpenAI-compatible API,
                            or with --upstream-protocol a vendor Anthropic / Responses API);
                            repeat for several (calls of a rollout stick to one)
  --data DIR                data directory (segment log in DIR/log); with --eval the default is
                            .forge/eval/<timestamp>
  --listen HOST:PORT        address (default ${DEFAULTS.listen})
  --mode train|eval         train: ask the upstream for token ids and logprobs and record them
                            (default); eval: send requests as the harness wrote them (streams
                            also ask for usage) and record calls without token ids
  --upstream-protocol P     chat (default): Anthropic Messages and Responses calls are translated to
                            Chat Completions for the upstream; anthropic | responses: the upstream
                            is that vendor API and those calls pass through unchanged (eval only,
                            vendor APIs return no token ids; docs/front-doors.md)
  --engine vllm|sglang|auto the inference engine of the upstreams (default auto: each says who it is); train
                            mode asks it for ids its own way and refuses at start an engine that returns
                            none, naming the version needed (docs/engines.md)
  --token-in                token-in mode (train only; docs/token-in.md): the proxy renders each Chat call's
                            prompt with the model's tokenizer and chat template, keeps each conversation's
                            token ids canonical (a call that continues one gets its ids + the new
                            messages), sends the engine token ids (vLLM /v1/completions, SGLang /generate)
                            and parses the completion with the model's parsers
  --model-dir DIR           with --token-in: the served model's directory (tokenizer.json and
                            tokenizer_config.json with its chat template); "qwen3": the Qwen3 files
                            OpenForge ships (the policy simulator's); "qwen3-coder": Qwen3-Coder's
                            template over them (the simulator's --tool-call-parser qwen3_coder)
  --tool-call-parser P      with --token-in: the engine's tool-call parser (default hermes;
                            qwen3_coder for --model-dir qwen3-coder)
  --reasoning-parser P      with --token-in: the engine's reasoning parser (default qwen3; none for none,
                            the default for --model-dir qwen3-coder)
  --max-model-len N         with --token-in: the engine's context length (default: its /v1/models max_model_len)
  --max-held-tokens N       with --token-in: the token ids this shard's open rollouts' chains may hold
                            (default 50331648, 192 MiB of ids); past it a new rollout's first call
                            gets a 503 until open ones finish (docs/performance.md, "Memory per rollout")
  --token-in-route R        with --token-in on vLLM: auto (default: generate where the engine serves
                            it, asked once per set of upstreams), completions (/v1/completions,
                            every vLLM server) or generate (/inference/v1/generate, vLLM started
                            with --enable-scale-out: lighter answers, nothing decoded by the
                            engine; docs/token-in.md)
  --eval                    evaluation in one step: --mode eval, registers one rollout and prints
                            the base URLs and key to point a harness at, and how to read what
                            was recorded (docs/eval.md)
  --rollout ID              with --eval: the rollout's id (default eval-<timestamp>)
  --admin-token TOKEN       admin token of the control API (default: env FORGE_ADMIN_TOKEN, else
                            generated and printed once)
  --public-url URL          base URL handed to harnesses in registration answers (default: the listen
                            address; set it when harnesses reach the proxy under another name)
  --shard I/N               this proxy is shard I of N (auto/N: I from the host name's trailing
                            -<ordinal>, as a StatefulSet names its pods), each with its own --data;
                            it owns the rollouts hashed to it and passes other shards' control
                            requests on (docs/scale.md)
  --shard-url URL           each shard's base URL, in order, once per shard (or one template with
                            {i}); its own is its --public-url unless one is given
  --json                    print one JSON line with the URL (and the eval rollout) once listening

limits:
  --max-body-bytes N        largest request body (default ${DEFAULTS.maxBodyBytes})
  --group-commit-ms N       fsync interval of the log (default ${DEFAULTS.groupCommitMs})
  --first-byte-timeout-ms N upstream answer deadline (default ${DEFAULTS.firstByteTimeoutMs})
  --idle-timeout-ms N       longest gap between upstream stream chunks (default ${DEFAULTS.idleTimeoutMs})
  --pause-bound-ms N        longest a call waits while paused before 429 (default ${DEFAULTS.pauseBoundMs})
  --max-concurrent-calls N  model calls in flight past which new ones get 429 + Retry-After (default ${DEFAULTS.maxConcurrentCalls})
  --connection-idle-timeout-s N
                            seconds a harness connection may sit idle before it is closed, 1..255
                            (default ${DEFAULTS.connectionIdleTimeoutS}; a call in progress is never cut by it)
  --max-connections N       open descriptors (connections and files) past which idle connections are
                            closed and new requests get 503 (default: ulimit -n minus a reserve)
  --max-stream-bytes N      largest upstream stream one call may read; past it the call ends with an
                            error event and is recorded as such (default ${DEFAULTS.maxStreamBytes})

Register a rollout (admin token): POST /control/rollouts {"experiment": E, "task_id": T,
"rollout_id"?, "group"?, "attempt"?, "iteration"?, "harness"?, "labels"?} answers
{rollout_id, api_key, openai_base_url, anthropic_base_url, policy_version}.
The upstream API key is read from env FORGE_UPSTREAM_API_KEY (or OPENAI_API_KEY).
`;

/** The flags of `forge proxy` (proxyUsage says what each does). */
const PROXY_FLAGS = {
    listen: { type: "string" },
    upstream: { type: "string", multiple: true },
    data: { type: "string" },
    mode: { type: "string" },
    eval: { type: "boolean" },
    rollout: { type: "string" },
    "admin-token": { type: "string" },
    "max-body-bytes": { type: "string" },
    "group-commit-ms": { type: "string" },
    "first-byte-timeout-ms": { type: "string" },
    "idle-timeout-ms": { type: "string" },
    "pause-bound-ms": { type: "string" },
    "max-concurrent-calls": { type: "string" },
    "public-url": { type: "string" },
    shard: { type: "string" },
    "shard-url": { type: "string", multiple: true },
    "connection-idle-timeout-s": { type: "string" },
    "max-connections": { type: "string" },
    "max-stream-bytes": { type: "string" },
    "upstream-protocol": { type: "string" },
    engine: { type: "string" },
    "token-in": { type: "boolean" },
    "model-dir": { type: "string" },
    "tool-call-parser": { type: "string" },
    "reasoning-parser": { type: "string" },
    "max-model-len": { type: "string" },
    "max-held-tokens": { type: "string" },
    "token-in-route": { type: "string" },
    json: { type: "boolean" },
} as const;

/**
 * @example
 * await proxyCommand(["--upstream", "http://127.0.0.1:8000/v1", "--data", "data"]);
 */
export async function proxyCommand(argv: string[]): Promise<number> {
  const args = parseCommand({ name: "proxy", usage: proxyUsage, options: PROXY_FLAGS }, argv);
  if (!args) return 0;
  const v = args.values;
  const { options, evalMode } = proxyOptionsOf(v);
  const { mode, dataDir, tokenIn } = options;
  const started = await startProxy(options);
  const { state } = started.proxy;
  reportRecovered(state);
  let evalRollout: EvalRollout | undefined;
  if (evalMode) {
    try {
      evalRollout = await registerEvalRollout(started.url, state.adminToken, v.rollout ?? `eval-${timestamp()}`);
    } catch (error) {
      await started.stop();
      throw error;
    }
  }
  if (v.json) {
    console.log(
      JSON.stringify({
        url: started.url,
        mode,
        data: dataDir,
        restored: state.restored,
        ...(state.adminTokenGenerated ? { admin_token: state.adminToken } : {}),
        ...(evalRollout ? { rollout: evalRollout } : {}),
      }),
    );
  } else {
    console.log(`forge proxy listening on ${started.url} (${mode} mode${tokenIn ? `, token-in: ${tokenIn.model.dir}, ${tokenIn.model.toolParser} / ${tokenIn.model.reasoningParser ?? "no"} parsers` : ""}), recording to ${state.log.dir}`);
    console.log(`upstreams: ${state.router.upstreams.map((u) => u.url).join(", ")}`);
    const e = state.engine;
    console.log(`engine: ${e.identified ? `${e.info.kind}${e.info.version ? ` ${e.info.version}` : ""} (${e.info.how})` : `not identified yet (${e.info.how})`}${e.pending.size ? `; waiting for ${[...e.pending].join(", ")}` : ""}`);
    if (state.restored.rollouts > 0) console.log(`continuing ${state.restored.rollouts} rollouts, ${state.restored.calls} calls from the log`);
    // Printed once, on purpose, so the operator can use it; never logged anywhere else.
    if (state.adminTokenGenerated) console.log(`admin token (generated): ${state.adminToken}`);
    if (evalRollout) console.log(`\n${evalInstructions(evalRollout, started.url, dataDir)}`);
  }
  const signal = await untilSignal();
  console.error(`forge proxy: ${signal}, stopping`);
  await started.stop();
  return 0;
}

type ProxyFlags = Record<string, any>;

/** The flags as the proxy's options (a usage error names a bad flag); warns about a risky setup on stderr. */
function proxyOptionsOf(v: ProxyFlags): { options: ProxyOptions & { mode: "train" | "eval"; dataDir: string }; evalMode: boolean } {
  if (!v.upstream || v.upstream.length === 0) throw new UsageError(`forge proxy: --upstream URL is required\n\n${proxyUsage.trim()}`);
  for (const url of v.upstream) {
    try {
      normalizeUpstream(url);
    } catch (error) {
      throw new UsageError(`forge proxy: --upstream: ${(error as Error).message}`);
    }
  }
  const evalMode = v.eval === true;
  if (v.rollout !== undefined && !evalMode) throw new UsageError("forge proxy: --rollout names the rollout --eval registers: add --eval (or register rollouts with POST /control/rollouts)");
  if (evalMode && v.mode !== undefined && v.mode !== "eval") throw new UsageError(`forge proxy: --eval records without token ids, so it cannot run with --mode ${v.mode}`);
  const dataDir = v.data ?? (evalMode ? join(".forge", "eval", timestamp()) : undefined);
  if (!dataDir) throw new UsageError(`forge proxy: --data DIR is required\n\n${proxyUsage.trim()}`);
  const mode = evalMode ? "eval" : (v.mode ?? "train");
  if (mode !== "train" && mode !== "eval") throw new UsageError(`forge proxy: --mode must be train or eval, got "${mode}"`);
  const upstreamProtocol = v["upstream-protocol"] ?? "chat";
  if (upstreamProtocol !== "chat" && upstreamProtocol !== "anthropic" && upstreamProtocol !== "responses") {
    throw new UsageError(`forge proxy: --upstream-protocol must be chat, anthropic or responses, got "${upstreamProtocol}"`);
  }
  if (upstreamProtocol !== "chat" && mode !== "eval") {
    throw new UsageError(`forge proxy: --upstream-protocol ${upstreamProtocol} passes calls through to a vendor API, which returns no token ids: add --mode eval (or --eval)`);
  }
  const engine = v.engine ?? "auto";
  if (engine !== "vllm" && engine !== "sglang" && engine !== "auto") throw new UsageError(`--engine must be vllm, sglang or auto, got "${engine}"`);
  const tokenIn = tokenInFlags(v, mode);
  const listen = v.listen ?? DEFAULTS.listen;
  let hostname: string;
  try {
    hostname = parseListen(listen).hostname;
  } catch (error) {
    throw new UsageError(`forge proxy: ${(error as Error).message}`);
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
  const options = {
    listen,
    upstreams: v.upstream,
    dataDir,
    mode,
    adminToken: v["admin-token"],
    maxBodyBytes: intFlag("max-body-bytes", v["max-body-bytes"], DEFAULTS.maxBodyBytes),
    groupCommitMs: intFlag("group-commit-ms", v["group-commit-ms"], DEFAULTS.groupCommitMs),
    firstByteTimeoutMs: intFlag("first-byte-timeout-ms", v["first-byte-timeout-ms"], DEFAULTS.firstByteTimeoutMs),
    idleTimeoutMs: intFlag("idle-timeout-ms", v["idle-timeout-ms"], DEFAULTS.idleTimeoutMs),
    pauseBoundMs: intFlag("pause-bound-ms", v["pause-bound-ms"], DEFAULTS.pauseBoundMs),
    maxConcurrentCalls: intFlag("max-concurrent-calls", v["max-concurrent-calls"], DEFAULTS.maxConcurrentCalls),
    publicUrl: v["public-url"],
    ...(v.shard !== undefined ? { shards: shardsFlag(v.shard, v["shard-url"] ?? []) } : {}),
    upstreamProtocol,
    connectionIdleTimeoutS: idleS,
    maxConnections: intFlag("max-connections", v["max-connections"], DEFAULTS.maxConnections),
    maxStreamBytes: intFlag("max-stream-bytes", v["max-stream-bytes"], DEFAULTS.maxStreamBytes),
    engine,
    ...(tokenIn ? { tokenIn } : {}),
  } satisfies ProxyOptions;
  return { options, evalMode };
}

/** Damage the start found in the log, and later the check of the segments an index vouched for: on stderr. */
function reportRecovered(state: StartedProxy["proxy"]["state"]): void {
  const warn = (r: Recovered) => {
    const what = r.truncated ? `cut ${r.cutBytes} bytes of a torn final frame` : `skipped ${r.bytes} damaged bytes (the records around them are read)`;
    console.error(`forge proxy: WARNING: ${state.log.dir}/${r.segment}: ${r.reason}: ${what}; copy in ${r.quarantine}`);
  };
  for (const r of state.log.recovered) warn(r);
  // Segments vouched for by their index are checked after the start; damage is reported as found.
  state.integrity.then((found) => found.forEach(warn)).catch((error: unknown) => console.error(`forge proxy: WARNING: checking the log after the start failed: ${(error as Error).message}`));
}

/** `--token-in` and its model flags → the proxy's token-in options (a usage error names the flag). */
function tokenInFlags(v: Record<string, unknown>, mode: string): TokenInOptions | undefined {
  const modelFlags = ["model-dir", "tool-call-parser", "reasoning-parser", "max-model-len", "max-held-tokens", "token-in-route"].filter((f) => v[f] !== undefined);
  if (v["token-in"] !== true) {
    if (modelFlags.length > 0) throw new UsageError(`forge proxy: --${modelFlags[0]} is a token-in setting: add --token-in`);
    return undefined;
  }
  if (mode !== "train") throw new UsageError("forge proxy: --token-in renders prompts for training and records the ids it sends: it runs in train mode, not with --mode eval / --eval");
  if (typeof v["model-dir"] !== "string") throw new UsageError('forge proxy: --token-in needs --model-dir DIR, the served model\'s tokenizer.json and tokenizer_config.json (or "qwen3" for the Qwen3 files OpenForge ships)');
  try {
    return tokenInOptions({
      modelDir: v["model-dir"],
      toolParser: v["tool-call-parser"] as string | undefined,
      reasoningParser: v["reasoning-parser"] as string | undefined,
      maxModelLen: v["max-model-len"] === undefined ? undefined : intFlag("max-model-len", v["max-model-len"] as string, 0),
      maxHeldTokens: v["max-held-tokens"] === undefined ? undefined : intFlag("max-held-tokens", v["max-held-tokens"] as string, 0),
      route: v["token-in-route"] as string | undefined,
    });
  } catch (error) {
    if (error instanceof TokenInSettingsError) throw new UsageError(`forge proxy: ${error.message}`);
    throw error;
  }
}

function timestamp(): string {
  return new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");
}

function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname.startsWith("127.") || hostname === "::1";
}

/** `--shard` and `--shard-url` → the proxy's shard options (a usage error names what is wrong). */
function shardsFlag(shard: string, urls: string[]): ShardOptions {
  try {
    return parseShards(shard, urls, hostname());
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
