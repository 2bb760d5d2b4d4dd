/**
 * The streamed half of the model-call pipeline: reads the upstream SSE, captures token ids and
 * strips the train-mode fields chunk by chunk, sends the harness each event as soon as it is
 * complete (translated to its protocol where the door translates), and records the call when
 * the stream ends, aborts or fails.
 *
 * How a stream ends is the proxy's to say, in every door:
 * - the terminal event (`[DONE]`, `message_stop`, `response.completed`) is sent only once the
 *   call is in the log; a call that could not be recorded ends with an error event instead;
 * - a stream that ends before it is complete (no `[DONE]` and no finish reason), fails, stalls,
 *   or grows past `--max-stream-bytes` ends with the protocol's error event, never a clean end;
 * - whatever the upstream sends after `[DONE]` is dropped: it reaches neither the harness nor
 *   the record.
 *
 * The harness's stream is a Bun `type: "direct"` stream: one pull runs the whole stream and
 * writes each event straight to the socket (no per-chunk queue and pull round trip). A
 * translated stream is driven the same way, its translator fed the parsed Chat chunks.
 */
import { CallStatus } from "../../schemas/index.ts";
import { captureAndStrip, emptyAfterStrip, type TokenCapture } from "../capture/tokens.ts";
import { parseAnswer } from "../capture/answer-json.ts";
import { createSseRewriter } from "../capture/sse-rewriter.ts";
import { chunkSourceOf, type ChunkBatch, type ChunkItem } from "../capture/chunk-source.ts";
import type { FinishedCall } from "../capture/call-recorder.ts";
import type { PipelineContext, PreparedCall } from "./types.ts";
import { concatBytes } from "../../lib/index.ts";

const encoder = new TextEncoder();
const DONE = "data: [DONE]\n\n";
const NOTHING = new Uint8Array(0);
export const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" };
const WITHDRAWN = "the call could not be recorded, so its answer is withdrawn";

/**
 * The harness's Response for a streamed upstream answer.
 *
 * @example
 * return streamAnswer(ctx, base, prepared, sent.response, sent.abort, request, leave, callHeaders);
 */
export function streamAnswer(
  ctx: PipelineContext,
  base: FinishedCall,
  prepared: PreparedCall,
  upstream: Response,
  abortUpstream: (reason?: unknown) => void,
  request: Request,
  leave: () => void,
  callHeaders: Record<string, string>,
): Response {
  const capture: TokenCapture = base.capture;
  const translator = prepared.translateStream?.();
  // An answer the proxy made itself (token-in) comes as chunk objects, unless the harness asked
  // for ids (then its prompt ids are written as the text made for them: the bytes).
  const chunks = prepared.wants.tokenIds || prepared.wants.sglext ? undefined : chunkSourceOf(upstream);
  const reader = chunks ?? upstream.body!.getReader();
  const sent: Uint8Array[] = []; // what the harness was sent, for the record
  let sawDone = false;
  // The first data line that is not JSON; an `error` object the upstream sent mid-stream.
  let malformed: string | undefined;
  let upstreamError: string | undefined;
  let finished = false;
  let over = false; // nothing more to send
  let firstChunk = true;
  let upstreamBytes = 0;

  let stopped = false;
  const stop = () => {
    stopped = true;
    rewriter.stop();
  };
  /** One event's data as text: what to send the harness ("" nothing, undefined the event as it came). */
  const onData = (data: string): string | undefined => {
    if (data === "[DONE]") {
      sawDone = true;
      // The end is sent once the call is in the log (terminate()); anything after it is dropped.
      stop();
      return "";
    }
    let chunk: any;
    try {
      chunk = parseAnswer(data, prepared.wants, base.rollout.idsMemo);
    } catch {
      malformed ??= data.slice(0, 200);
      if (!translator) return undefined; // the harness gets it as sent; the record says the call failed
      stop();
      return "";
    }
    return onChunk(chunk);
  };
  /** One parsed event: what to send the harness ("" nothing, undefined the event unchanged). */
  const onChunk = (chunk: any): string | undefined => {
    if (chunk === null || typeof chunk !== "object") return translator ? "" : undefined;
    if (chunk.error !== undefined && chunk.error !== null) {
      // vLLM reports a failure mid-stream as a data event with an `error` object (SGLang too:
      // `{"error": {"object": "error", "message", ...}}`).
      upstreamError ??= typeof chunk.error === "string" ? chunk.error : String(chunk.error.message ?? JSON.stringify(chunk.error));
      if (!translator) return undefined; // the SDKs raise it as an error
      stop();
      return "";
    }
    const changed = captureAndStrip(prepared.capture, chunk, capture, prepared.wants);
    if (translator) return translator.push(chunk);
    if (!changed) return undefined;
    // The usage or sglext chunk the proxy asked for in train mode is dropped when the harness did not ask.
    if (emptyAfterStrip(chunk)) return "";
    return `data: ${JSON.stringify(chunk)}\n\n`;
  };
  const rewriter = createSseRewriter(onData);
  /** A read of chunk objects: each handled as a parsed event, serialised once. */
  const onItems = (items: ChunkItem[]): string => {
    let text = "";
    for (const item of items) {
      if (stopped) break;
      const handled = typeof item === "string" ? onData(item) : onChunk(item);
      text += handled ?? `data: ${typeof item === "string" ? item : JSON.stringify(item)}\n\n`;
    }
    return text;
  };

  /** Records the call once; false when the record could not be written. */
  const finish = (status: CallStatus, error: string): boolean => {
    if (finished) return true;
    finished = true;
    clearInterval(watchdog);
    request.signal.removeEventListener("abort", onClientAbort);
    let recorded = true;
    try {
      ctx.recorder.record({ ...base, responseBody: concatBytes(sent), httpStatus: 200, status, error });
    } catch {
      // The log refused it (a full disk, ids that do not encode): the stream's end is withheld.
      recorded = false;
    }
    leave();
    return recorded;
  };
  const onClientAbort = () => {
    abortUpstream(new Error("client disconnected"));
    finish(CallStatus.CLIENT_ABORTED, "the harness disconnected before the stream ended");
  };
  request.signal.addEventListener("abort", onClientAbort, { once: true });

  // One watchdog per stream instead of a timer per read: a read only bumps a timestamp, and an
  // idle upstream is aborted, which ends the pending read.
  let lastByteAt = performance.now();
  let idle = false;
  const watchdog = setInterval(() => {
    if (idle || performance.now() - lastByteAt <= ctx.idleTimeoutMs) return;
    idle = true;
    abortUpstream(new Error("idle timeout"));
  }, Math.max(10, Math.min(1000, ctx.idleTimeoutMs / 4)));
  watchdog.unref?.();

  const errorEvent = (message: string, code: string) => `data: ${JSON.stringify({ error: { message, type: "upstream_error", param: null, code } })}\n\n`;
  /** The protocol's failure event, which ends a broken stream. */
  const failure = (message: string, code: string): string => (translator ? translator.fail(message) : errorEvent(message, code));

  /** Encodes what goes to the harness, once, and keeps it for the record. */
  const out = (text: string): Uint8Array => {
    if (text === "") return NOTHING;
    const bytes = encoder.encode(text);
    sent.push(bytes);
    return bytes;
  };

  /**
   * Ends the stream: the terminal event goes into the record first, and to the harness only
   * once the record is written. A complete answer whose record failed ends with an error event.
   */
  const terminate = (status: CallStatus, error: string, terminal: string): Uint8Array => {
    over = true;
    const bytes = out(terminal);
    const recorded = finish(status, error);
    if (recorded || status !== CallStatus.OK) return bytes;
    return encoder.encode(translator ? translator.withdraw(WITHDRAWN) : errorEvent(WITHDRAWN, "recorder_unavailable"));
  };

  /** The upstream ended: how complete was it? */
  const atEnd = (): Uint8Array => {
    const tail = out(rewriter.end());
    const url = base.upstream;
    if (malformed !== undefined) {
      const message = `upstream ${url} sent a data line that is not JSON: ${malformed}`;
      return concatBytes([tail, terminate(CallStatus.UPSTREAM_ERROR, message, failure(message, "upstream_bad_stream"))]);
    }
    if (upstreamError !== undefined) {
      // Passthrough: the harness already got the upstream's error event, which ends its stream.
      const terminal = translator ? translator.fail(upstreamError) : "";
      return concatBytes([tail, terminate(CallStatus.UPSTREAM_ERROR, `upstream ${url} reported an error mid-stream: ${upstreamError}`, terminal)]);
    }
    if (sawDone || capture.finishReason !== "") {
      return concatBytes([tail, terminate(CallStatus.OK, "", translator ? translator.finish() : DONE)]);
    }
    const message = `upstream ${url} ended the stream before it was complete (no [DONE], no finish reason): the answer is cut short`;
    return concatBytes([tail, terminate(CallStatus.UPSTREAM_ERROR, message, failure(message, "upstream_stream_cut"))]);
  };

  type ReadResult = { done: true; value?: undefined } | { done: false; value: Uint8Array | ChunkBatch };

  /** A failed upstream read: how the stream ends. */
  const readFailed = (error: unknown): Uint8Array => {
    if (finished) {
      over = true;
      return NOTHING;
    }
    // After [DONE] the answer is whole, however the connection then ends.
    if (sawDone && !idle) return atEnd();
    if (idle) {
      const message = `upstream ${base.upstream} sent nothing for ${ctx.idleTimeoutMs} ms mid-stream`;
      return terminate(CallStatus.TIMEOUT, message, failure(message, "upstream_timeout"));
    }
    // An unterminated last event is dropped: it would run into the error event.
    const message = `upstream ${base.upstream} stream failed: ${(error as Error).message}`;
    return terminate(CallStatus.UPSTREAM_ERROR, message, failure(message, "upstream_stream_error"));
  };

  /** One upstream read: what to send the harness now (empty for nothing yet). */
  const onRead = (result: ReadResult): Uint8Array => {
    lastByteAt = performance.now();
    if (result.done) return atEnd();
    if (firstChunk) {
      firstChunk = false;
      base.ttftMs = performance.now() - base.startPerf;
    }
    const value = result.value;
    upstreamBytes += value instanceof Uint8Array ? value.byteLength : value.bytes;
    if (upstreamBytes > ctx.maxStreamBytes) {
      const message = `upstream ${base.upstream} streamed more than ${ctx.maxStreamBytes} bytes for one answer, the proxy's limit (--max-stream-bytes): the call is ended`;
      abortUpstream(new Error("stream size limit"));
      return terminate(CallStatus.UPSTREAM_ERROR, message, failure(message, "upstream_too_large"));
    }
    return out(value instanceof Uint8Array ? rewriter.push(value) : onItems(value.items));
  };

  const body = new ReadableStream({
    type: "direct",
    async pull(controller: ReadableStreamDirectController) {
      try {
        while (!over) {
          if (finished) break;
          // The read awaited here, its result handled synchronously: no async step per chunk
          // between the read and the write.
          let result: ReadResult | undefined;
          let readError: unknown;
          try {
            result = await reader.read();
          } catch (error) {
            readError = error;
          }
          const bytes = result ? onRead(result) : readFailed(readError);
          if (bytes.length === 0) continue;
          // Bytes, not the string: the sink's own string path costs more (measured, 256 streams:
          // 4.3 against 4.7-5.5 ms CPU per call). No flush: the sink sends what was written at
          // the end of the tick (the harness still gets each event at once), a flush per event
          // costs a second syscall.
          const written = controller.write(bytes);
          if (written instanceof Promise) await written; // backpressure: a slow harness
        }
      } catch {
        // A write to a harness that went away: recorded as such, the upstream call stopped.
        onClientAbort();
        return;
      }
      // The answer is out: the connection is idle from here on, and may be closed as such.
      ctx.connections.release(request);
      controller.close();
    },
    cancel: onClientAbort,
  });
  return new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...callHeaders } });
}

/**
 * A whole JSON answer (the upstream ignored `stream: true`) as the stream the harness asked for:
 * one chunk with the whole message, then the end. An SDK reading a stream would take the JSON
 * body for an empty stream and report an empty answer.
 *
 * @example
 * jsonAsStream({ id: "c", object: "chat.completion", choices: [{ index: 0, message: { content: "hi" }, finish_reason: "stop" }] }, prepared)
 * // 'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},...}]}\n\ndata: [DONE]\n\n'
 */
export function jsonAsStream(json: any, prepared: PreparedCall): string {
  const chunk: any = { ...json };
  if (prepared.capture === "chat") {
    chunk.object = "chat.completion.chunk";
    chunk.choices = (Array.isArray(json.choices) ? json.choices : []).map((choice: any) => {
      const { message, ...rest } = choice ?? {};
      const delta: any = { ...(message ?? {}) };
      if (Array.isArray(delta.tool_calls)) delta.tool_calls = delta.tool_calls.map((call: any, index: number) => ({ index, ...call }));
      return { ...rest, delta };
    });
  }
  const translator = prepared.translateStream?.();
  if (translator) return translator.push(chunk) + translator.finish();
  return `data: ${JSON.stringify(chunk)}\n\n${DONE}`;
}
