/**
 * The recording proxy as a Hono app: model routes per front door, control API, health and
 * metrics, over one segment log. State is rebuilt from the log on start, so a proxy
 * restarted on the same data dir continues its rollouts (seq, keys, prompt deltas).
 */
import { Hono } from "hono";
import type { Server } from "bun";
import { openSegmentLog, type Recovered, type SegmentLog } from "../records/index.ts";
import { createCallRecorder, type CallRecorder } from "./capture/call-recorder.ts";
import { errorResponse, ProxyHttpError } from "./errors.ts";
import { frontDoorsFor } from "./doors/index.ts";
import type { PipelineContext } from "./doors/types.ts";
import { createProxyMetrics, type ProxyMetrics } from "./metrics.ts";
import { withDefaults, type ProxyOptions, type ResolvedProxyOptions } from "./options.ts";
import { mountControlRoutes } from "./routes/control.ts";
import { createAdminThrottle } from "./routes/auth.ts";
import { createConnectionGuard, type ConnectionGuard } from "./connections.ts";
import { mountModelRoutes } from "./routes/model.ts";
import { mountOpsRoutes } from "./routes/ops.ts";
import { createPauseGate, type PauseGate } from "./state/pause.ts";
import { newApiKey } from "./state/keys.ts";
import { createRolloutRegistry, type RolloutRegistry } from "./state/rollouts.ts";
import { indexedLog, restoreFromLog, type LogIndex, type RestoredLog } from "./state/log-index.ts";
import { ownedRolloutId, type ShardOptions } from "./shards.ts";
import { shardRouting } from "./routes/shards.ts";
import { createUpstreamClient } from "./upstream/client.ts";
import { createUpstreamRouter, type UpstreamRouter } from "./upstream/router.ts";
import { checkUpstreams, createEngineState, EngineRefused, recheckPending, type EngineState } from "./engines/check.ts";
import { ENGINE_SETTINGS } from "./engines/kinds.ts";
import { createTokenIn, unfitEngine } from "./token-in/index.ts";

export interface ProxyState {
  mode: "train" | "eval";
  adminToken: string;
  /** True when the admin token was generated (not given by flag or env). */
  adminTokenGenerated: boolean;
  registry: RolloutRegistry;
  gate: PauseGate;
  router: UpstreamRouter;
  recorder: CallRecorder;
  metrics: ProxyMetrics;
  log: SegmentLog;
  /** Idle timeouts and the descriptor cap of harness connections. */
  connections: ConnectionGuard;
  /**
   * What the start found in the log: rollouts and calls restored, damaged byte ranges skipped
   * (each is listed in `log.recovered`, with its quarantined copy), segments taken from their
   * index or scanned, open rollouts whose calls were read again.
   */
  restored: RestoredLog["restored"];
  /** Where each rollout's records are in the log (the trajectory route reads by it). */
  index: LogIndex;
  /**
   * Damage found after the start in the segments the open did not scan (their index vouched
   * for them): quarantined and reported as the open does for the others (state/log-index.ts).
   */
  integrity: Promise<Recovered[]>;
  /** The engine behind the upstreams (docs/engines.md). */
  engine: EngineState;
}

export interface Proxy {
  app: Hono;
  /** Serves one request; `server` is the Bun server it came through (startProxy passes it). */
  fetch: (request: Request, server?: Server<unknown>) => Response | Promise<Response>;
  state: ProxyState;
  /** The base URL handed to harnesses when no `publicUrl` was given (startProxy sets the listen address). */
  setListenUrl(url: string): void;
  /** Stops health checks and closes the log (fsync). */
  close(): Promise<void>;
}

/**
 * Opens the log of `options.dataDir`, rebuilds the rollouts from it and returns the app.
 *
 * @example
 * const proxy = await createProxy({ upstreams: [sim.url], dataDir: "data" });
 * Bun.serve({ port: 0, fetch: proxy.fetch });
 */
export async function createProxy(options: ProxyOptions): Promise<Proxy> {
  const o = withDefaults(options);
  checkModes(o);
  const givenToken = o.adminToken ?? process.env.FORGE_ADMIN_TOKEN;
  const adminToken = givenToken && givenToken !== "" ? givenToken : newApiKey().replace(/^fk-/, "fa-");
  const upstreamApiKey = o.upstreamApiKey ?? process.env.FORGE_UPSTREAM_API_KEY ?? process.env.OPENAI_API_KEY;
  const upstreams = await openUpstreams(o, upstreamApiKey);
  const { router, engine, tokenIn, stopRecheck } = upstreams;
  // The token budget stays above a token-in ceiling set higher than its default (token-in/held.ts).
  const registry = createRolloutRegistry(o.tokenIn?.maxHeldTokens ? { maxRecentTokens: Math.max(64 * 1024 * 1024, Math.ceil((o.tokenIn.maxHeldTokens * 4) / 3)) } : {});
  let restoredLog: RestoredLog;
  try {
    // The rollouts come back from the segment indexes beside the log; only segments without a
    // valid index are read, and only rollouts still open have their calls read again
    // (state/log-index.ts). Damage was quarantined and reported by the open (log.recovered).
    restoredLog = await restoreFromLog(o.dataDir, (verified) => openSegmentLog(o.dataDir, { groupCommitMs: o.groupCommitMs, io: o.recorderIo, verified }), registry, {
      integrityCheckDelayMs: o.integrityCheckDelayMs,
    });
  } catch (error) {
    router.stop();
    stopRecheck();
    throw error;
  }
  const { index, restored } = restoredLog;
  // Every record is noted in the index as it is appended (what the trajectory route reads by).
  const log = indexedLog(restoredLog.log, index);
  const connections = createConnectionGuard({ idleTimeoutS: o.connectionIdleTimeoutS, maxConnections: o.maxConnections });
  let listenUrl = `http://${o.listen}`;
  const publicUrl = () => o.publicUrl ?? o.shards?.urls[o.shards.index] ?? listenUrl;
  const metrics = createProxyMetrics();
  const gate = createPauseGate({ boundMs: o.pauseBoundMs, policyVersion: registry.maxPolicyVersion() });
  const recorder = createCallRecorder(log, registry, metrics);
  const client = createUpstreamClient({ router, apiKey: upstreamApiKey, firstByteTimeoutMs: o.firstByteTimeoutMs });
  const ctx: PipelineContext = {
    mode: o.mode,
    engine,
    client,
    recorder,
    registry,
    gate,
    metrics,
    idleTimeoutMs: o.idleTimeoutMs,
    maxResponseBytes: o.maxResponseBytes,
    maxConcurrentCalls: o.maxConcurrentCalls,
    maxStreamBytes: o.maxStreamBytes,
    admitted: { count: 0 },
    connections,
    ...(tokenIn ? { tokenIn } : {}),
  };

  const app = new Hono();
  app.onError((error) => {
    if (error instanceof ProxyHttpError) return errorResponse(error);
    return errorResponse(new ProxyHttpError(500, `proxy error: ${(error as Error).message}`, "server_error", "proxy_error"));
  });
  app.notFound((c) => errorResponse(new ProxyHttpError(404, `no route ${c.req.method} ${c.req.path} on the forge proxy`, "not_found_error", "unknown_route")));
  mountOpsRoutes(app, { recorder, metrics, gate, router, logDir: log.dir, engine, mode: o.mode });
  mountControlRoutes(app, { adminToken, registry, recorder, log, index, gate, metrics, publicUrl, throttle: createAdminThrottle(o.adminThrottle), connections, ...shardControl(o.shards, registry, gate) });
  mountModelRoutes(app, { ctx, registry, doors: o.frontDoors ?? frontDoorsFor(o.upstreamProtocol, { apiKey: upstreamApiKey }), maxBodyBytes: o.maxBodyBytes });

  return {
    app,
    fetch(request, server) {
      if (server) connections.attach(server);
      // Past the descriptor cap every request is refused at once, before any work.
      return connections.refusal() ?? app.fetch(request);
    },
    state: { mode: o.mode, adminToken, adminTokenGenerated: !givenToken, registry, gate, router, recorder, metrics, log, connections, restored, engine, index, integrity: restoredLog.integrity },
    setListenUrl(url) {
      listenUrl = url;
    },
    async close() {
      router.stop();
      stopRecheck();
      connections.stop();
      restoredLog.stopIntegrityCheck();
      await restoredLog.integrity.catch(() => []);
      await log.close();
      // The segment written since the start is complete now: its index saves the next start a scan.
      index.seal();
    },
  };
}

/** Refuses settings that do not go together: a vendor passthrough or token-in in the wrong mode. */
function checkModes(o: ResolvedProxyOptions): void {
  if (o.mode !== "train" && o.mode !== "eval") throw new Error(`mode must be train or eval, got "${o.mode}"`);
  if (o.upstreamProtocol !== "chat" && o.mode === "train") {
    throw new Error(`upstream protocol "${o.upstreamProtocol}" passes calls through to a vendor API, which returns no token ids: use it with mode eval (--mode eval)`);
  }
  if (o.tokenIn && o.mode !== "train") throw new Error("token-in mode renders prompts for training and records the ids it sends: use it with mode train");
  if (!ENGINE_SETTINGS.includes(o.engine)) throw new Error(`engine must be one of ${ENGINE_SETTINGS.join(", ")}, got "${o.engine}"`);
}

/**
 * The upstreams and the engine behind them: the router (with its health checks), the engine
 * checked (train mode: that it returns ids), token-in's model loaded. Nothing is left running
 * when this throws.
 */
async function openUpstreams(o: ResolvedProxyOptions, upstreamApiKey: string | undefined) {
  const headers = upstreamApiKey ? { authorization: `Bearer ${upstreamApiKey}` } : undefined;
  const router = createUpstreamRouter({ urls: o.upstreams, healthIntervalMs: o.healthIntervalMs, headers });
  // The model's tokenizer and template load before the proxy serves (a bad directory fails the start).
  const tokenIn = o.tokenIn ? createTokenIn(o.tokenIn) : undefined;
  if (tokenIn) await tokenIn.model;
  const engine = createEngineState(o.engine);
  const engineCheck = { mode: o.mode, headers, probe: o.engineProbe };
  // A vendor API passed through (eval only) gets no engine-specific request, and an explicit
  // engine with the probe turned off is taken at its word: nothing to check.
  const skipCheck = o.upstreamProtocol !== "chat" || (o.engine !== "auto" && engineCheck.probe === false);
  if (!skipCheck) {
    try {
      await checkUpstreams(router.upstreams.map((u) => u.url), engine, engineCheck);
      if (tokenIn && unfitEngine(engine)) throw new EngineRefused(unfitEngine(engine));
    } catch (error) {
      router.stop();
      throw error;
    }
  }
  const stopRecheck = o.healthIntervalMs > 0 && !skipCheck ? recheckPending(engine, engineCheck, o.healthIntervalMs) : () => {};
  return { router, engine, tokenIn, stopRecheck };
}

/** The control routes' part in a sharded proxy (routes/shards.ts), when this proxy is one of several shards. */
function shardControl(shards: ShardOptions | undefined, registry: RolloutRegistry, gate: PauseGate) {
  if (!shards || shards.count === 1) return {};
  if (shards.index < 0 || shards.index >= shards.count || shards.urls.length !== shards.count) throw new Error(`shards: shard ${shards.index} of ${shards.count} needs ${shards.count} URLs, got ${shards.urls.length}`);
  return { shards: { route: shardRouting(shards, registry, gate), newRolloutId: () => ownedRolloutId(shards) } };
}
