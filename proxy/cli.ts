/**
 * `forge proxy` (the recording proxy), `forge policy-sim` (re-exported from the simulator)
 * and `forge demo` (simulator + proxy in-process, one recorded streaming call).
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { intFlag, parseCommand, untilSignal, UsageError } from "../bin/cli.ts";
import { CallStatus, TokenStatus } from "../schemas/index.ts";
import { readRecords } from "./recorder/index.ts";
import { DEFAULTS } from "./options.ts";
import { parseListen, startProxy } from "./server.ts";

/**
 * `forge policy-sim`, from the simulator (loaded on use: its tokenizer is large, and
 * `forge proxy` should start fast).
 *
 * @example
 * await policySimCommand(["--listen", "127.0.0.1:0"]);
 */
export async function policySimCommand(argv: string[]): Promise<number> {
  return (await import("./simulator/cli.ts")).policySimCommand(argv);
}

const proxyUsage = `
usage: forge proxy --upstream URL [--upstream URL ...] --data DIR [--listen HOST:PORT]
                   [--mode train|eval] [--admin-token TOKEN] [--max-body-bytes N]
                   [--group-commit-ms N] [--first-byte-timeout-ms N] [--idle-timeout-ms N]
                   [--pause-bound-ms N] [--public-url URL] [--upstream-protocol chat|anthropic|responses] [--json]

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
  --public-url URL          base URL handed to harnesses (default: the origin a request came to)
  --upstream-protocol P     chat (default): Anthropic Messages and Responses calls are translated to
                            Chat Completions; anthropic|responses: the upstream is that vendor API and
                            those calls pass through unchanged (eval only: no token ids; docs/front-doors.md)
  --json                    print one JSON line with the URL once listening

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
        "upstream-protocol": { type: "string" },
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
  const listen = v.listen ?? DEFAULTS.listen;
  let hostname: string;
  try {
    hostname = parseListen(listen).hostname;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
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
  });
  const { state } = started.proxy;
  if (v.json) {
    console.log(JSON.stringify({ url: started.url, mode, data: v.data, restored: state.restored, ...(state.adminTokenGenerated ? { admin_token: state.adminToken } : {}) }));
  } else {
    console.log(`forge proxy listening on ${started.url} (${mode} mode), recording to ${state.log.dir}`);
    console.log(`upstreams: ${state.router.upstreams.map((u) => u.url).join(", ")}`);
    if (state.restored.rollouts > 0) console.log(`continuing ${state.restored.rollouts} rollouts, ${state.restored.calls} calls from the log`);
    // Printed once, on purpose, so the operator can use it; never logged anywhere else.
    if (state.adminTokenGenerated) console.log(`admin token (generated): ${state.adminToken}`);
  }
  const signal = await untilSignal();
  console.error(`forge proxy: ${signal}, stopping`);
  await started.stop();
  return 0;
}

const demoUsage = `
usage: forge demo [--data DIR] [--json]

Starts the policy simulator (a stand-in for the model) and the recording proxy in this process
on free loopback ports, registers a rollout, sends one streaming chat call through the proxy
with the official openai client, and prints the record it wrote.

  --data DIR   data directory (default: a new temp dir)
  --json       print the summary as JSON
`;

/**
 * @example
 * await demoCommand([]); // prints seq, token counts, token_status, policy version, data dir
 */
export async function demoCommand(argv: string[]): Promise<number> {
  const args = parseCommand({ name: "demo", usage: demoUsage, options: { data: { type: "string" }, json: { type: "boolean" } } }, argv);
  if (!args) return 0;
  const dataDir = args.values.data ?? (await mkdtemp(join(tmpdir(), "forge-demo-")));
  if (!args.values.json) console.error("demo: starting the policy simulator (loading the Qwen3 tokenizer) and the proxy...");
  const { startPolicySimulator } = await import("./simulator/index.ts");
  const sim = await startPolicySimulator({ seed: 1 });
  const adminToken = `demo-${crypto.randomUUID()}`;
  const proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [`${sim.url}/v1`], dataDir, mode: "train", adminToken, healthIntervalMs: 0 });
  try {
    const registered = await fetch(`${proxy.url}/control/rollouts`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ experiment: "demo", task_id: "hello", harness: "openai-node" }),
    });
    if (registered.status !== 201) throw new Error(`registering the demo rollout failed: HTTP ${registered.status} ${await registered.text()}`);
    const rollout = (await registered.json()) as { rollout_id: string; api_key: string; openai_base_url: string };
    const client = new OpenAI({ baseURL: rollout.openai_base_url, apiKey: rollout.api_key, maxRetries: 0 });
    let text = "";
    const stream = await client.chat.completions.create({ model: "forge-sim/qwen3-sim", messages: [{ role: "user", content: "Say hello to OpenForge." }], stream: true });
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    await fetch(`${proxy.url}/control/rollouts/${rollout.rollout_id}/finish`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ reward: 1, status: "ok" }),
    });
    let summary: Record<string, unknown> | undefined;
    for await (const { record } of readRecords(dataDir)) {
      if (record.kind.case !== "modelCall") continue;
      const c = record.kind.value;
      summary = {
        rollout_id: c.rolloutId,
        seq: c.seq,
        call_id: c.callId,
        status: CallStatus[c.status],
        stream: c.stream,
        prompt_tokens: c.promptLen,
        completion_tokens: c.completionTokenIds.length,
        logprobs: c.completionLogprobs.length,
        token_status: TokenStatus[c.tokenStatus],
        policy_version: c.policyVersion,
        upstream: c.upstream,
        data_dir: dataDir,
        answer: text,
      };
    }
    if (!summary) throw new Error(`no ModelCall record found in ${dataDir}`);
    if (args.values.json) console.log(JSON.stringify(summary));
    else {
      console.log(`harness received: ${JSON.stringify(text)}`);
      console.log("recorded ModelCall:");
      for (const [k, val] of Object.entries(summary)) if (k !== "answer") console.log(`  ${k.padEnd(17)} ${val}`);
    }
    return 0;
  } finally {
    await proxy.stop();
    await sim.stop();
  }
}

function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname.startsWith("127.") || hostname === "::1";
}
