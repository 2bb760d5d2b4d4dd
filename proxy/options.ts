/** Options of the proxy and their defaults. */
import type { ShardOptions } from "./shards.ts";
import type { FrontDoor } from "./doors/types.ts";
import type { WriterIo } from "../records/index.ts";
import type { AdminThrottleOptions } from "./routes/auth.ts";
import type { EngineSetting } from "./engines/kinds.ts";
import type { TokenInOptions } from "./token-in/index.ts";

export interface ProxyOptions {
  /** `HOST:PORT` to serve on (startProxy). Default 127.0.0.1:8787. */
  listen?: string;
  /** OpenAI-compatible upstream base URLs (vLLM, SGLang, any API). */
  upstreams: string[];
  /** Data directory; the segment log is `dataDir/log`. */
  dataDir: string;
  /** train: token ids and logprobs asked for and recorded; eval: requests unchanged. Default train. */
  mode?: "train" | "eval";
  /**
   * The engine of the upstreams (docs/engines.md): how train mode asks for ids. `auto` (default)
   * asks each upstream who it is; an explicit one is checked against what the upstream says.
   */
  engine?: EngineSetting;
  /** Train mode: probe each upstream for ids at start and refuse one that returns none. Default true. */
  engineProbe?: boolean;
  /** Admin token of the control API. Default: FORGE_ADMIN_TOKEN, else a generated one (see `state.adminToken`). */
  adminToken?: string;
  /** Upstream API key. Default: FORGE_UPSTREAM_API_KEY, else OPENAI_API_KEY. */
  upstreamApiKey?: string;
  /** Largest request body. Default 32 MiB (screenshots). */
  maxBodyBytes?: number;
  /** Largest upstream JSON / error body read. Default 64 MiB. */
  maxResponseBytes?: number;
  /** From sending a call upstream to its answer's headers. Default 600000. */
  firstByteTimeoutMs?: number;
  /** Between two chunks of an upstream stream. Default 120000. */
  idleTimeoutMs?: number;
  /** The recorder's group-commit fsync interval. Default 50. */
  groupCommitMs?: number;
  /**
   * Delay after the start before the segments a segment index vouched for get their recovery
   * check (a read of each; docs/proxy.md, "Restart"). Default 1000.
   */
  integrityCheckDelayMs?: number;
  /**
   * This proxy is shard `index` of `count`, each with its own data directory; `urls[i]` reaches
   * shard i (docs/scale.md, "A sharded proxy"). Its own URL is its public URL unless one is given.
   */
  shards?: ShardOptions;
  /** Model calls in flight (held by a pause included) past which new ones get 429. Default 4096. */
  maxConcurrentCalls?: number;
  /** How long a call may wait while paused before 429. Default 300000. */
  pauseBoundMs?: number;
  /** Upstream health-check interval; 0 disables. Default 5000. */
  healthIntervalMs?: number;
  /**
   * Base URL given to harnesses in registration answers. Default: the address the proxy listens
   * on (startProxy), never a request's Host header.
   */
  publicUrl?: string;
  /** Seconds a harness connection may sit idle before it is closed (1..255). Default 60. */
  connectionIdleTimeoutS?: number;
  /**
   * Open descriptors (connections and files) past which idle connections are closed and new
   * requests refused with 503. Default 0: the descriptor limit (ulimit -n) minus a reserve.
   */
  maxConnections?: number;
  /** Largest upstream stream (bytes read) one call may take; past it the call ends with an error. Default 64 MiB. */
  maxStreamBytes?: number;
  /** Failed admin-token attempts per client address (burst, then one per refillMs). For tests. */
  adminThrottle?: AdminThrottleOptions;
  /**
   * What the upstream speaks: "chat" (default: vLLM/SGLang; Anthropic and Responses calls are
   * translated), or "anthropic" / "responses" (a vendor API: those calls pass through; eval only).
   */
  upstreamProtocol?: "chat" | "anthropic" | "responses";
  /**
   * Token-in mode (docs/token-in.md): the proxy renders each Chat call's prompt with this
   * model's tokenizer and chat template, keeps each conversation's ids canonical, sends the
   * engine token ids and parses the completion with the model's parsers. Train mode only.
   * Absent: engine mode (the engine renders, the proxy records its ids).
   */
  tokenIn?: TokenInOptions;
  /** Front doors served. Default: chat, completions, anthropic_messages, responses. */
  frontDoors?: readonly FrontDoor[];
  /** For tests: the recorder's system calls (to inject ENOSPC/EIO). */
  recorderIo?: WriterIo;
}

export const DEFAULTS = {
  listen: "127.0.0.1:8787",
  maxBodyBytes: 32 * 1024 * 1024,
  maxResponseBytes: 64 * 1024 * 1024,
  firstByteTimeoutMs: 600_000,
  idleTimeoutMs: 120_000,
  groupCommitMs: 50,
  integrityCheckDelayMs: 1000,
  pauseBoundMs: 300_000,
  maxConcurrentCalls: 4096,
  healthIntervalMs: 5000,
  connectionIdleTimeoutS: 60,
  maxConnections: 0,
  maxStreamBytes: 64 * 1024 * 1024,
  mode: "train",
  upstreamProtocol: "chat",
  engine: "auto",
  engineProbe: true,
} as const;

/** The options with each default filled in. */
export type ResolvedProxyOptions = ProxyOptions & { [K in keyof typeof DEFAULTS]: NonNullable<ProxyOptions[K]> };

/**
 * `options` with every option it leaves out (or gives as undefined) set to its default.
 *
 * @example
 * withDefaults({ upstreams: [], dataDir: "d" }).idleTimeoutMs // 120000
 */
export function withDefaults(options: ProxyOptions): ResolvedProxyOptions {
  const resolved: Record<string, unknown> = { ...options };
  for (const [name, value] of Object.entries(DEFAULTS)) resolved[name] ??= value;
  return resolved as unknown as ResolvedProxyOptions;
}
