/**
 * The model-call pipeline every front door shares: pause gate → sticky upstream → token
 * capture and stripping (JSON or SSE, chunk by chunk) → optional translation → recording.
 * Non-stream calls are recorded before the answer is sent; streams when they end, abort or
 * fail.
 */
import { CallStatus, type ModelCall } from "../../schemas/index.ts";
import { sessionHeaders } from "../capture/session-headers.ts";
import { captureAndStrip, evalRequest, newCapture, type HarnessWants } from "../capture/tokens.ts";
import { parseAnswer } from "../capture/answer-json.ts";
import { restoreHidden } from "./hidden-strings.ts";
import { engineError, openAiShape } from "../engines/errors.ts";
import { samplingOf } from "../engines/sampling.ts";
import { appendFieldsBody } from "../capture/append-fields.ts";
import type { FinishedCall } from "../capture/call-recorder.ts";
import { redactedHeaders } from "../capture/headers.ts";
import { ProxyHttpError } from "../errors.ts";
import { decodeUtf8Chunks } from "../body.ts";
import type { RolloutState } from "../state/rollouts.ts";
import { withSampling } from "../state/serving.ts";
import { enterCall, leaveCall } from "../state/cancel.ts";
import { refuseFinished } from "../routes/auth.ts";
import type { FrontDoor, PipelineContext, PreparedCall } from "./types.ts";
import { jsonAsStream, SSE_HEADERS, streamAnswer } from "./stream-answer.ts";


const encoder = new TextEncoder();
const CHAT_PATH = "/v1/chat/completions";

/**
 * Runs one model call of `rollout` through `door` and returns the harness's Response.
 *
 * @example
 * return runModelCall(ctx, rollout, chatFrontDoor, prepared, bodyBytes, c.req.raw);
 */
export async function runModelCall(
  ctx: PipelineContext,
  rollout: RolloutState,
  door: FrontDoor,
  prepared: PreparedCall,
  requestBody: Uint8Array,
  request: Request,
): Promise<Response> {
  if (ctx.recorder.health.failure !== "") {
    throw new ProxyHttpError(503, `the proxy refuses model calls because it cannot record them: ${ctx.recorder.health.failure}`, "service_unavailable", "recorder_unavailable");
  }
  if (ctx.admitted.count >= ctx.maxConcurrentCalls) {
    // A bounded proxy: past the limit a harness is told to come back rather than queued
    // without end (each held call keeps its body and a socket).
    ctx.metrics.overloaded();
    throw new ProxyHttpError(429, `the proxy has ${ctx.admitted.count} model calls in flight, its limit (--max-concurrent-calls ${ctx.maxConcurrentCalls}); retry shortly`, "rate_limit_error", "too_many_concurrent_calls", null, { "retry-after": "1" });
  }
  ctx.admitted.count++;
  let policyVersion: number;
  try {
    policyVersion = await ctx.gate.enter(request.signal);
    // Served by its own upstreams: the version they were registered with (the call records
    // the one the server reports, capture/served-version.ts).
    if (rollout.serving?.upstreams.length) policyVersion = rollout.rollout.policyVersion;
  } catch (error) {
    ctx.admitted.count--;
    throw error;
  }
  // A rollout cancelled meanwhile (it may have waited at the pause gate) takes no more calls;
  // one cancelled during the call aborts it (state/cancel.ts).
  const signal = rollout.result ? undefined : enterCall(rollout, request.signal);
  if (!signal) {
    ctx.admitted.count--;
    ctx.gate.leave();
    refuseFinished(rollout);
    throw new ProxyHttpError(409, `rollout "${rollout.rollout.rolloutId}" finished: it takes no more model calls`, "invalid_request_error", "rollout_finished");
  }
  ctx.metrics.inFlight(1);
  let left = false;
  const leave = () => {
    if (left) return;
    left = true;
    ctx.admitted.count--;
    ctx.gate.leave();
    ctx.metrics.inFlight(-1);
    leaveCall(rollout);
  };
  try {
    const response = await callUpstream(ctx, rollout, door, prepared, requestBody, request, policyVersion, leave, signal);
    return response;
  } catch (error) {
    leave();
    throw error;
  }
}

async function callUpstream(
  ctx: PipelineContext,
  rollout: RolloutState,
  door: FrontDoor,
  prepared: PreparedCall,
  requestBody: Uint8Array,
  request: Request,
  policyVersion: number,
  leave: () => void,
  signal: AbortSignal,
): Promise<Response> {
  const train = ctx.mode === "train";
  const engine = ctx.engine;
  if (train) checkTrainable(ctx, prepared);
  const callId = `call-${crypto.randomUUID()}`;
  // Token-in mode (docs/token-in.md): the proxy renders the prompt ids and the engine gets them.
  const tokenIn = ctx.tokenIn && train && prepared.upstreamPath === CHAT_PATH && !prepared.upstreamHeaders
    ? await ctx.tokenIn.prepare({ rollout, chat: prepared.upstreamBody, callId, engine, client: ctx.client, signal })
    : undefined;
  const upstreamBody = tokenIn ? tokenIn.chatBody : withServedVersion(withSampling(train ? engine.adapter.trainRequest(prepared.capture, prepared.upstreamBody) : evalRequest(prepared.upstreamPath, prepared.upstreamBody), rollout.serving?.sampling), rollout, engine.adapter.kind);
  const unchanged = prepared.passthrough && upstreamBody === prepared.upstreamBody;
  // An untranslated train-mode call differs from what the harness sent only by the fields
  // the engine adapter set: record those, not the whole (possibly 200 KB) body a second time, and
  // send the harness's bytes with them appended when they are new keys (no re-serialisation).
  const patch = prepared.passthrough && !unchanged ? addedFields(prepared.upstreamBody, upstreamBody) : undefined;
  const echo = prepared.capture === "completions" && prepared.upstreamBody.echo === true;
  const wants: HarnessWants = train && echo && engine.adapter.blanksEchoedPrompt ? { ...prepared.wants, echoPrompt: echoedText(prepared.upstreamBody.prompt) } : prepared.wants;
  const upstreamBytes = unchanged
    ? requestBody
    : ((patch && appendFieldsBody(requestBody, prepared.upstreamBody, patch)) ?? encoder.encode(JSON.stringify(restoreHidden(upstreamBody))));
  // The harness is gone before anything went upstream (Bun 1.4.5 closes a connection that
  // sends its next request before this one is answered, and aborts this one: docs/proxy.md,
  // Pipelining): nothing is served, so nothing is recorded. One turn of the event loop first
  // (microseconds), so Bun has read the rest of the packet this request came in.
  await new Promise((resolve) => setImmediate(resolve));
  if (request.signal.aborted) throw new ProxyHttpError(499, "the harness disconnected before the call was sent upstream", "invalid_request_error", "client_aborted");
  const seq = ctx.registry.nextSeq(rollout);
  const capture = newCapture();
  const base: FinishedCall = {
    rollout,
    seq,
    callId,
    protocol: door.protocol,
    protocolName: door.name,
    startUnixMs: Date.now(),
    startPerf: performance.now(),
    ttftMs: undefined,
    requestBody,
    responseBody: new Uint8Array(0),
    // A body sent as a Blob is always a patched one (appendFieldsBody): only bytes are recorded.
    upstreamRequestBody: unchanged || patch || upstreamBytes instanceof Blob ? undefined : upstreamBytes,
    upstreamRequestPatch: patch ? encoder.encode(JSON.stringify(patch)) : undefined,
    model: prepared.model,
    upstream: "",
    policyVersion,
    stream: prepared.stream,
    httpStatus: 0,
    status: CallStatus.OK,
    error: "",
    capture,
    train,
    requestHeaders: redactedHeaders(request.headers),
    session: sessionHeaders(request.headers),
    upstreamAttempts: 0,
    engine: engine.info,
    sampling: tokenIn ? tokenIn.sampling : samplingOf(prepared.capture, upstreamBody, engine.adapter),
    echo,
    tokenIn,
  };
  const callHeaders = { "x-forge-call-id": callId, "x-forge-seq": String(seq) };

  const errorAnswer = (status: number, message: string, type: string, code: string | null, callStatus: CallStatus, extraHeaders: Record<string, string> = {}): Response => {
    const bytes = encoder.encode(JSON.stringify(door.name === "chat" || door.name === "completions" ? { error: { message, type, param: null, code } } : prepared.errorBody(status, message, type, code)));
    recordOrThrow(ctx, { ...base, responseBody: bytes, httpStatus: status, status: callStatus, error: message });
    leave();
    return new Response(bytes, { status, headers: { "content-type": "application/json", ...callHeaders, ...extraHeaders } });
  };

  const sent = tokenIn
    ? await ctx.client.send(rollout.rollout.rolloutId, tokenIn.path, tokenIn.bytes, "POST", signal, undefined, rollout.serving?.upstreams)
    : await ctx.client.send(rollout.rollout.rolloutId, prepared.upstreamPath, upstreamBytes, "POST", signal, prepared.upstreamHeaders, rollout.serving?.upstreams);
  base.upstreamAttempts = sent.attempts;
  base.upstream = sent.upstream?.url ?? "";
  if ("error" in sent) {
    const e = sent.error;
    const status = sent.kind === "timeout" ? CallStatus.TIMEOUT : sent.kind === "aborted" ? CallStatus.CLIENT_ABORTED : CallStatus.UPSTREAM_UNREACHABLE;
    return errorAnswer(e.status, e.message, e.type, e.code, status);
  }
  // Token-in: the engine's completion, as the Chat answer the engine's chat route would give.
  const response = tokenIn ? tokenIn.chatResponse(sent.response) : sent.response;
  base.ttftMs = sent.headersAt - base.startPerf;

  if (!response.ok) {
    const text = await readLimited(response, ctx.maxResponseBytes, ctx.idleTimeoutMs).catch((error) => `(body unreadable: ${(error as Error).message})`);
    let message = `upstream ${base.upstream} answered HTTP ${response.status}`;
    let passthroughBody: string | undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const e = engineError(parsed);
    if (e) {
      message += `: ${e.message}`;
      // The engine's own error reaches an OpenAI-style harness as the door's error: vLLM's
      // (OpenAI's shape) as sent, SGLang's flat `{"object": "error", ...}` nested as OpenAI's.
      if (door.name === "chat" || door.name === "completions") passthroughBody = e.nested ? text : JSON.stringify(openAiShape(e));
    } else if (text !== "") {
      message += `: ${text.slice(0, 500)}`;
    }
    const status = response.status;
    // A rate limit's Retry-After is the harness's to honour (it decides when to call again).
    const retryAfter = response.headers.get("retry-after");
    const upstreamHeaders: Record<string, string> = retryAfter ? { "retry-after": retryAfter } : {};
    if (passthroughBody !== undefined) {
      const bytes = encoder.encode(passthroughBody);
      recordOrThrow(ctx, { ...base, responseBody: bytes, httpStatus: status, status: CallStatus.UPSTREAM_ERROR, error: message });
      leave();
      return new Response(bytes, { status, headers: { "content-type": "application/json", ...callHeaders, ...upstreamHeaders } });
    }
    return errorAnswer(status, message, status >= 500 ? "upstream_error" : "invalid_request_error", "upstream_error", CallStatus.UPSTREAM_ERROR, upstreamHeaders);
  }

  const isStream = (response.headers.get("content-type") ?? "").includes("text/event-stream");
  if (!isStream) {
    let text: string;
    try {
      text = await readLimited(response, ctx.maxResponseBytes, ctx.idleTimeoutMs);
    } catch (error) {
      sent.abort(error);
      const e = error instanceof ProxyHttpError ? error : new ProxyHttpError(502, `upstream ${base.upstream} body failed: ${(error as Error).message}`, "upstream_error", "upstream_stream_error");
      return errorAnswer(e.status, e.message, e.type, e.code, e.status === 504 ? CallStatus.TIMEOUT : CallStatus.UPSTREAM_ERROR);
    }
    let json: any;
    try {
      json = parseAnswer(text, wants, rollout.idsMemo);
    } catch {
      return errorAnswer(502, `upstream ${base.upstream} sent a body that is not JSON: ${text.slice(0, 200)}`, "upstream_error", "upstream_bad_body", CallStatus.UPSTREAM_ERROR);
    }
    const changed = captureAndStrip(prepared.capture, json, capture, wants);
    if (prepared.stream) {
      // The harness asked for a stream and would read this JSON as an empty one: it gets the
      // answer as a stream of one chunk and its end.
      const bytes = encoder.encode(jsonAsStream(json, prepared));
      recordOrThrow(ctx, { ...base, responseBody: bytes, httpStatus: 200, status: CallStatus.OK });
      leave();
      ctx.connections.release(request);
      return new Response(bytes, { status: 200, headers: { ...SSE_HEADERS, ...callHeaders } });
    }
    const out = prepared.translateJson ? JSON.stringify(prepared.translateJson(json)) : changed ? JSON.stringify(json) : text;
    const bytes = encoder.encode(out);
    const failed = capture.upstreamError !== undefined;
    // Recorded before the harness sees it: an unrecorded answer is never served. One whose
    // harness is already gone is not recorded as answered.
    if (request.signal.aborted) return errorAnswer(499, "the harness disconnected before the answer was delivered", "invalid_request_error", "client_aborted", CallStatus.CLIENT_ABORTED);
    recordOrThrow(ctx, { ...base, responseBody: bytes, httpStatus: 200, status: failed ? CallStatus.UPSTREAM_ERROR : CallStatus.OK, error: failed ? `upstream ${base.upstream} answered with an error: ${capture.upstreamError}` : "" });
    leave();
    return new Response(bytes, { status: 200, headers: { "content-type": "application/json", ...callHeaders } });
  }
  return streamAnswer(ctx, base, wants === prepared.wants ? prepared : { ...prepared, wants }, response, sent.abort, request, leave, callHeaders);
}

/**
 * A call served by the rollout's own servers asks vLLM (0.33.0) for the weight version of its
 * tokens (`return_weight_versions`): the call is recorded with what served it
 * (capture/served-version.ts). SGLang reports it unasked.
 */
function withServedVersion(body: Record<string, any>, rollout: RolloutState, kind: string): Record<string, any> {
  if (!rollout.serving?.upstreams.length || kind === "sglang" || body.return_weight_versions === true) return body;
  return { ...body, return_weight_versions: true };
}

function recordOrThrow(ctx: PipelineContext, call: FinishedCall): ModelCall {
  try {
    return ctx.recorder.record(call);
  } catch (error) {
    throw new ProxyHttpError(503, `the call could not be recorded, so it is not served: ${(error as Error).message}`, "service_unavailable", "recorder_unavailable");
  }
}

async function readLimited(response: Response, maxBytes: number, idleMs: number): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const idle = new Promise<"idle">((resolve) => (timer = setTimeout(() => resolve("idle"), idleMs)));
    const result = await Promise.race([reader.read(), idle]).finally(() => clearTimeout(timer));
    if (result === "idle") {
      await reader.cancel().catch(() => {});
      throw new ProxyHttpError(504, `upstream sent its headers but then nothing for ${idleMs} ms`, "timeout_error", "upstream_timeout");
    }
    const { done, value } = result;
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new ProxyHttpError(502, `upstream answer is over ${maxBytes} bytes`, "upstream_error", "upstream_too_large");
    }
    chunks.push(value);
  }
  return decodeUtf8Chunks(chunks);
}

/**
 * The top-level fields of `sent` that are not the same value in `received` (set or replaced),
 * or undefined when `sent` lacks a field of `received` (a patch cannot say so: the whole
 * upstream body is recorded then).
 */
function addedFields(received: Record<string, unknown>, sent: Record<string, unknown>): Record<string, unknown> | undefined {
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(sent)) if (sent[key] !== received[key]) patch[key] = sent[key];
  for (const key of Object.keys(received)) if (!Object.hasOwn(sent, key)) return undefined;
  return patch;
}

/**
 * Refuses what train mode cannot record: an engine found unable to return ids, several choices
 * (a ModelCall holds one sampled answer), and an echoed token-id prompt on vLLM (whose echo
 * then has no prompt text to give back).
 */
function checkTrainable(ctx: PipelineContext, prepared: PreparedCall): void {
  if (ctx.engine.refusal !== "") throw new ProxyHttpError(503, `the proxy refuses train-mode calls: ${ctx.engine.refusal}`, "service_unavailable", "engine_without_ids");
  const body = prepared.upstreamBody;
  const n = body.n ?? 1;
  if (n !== 1) {
    throw new ProxyHttpError(
      400,
      `n: the proxy records one sampled answer per call in train mode, got n=${JSON.stringify(n)}; send ${typeof n === "number" && n > 1 ? n : "several"} calls (each is recorded, and GRPO groups come from rollouts.k), or use --mode eval`,
      "invalid_request_error",
      "n_unsupported_in_train_mode",
      "n",
    );
  }
  if (prepared.capture === "completions" && body.echo === true && ctx.engine.adapter.blanksEchoedPrompt && echoedText(body.prompt) === undefined) {
    throw new ProxyHttpError(
      400,
      "echo: with a token-id prompt in train mode the engine returns no prompt text to echo (vLLM blanks it when asked for ids); send the prompt as text, or drop echo and read the prompt ids from return_token_ids",
      "invalid_request_error",
      "echo_unsupported_in_train_mode",
      "echo",
    );
  }
}

/** The text an echo repeats: a string prompt (or a list of one string), else undefined. */
function echoedText(prompt: unknown): string | undefined {
  if (typeof prompt === "string") return prompt;
  if (Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === "string") return prompt[0];
  return undefined;
}
