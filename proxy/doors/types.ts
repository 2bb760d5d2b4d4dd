/**
 * The plug-in surface for protocol front doors. A front door turns a harness request into
 * one upstream request (Chat Completions or Completions, where vLLM/SGLang give token ids)
 * and, where its protocol differs, translates the answer back and shapes its errors. The
 * shared pipeline (doors/pipeline.ts, over a CallInFlight) does everything else: pause gate,
 * routing, token capture, stripping, recording.
 */
import type { Context } from "hono";
import type { Protocol } from "../../schemas/index.ts";
import type { ChatChunk } from "./chat-types.ts";
import type { CaptureKind, HarnessWants } from "../capture/tokens.ts";
import type { RolloutState } from "../state/rollouts.ts";
import type { CallRecorder } from "../capture/call-recorder.ts";
import type { ProxyMetrics } from "../metrics.ts";
import type { PauseGate } from "../state/pause.ts";
import type { RolloutRegistry } from "../state/rollouts.ts";
import type { UpstreamClient } from "../upstream/client.ts";
import type { ConnectionGuard } from "../connections.ts";
import type { EngineState } from "../engines/check.ts";
import type { TokenIn } from "../token-in/index.ts";
import type { EngineError } from "../engines/errors.ts";

export interface PreparedCall {
  /** The upstream API whose answer is captured (and stripped of the train-mode fields). */
  capture: CaptureKind;
  /** Upstream path, e.g. "/v1/chat/completions". */
  upstreamPath: string;
  model: string;
  stream: boolean;
  /** The upstream request before train-mode additions. */
  upstreamBody: Record<string, any>;
  /** Whether upstreamBody is the harness body itself (then it is not stored twice). */
  passthrough: boolean;
  /** Fields of the upstream answer the harness asked for (kept in what it receives). */
  wants: HarnessWants;
  /** Translates a (stripped) JSON answer to the harness protocol; absent = sent as is. */
  translateJson?(json: any): unknown;
  /** A translator of the (stripped) upstream Chat chunks to the harness protocol's SSE; absent = as is. */
  translateStream?(): StreamTranslator;
  /** Headers added to the upstream request (passthrough to a vendor API: its auth and version headers). */
  upstreamHeaders?: Record<string, string>;
  /** The protocol's error body, for an answer the proxy gives in the upstream's place (this call's: a translator shapes its own). */
  errorBody(status: number, message: string, type: string, code: string | null): unknown;
}

/**
 * Chat Completions chunks in, the harness protocol's SSE text out. The pipeline decides how the
 * answer ends: `finish()` for a complete one (its events are held back until the call is
 * recorded), `fail()` for one that broke off, `withdraw()` in place of `finish()`'s events when
 * the call could not be recorded.
 */
export interface StreamTranslator {
  push(chunk: ChatChunk): string;
  finish(): string;
  fail(message: string): string;
  withdraw(message: string): string;
}

export interface FrontDoor {
  /** Metrics label and docs name: chat | completions | responses | anthropic_messages. */
  name: string;
  protocol: Protocol;
  /** Path under `/r/:rollout` and at the root, e.g. "/v1/chat/completions". */
  path: string;
  /** Validates the harness body (throws ProxyHttpError 400 naming the field) and prepares the call. */
  prepare(body: Record<string, any>, request?: Request): PreparedCall;
  /**
   * Parses the harness's bytes into what `prepare` gets (default `parseJsonObject`). The Chat
   * door leaves its messages' long strings unparsed (`hidden-strings.ts`): it passes the bytes on.
   */
  parse?(bytes: Uint8Array): Record<string, any>;
  /**
   * The engine's own error answer (`error`, read from its body `text`) as this door's error body,
   * for a door that speaks the engine's protocol (Chat, Completions). Absent: the harness gets
   * the call's `errorBody` naming the engine's message.
   */
  engineErrorBody?(error: EngineError, text: string): string;
  /** The protocol's routes that are not model calls (Anthropic count_tokens, say). */
  routes?: readonly DoorRoute[];
}

/** What a door's own route may use. */
export interface DoorRouteEnv {
  ctx: PipelineContext;
  maxBodyBytes: number;
  /** The rollout of the request (from `/r/:rollout` or its key); throws 401 / 404. */
  resolveRollout(c: Context): RolloutState;
}

/** A route of a protocol that is not a model call, mounted at `/r/:rollout<path>` and `<path>`. */
export interface DoorRoute {
  method: "GET" | "POST";
  path: string;
  handle(c: Context, env: DoorRouteEnv): Response | Promise<Response>;
}

/** How a translating door reaches its upstream: translated to Chat (default), or passed through to a vendor API. */
export type UpstreamProtocol = "chat" | "anthropic" | "responses";

export interface VendorOptions {
  /** The vendor API key (Anthropic wants it as x-api-key). */
  apiKey?: string;
}

/** What every model call of the proxy shares: mode, upstream client, recorder, state, limits. */
export interface PipelineContext {
  mode: "train" | "eval";
  /** The engine behind the upstreams: how train mode asks for ids, what calls record (docs/engines.md). */
  engine: EngineState;
  client: UpstreamClient;
  recorder: CallRecorder;
  registry: RolloutRegistry;
  gate: PauseGate;
  metrics: ProxyMetrics;
  /** Between two upstream stream chunks. */
  idleTimeoutMs: number;
  /** Largest upstream error / JSON body read. */
  maxResponseBytes: number;
  /** Calls admitted at once (waiting on a pause included); past it, 429. */
  maxConcurrentCalls: number;
  /** Largest upstream stream one call may read; past it the call ends with an error. */
  maxStreamBytes: number;
  /** Calls admitted and not yet finished. */
  admitted: { count: number };
  /** Lifts a harness connection's idle timeout while its call runs (and puts it back). */
  connections: Pick<ConnectionGuard, "hold" | "release">;
  /** Token-in mode (docs/token-in.md): set when the proxy renders prompts and sends the engine token ids. */
  tokenIn?: TokenIn;
}
