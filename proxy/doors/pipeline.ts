/**
 * The model-call pipeline every front door shares, over one CallInFlight: admission (the
 * proxy's limit, the pause gate, the rollout still open) → the upstream request (engine
 * adapter or token-in) → sticky upstream → the answer: an error, a JSON body, or a stream
 * (stream-answer.ts), with token capture and stripping and optional translation → recording.
 * Non-stream calls are recorded before the answer is sent; streams when they end, abort or
 * fail.
 */
import { CallStatus } from "../../schemas/index.ts";
import { captureAndStrip, evalRequest } from "../capture/tokens.ts";
import { parseAnswer } from "../capture/answer-json.ts";
import { restoreHidden } from "./hidden-strings.ts";
import { engineError } from "../engines/errors.ts";
import { samplingOf } from "../engines/sampling.ts";
import { appendFieldsBody } from "../capture/append-fields.ts";
import { takesChunkObjects } from "../capture/chunk-source.ts";
import { ProxyHttpError } from "../errors.ts";
import { decodeUtf8Chunks } from "../body.ts";
import type { RolloutState } from "../state/rollouts.ts";
import { withSampling } from "../state/serving.ts";
import { enterCall } from "../state/cancel.ts";
import { refuseFinished } from "../routes/auth.ts";
import type { UpstreamAnswer, UpstreamRequest } from "../upstream/client.ts";
import type { PipelineContext, PreparedCall } from "./types.ts";
import type { CallInFlight } from "./call-in-flight.ts";
import { jsonAsStream, SSE_HEADERS, streamAnswer } from "./stream-answer.ts";

const encoder = new TextEncoder();
const CHAT_PATH = "/v1/chat/completions";

/**
 * Runs `call` (created where it entered, routes/model.ts) and returns the harness's Response.
 *
 * @example
 * return runModelCall(new CallInFlight(ctx, state, chatFrontDoor, c.req.raw, bodyBytes, prepared));
 */
export async function runModelCall(call: CallInFlight): Promise<Response> {
  await admit(call);
  try {
    return await callUpstream(call);
  } catch (error) {
    call.leave();
    throw error;
  }
}

/**
 * Counts the call in (or refuses it: the recorder is broken, the proxy is at its limit, the
 * rollout is finished or being cancelled), after any pause.
 */
async function admit(call: CallInFlight): Promise<void> {
  const { ctx, rollout: state, request } = call;
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
    if (state.serving?.upstreams.length) policyVersion = state.rollout.policyVersion;
  } catch (error) {
    ctx.admitted.count--;
    throw error;
  }
  // A rollout cancelled meanwhile (it may have waited at the pause gate) takes no more calls;
  // one cancelled during the call aborts it (state/cancel.ts).
  const entered = state.result ? undefined : enterCall(state, request.signal);
  if (!entered) {
    ctx.admitted.count--;
    ctx.gate.leave();
    refuseFinished(state);
    throw new ProxyHttpError(409, `rollout "${call.rolloutId}" finished: it takes no more model calls`, "invalid_request_error", "rollout_finished");
  }
  call.enter(policyVersion, entered);
}

/** Sends the call upstream and answers the harness with what came back. */
async function callUpstream(call: CallInFlight): Promise<Response> {
  const { ctx, request } = call;
  const upstreamRequest = await prepareUpstream(call);
  // The harness is gone before anything went upstream (Bun 1.4.5 closes a connection that
  // sends its next request before this one is answered, and aborts this one: docs/proxy.md,
  // Pipelining): nothing is served, so nothing is recorded. One turn of the event loop first
  // (microseconds), so Bun has read the rest of the packet this request came in.
  await new Promise((resolve) => setImmediate(resolve));
  if (request.signal.aborted) throw new ProxyHttpError(499, "the harness disconnected before the call was sent upstream", "invalid_request_error", "client_aborted");
  call.start(ctx.registry.nextSeq(call.rollout));
  const sent = await ctx.client.send(upstreamRequest);
  call.record.upstreamAttempts = sent.attempts;
  call.record.upstream = sent.upstream?.url ?? "";
  if ("error" in sent) {
    const status = sent.kind === "timeout" ? CallStatus.TIMEOUT : sent.kind === "aborted" ? CallStatus.CLIENT_ABORTED : CallStatus.UPSTREAM_UNREACHABLE;
    return call.fail(sent.error, status);
  }
  // Token-in: the engine's completion, as the Chat answer the engine's chat route would give.
  const response = call.tokenIn ? call.tokenIn.chatResponse(sent.response, { objects: takesChunkObjects(call.prepared.wants) }) : sent.response;
  call.firstByte(sent.headersAt);
  if (!response.ok) return answerUpstreamError(call, response);
  const isStream = (response.headers.get("content-type") ?? "").includes("text/event-stream");
  if (!isStream) return answerJson(call, response, sent);
  return streamAnswer(call, response, sent.abort);
}

/**
 * The request the upstream gets, and what the record keeps of it: the engine adapter's train
 * fields (or eval's), the rollout's sampling, or token-in's rendered prompt (docs/token-in.md).
 */
async function prepareUpstream(call: CallInFlight): Promise<UpstreamRequest> {
  const { ctx, prepared, rollout: state, train } = call;
  const engine = ctx.engine;
  if (train) checkTrainable(ctx, prepared);
  // Token-in mode (docs/token-in.md): the proxy renders the prompt ids and the engine gets them.
  const tokenIn = ctx.tokenIn && train && prepared.upstreamPath === CHAT_PATH && !prepared.upstreamHeaders
    ? await ctx.tokenIn.prepare({ rollout: state, chat: prepared.upstreamBody, callId: call.callId, engine, client: ctx.client, signal: call.signal! })
    : undefined;
  const upstreamBody = tokenIn ? tokenIn.chatBody : withServedVersion(withSampling(train ? engine.adapter.trainRequest(prepared.capture, prepared.upstreamBody) : evalRequest(prepared.upstreamPath, prepared.upstreamBody), state.serving?.sampling), state, engine.adapter.kind);
  const unchanged = prepared.passthrough && upstreamBody === prepared.upstreamBody;
  // An untranslated train-mode call differs from what the harness sent only by the fields
  // the engine adapter set: record those, not the whole (possibly 200 KB) body a second time, and
  // send the harness's bytes with them appended when they are new keys (no re-serialisation).
  const patch = prepared.passthrough && !unchanged ? addedFields(prepared.upstreamBody, upstreamBody) : undefined;
  call.echo = prepared.capture === "completions" && prepared.upstreamBody.echo === true;
  if (train && call.echo && engine.adapter.blanksEchoedPrompt) call.wants = { ...prepared.wants, echoPrompt: echoedText(prepared.upstreamBody.prompt) };
  const upstreamBytes = unchanged
    ? call.requestBody
    : ((patch && appendFieldsBody(call.requestBody, prepared.upstreamBody, patch)) ?? encoder.encode(JSON.stringify(restoreHidden(upstreamBody))));
  // A body sent as parts is always a patched one (appendFieldsBody): only bytes are recorded.
  call.upstreamRequestBody = unchanged || patch || !(upstreamBytes instanceof Uint8Array) ? undefined : upstreamBytes;
  if (patch) call.record.upstreamRequestPatch = encoder.encode(JSON.stringify(patch));
  call.noteEngine(engine.info);
  call.record.sampling = tokenIn ? tokenIn.sampling : samplingOf(prepared.capture, upstreamBody, engine.adapter);
  call.tokenIn = tokenIn;
  const own = state.serving?.upstreams;
  if (tokenIn) return { rolloutId: call.rolloutId, path: tokenIn.path, method: "POST", body: tokenIn.bytes, signal: call.signal, own };
  return { rolloutId: call.rolloutId, path: prepared.upstreamPath, method: "POST", body: upstreamBytes, signal: call.signal, headers: prepared.upstreamHeaders, own };
}

/** The upstream answered with an HTTP error: the harness gets the engine's error in its door's shape. */
async function answerUpstreamError(call: CallInFlight, response: Response): Promise<Response> {
  const ctx = call.ctx;
  const text = await readLimited(response, ctx.maxResponseBytes, ctx.idleTimeoutMs).catch((error) => `(body unreadable: ${(error as Error).message})`);
  const status = response.status;
  let message = `upstream ${call.record.upstream} answered HTTP ${status}`;
  // A rate limit's Retry-After is the harness's to honour (it decides when to call again).
  const retryAfter = response.headers.get("retry-after");
  const upstreamHeaders: Record<string, string> = retryAfter ? { "retry-after": retryAfter } : {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const e = engineError(parsed);
  if (e) {
    message += `: ${e.message}`;
    // The engine's own error reaches a harness of the engine's protocol as it came (FrontDoor.engineErrorBody).
    const body = call.door.engineErrorBody?.(e, text);
    if (body !== undefined) return call.answer(status, CallStatus.UPSTREAM_ERROR, message, encoder.encode(body), upstreamHeaders);
  } else if (text !== "") {
    message += `: ${text.slice(0, 500)}`;
  }
  const type = status >= 500 ? "upstream_error" : "invalid_request_error";
  return call.fail({ status, message, type, code: "upstream_error" }, CallStatus.UPSTREAM_ERROR, upstreamHeaders);
}

/** A whole JSON answer: captured, stripped, translated, recorded, then sent. */
async function answerJson(call: CallInFlight, response: Response, sent: UpstreamAnswer): Promise<Response> {
  const { ctx, prepared, capture, request } = call;
  const upstream = call.record.upstream;
  let text: string;
  try {
    text = await readLimited(response, ctx.maxResponseBytes, ctx.idleTimeoutMs);
  } catch (error) {
    sent.abort(error);
    const e = error instanceof ProxyHttpError ? error : new ProxyHttpError(502, `upstream ${upstream} body failed: ${(error as Error).message}`, "upstream_error", "upstream_stream_error");
    return call.fail(e, e.status === 504 ? CallStatus.TIMEOUT : CallStatus.UPSTREAM_ERROR);
  }
  let json: any;
  try {
    json = parseAnswer(text, call.wants, call.rollout.idsMemo);
  } catch {
    return call.fail({ status: 502, message: `upstream ${upstream} sent a body that is not JSON: ${text.slice(0, 200)}`, type: "upstream_error", code: "upstream_bad_body" }, CallStatus.UPSTREAM_ERROR);
  }
  const changed = captureAndStrip(prepared.capture, json, capture, call.wants);
  if (prepared.stream) {
    // The harness asked for a stream and would read this JSON as an empty one: it gets the
    // answer as a stream of one chunk and its end.
    const bytes = encoder.encode(jsonAsStream(json, prepared));
    call.end(200, CallStatus.OK, "", bytes);
    call.commit();
    call.leave();
    ctx.connections.release(request);
    return new Response(bytes, { status: 200, headers: { ...SSE_HEADERS, ...call.headers } });
  }
  const out = prepared.translateJson ? JSON.stringify(prepared.translateJson(json)) : changed ? JSON.stringify(json) : text;
  const bytes = encoder.encode(out);
  // Recorded before the harness sees it: an unrecorded answer is never served. One whose
  // harness is already gone is not recorded as answered.
  if (request.signal.aborted) return call.fail({ status: 499, message: "the harness disconnected before the answer was delivered", type: "invalid_request_error", code: "client_aborted" }, CallStatus.CLIENT_ABORTED);
  if (capture.upstreamError !== undefined) return call.answer(200, CallStatus.UPSTREAM_ERROR, `upstream ${upstream} answered with an error: ${capture.upstreamError}`, bytes);
  return call.answer(200, CallStatus.OK, "", bytes);
}

/**
 * A call served by the rollout's own servers asks vLLM (0.33.0) for the weight version of its
 * tokens (`return_weight_versions`): the call is recorded with what served it
 * (capture/served-version.ts). SGLang reports it unasked.
 */
function withServedVersion(body: Record<string, any>, state: RolloutState, kind: string): Record<string, any> {
  if (!state.serving?.upstreams.length || kind === "sglang" || body.return_weight_versions === true) return body;
  return { ...body, return_weight_versions: true };
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
