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
import { captureAndStrip, emptyAfterStrip } from "../capture/tokens.ts";
import { parseAnswer } from "../capture/answer-json.ts";
import { createSseRewriter, type SseRewriter } from "../capture/sse-rewriter.ts";
import { chunkSourceOf, takesChunkObjects, type ChunkBatch, type ChunkItem } from "../capture/chunk-source.ts";
import type { PreparedCall, StreamTranslator } from "./types.ts";
import type { CallInFlight } from "./call-in-flight.ts";
import { concatBytes } from "../../lib/index.ts";

const encoder = new TextEncoder();
/** The first size of a stream's buffer of what the harness was sent (grown by doubling). */
const SENT_START_BYTES = 16 * 1024;
const DONE = "data: [DONE]\n\n";
const NOTHING = new Uint8Array(0);
export const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" };
const WITHDRAWN = "the call could not be recorded, so its answer is withdrawn";

type ReadResult = { done: true; value?: undefined } | { done: false; value: Uint8Array | ChunkBatch };

/**
 * The harness's Response for a streamed upstream answer.
 *
 * @example
 * return streamAnswer(call, sent.response, sent.abort);
 */
export function streamAnswer(call: CallInFlight, upstream: Response, abortUpstream: (reason?: unknown) => void): Response {
  const relay = new StreamRelay(call, upstream, abortUpstream);
  const body = new ReadableStream({
    type: "direct",
    pull: (controller: ReadableStreamDirectController) => relay.run(controller),
    cancel: relay.onClientAbort,
  });
  return new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...call.headers } });
}

/**
 * One stream's state machine: upstream bytes in (read by `run`), harness bytes out, the call
 * recorded once, when the stream ends however it ends.
 */
class StreamRelay {
  private readonly translator: StreamTranslator | undefined;
  private readonly reader: { read(): Promise<ReadResult> };
  /** The rewriter was stopped: later events of a read of chunk objects are dropped too. */
  private stopped = false;
  private readonly rewriter: SseRewriter;
  private readonly watchdog: ReturnType<typeof setInterval>;
  /**
   * What the harness was sent, for the record: one buffer each event is encoded into (its bytes
   * are handed on as a view and never written again; a fuller buffer is copied into a larger
   * one), so the record's answer is a view of it rather than every event joined at the end.
   */
  private sent = new Uint8Array(SENT_START_BYTES);
  private sentBytes = 0;
  private sawDone = false;
  /** The first data line that is not JSON. */
  private malformed: string | undefined;
  /** An `error` object the upstream sent mid-stream. */
  private upstreamError: string | undefined;
  private finished = false;
  /** Nothing more to send. */
  private over = false;
  private firstChunk = true;
  private upstreamBytes = 0;
  private lastByteAt = performance.now();
  private idle = false;

  constructor(
    private readonly call: CallInFlight,
    upstream: Response,
    private readonly abortUpstream: (reason?: unknown) => void,
  ) {
    this.translator = call.prepared.translateStream?.();
    // An answer the proxy made itself (token-in) comes as chunk objects, unless the harness asked
    // for ids (then its prompt ids are written as the text made for them: the bytes).
    const chunks = takesChunkObjects(call.prepared.wants) ? chunkSourceOf(upstream) : undefined;
    this.reader = chunks ?? upstream.body!.getReader();
    this.rewriter = createSseRewriter(this.onEvent);
    call.request.signal.addEventListener("abort", this.onClientAbort, { once: true });
    // One watchdog per stream instead of a timer per read: a read only bumps a timestamp, and an
    // idle upstream is aborted, which ends the pending read.
    const idleMs = call.ctx.idleTimeoutMs;
    this.watchdog = setInterval(() => {
      if (this.idle || performance.now() - this.lastByteAt <= idleMs) return;
      this.idle = true;
      this.abortUpstream(new Error("idle timeout"));
    }, Math.max(10, Math.min(1000, idleMs / 4)));
    this.watchdog.unref?.();
  }

  private stop(): void {
    this.stopped = true;
    this.rewriter.stop();
  }

  /** One upstream SSE event's data: what the harness gets for it ("" nothing, undefined: the event as it came). */
  private readonly onEvent = (data: string): string | undefined => {
    const { translator, call } = this;
    if (data === "[DONE]") {
      this.sawDone = true;
      // The end is sent once the call is in the log (terminate()); anything after it is dropped.
      this.stop();
      return "";
    }
    let chunk: any;
    try {
      chunk = parseAnswer(data, call.wants, call.rollout.idsMemo);
    } catch {
      this.malformed ??= data.slice(0, 200);
      if (!translator) return undefined; // the harness gets it as sent; the record says the call failed
      this.stop();
      return "";
    }
    return this.onChunk(chunk);
  };

  /** One parsed event: what to send the harness ("" nothing, undefined the event unchanged). */
  private readonly onChunk = (chunk: any): string | undefined => {
    const { translator, call } = this;
    if (chunk === null || typeof chunk !== "object") return translator ? "" : undefined;
    if (chunk.error !== undefined && chunk.error !== null) {
      // vLLM reports a failure mid-stream as a data event with an `error` object (SGLang too:
      // `{"error": {"object": "error", "message", ...}}`).
      this.upstreamError ??= typeof chunk.error === "string" ? chunk.error : String(chunk.error.message ?? JSON.stringify(chunk.error));
      if (!translator) return undefined; // the SDKs raise it as an error
      this.stop();
      return "";
    }
    const changed = captureAndStrip(call.prepared.capture, chunk, call.capture, call.wants);
    if (translator) return translator.push(chunk);
    if (!changed) return undefined;
    // The usage or sglext chunk the proxy asked for in train mode is dropped when the harness did not ask.
    if (emptyAfterStrip(chunk)) return "";
    return `data: ${JSON.stringify(chunk)}\n\n`;
  };

  /** A read of chunk objects: each handled as a parsed event, serialised once. */
  private onItems(items: ChunkItem[]): string {
    let text = "";
    for (const item of items) {
      if (this.stopped) break;
      const handled = typeof item === "string" ? this.onEvent(item) : this.onChunk(item);
      text += handled ?? `data: ${typeof item === "string" ? item : JSON.stringify(item)}\n\n`;
    }
    return text;
  }

  /** Records the call once; false when the record could not be written. */
  private finish(status: CallStatus, error: string): boolean {
    if (this.finished) return true;
    this.finished = true;
    clearInterval(this.watchdog);
    this.call.request.signal.removeEventListener("abort", this.onClientAbort);
    let recorded = true;
    try {
      this.call.end(200, status, error, this.sent.subarray(0, this.sentBytes));
      this.call.ctx.recorder.record(this.call);
    } catch {
      // The log refused it (a full disk, ids that do not encode): the stream's end is withheld.
      recorded = false;
    }
    this.call.leave();
    return recorded;
  }

  readonly onClientAbort = (): void => {
    this.abortUpstream(new Error("client disconnected"));
    this.finish(CallStatus.CLIENT_ABORTED, "the harness disconnected before the stream ended");
  };

  private errorEvent(message: string, code: string): string {
    return `data: ${JSON.stringify({ error: { message, type: "upstream_error", param: null, code } })}\n\n`;
  }

  /** The protocol's failure event, which ends a broken stream. */
  private failure(message: string, code: string): string {
    return this.translator ? this.translator.fail(message) : this.errorEvent(message, code);
  }

  /** Encodes what goes to the harness, once, and keeps it for the record. */
  private out(text: string): Uint8Array {
    if (text === "") return NOTHING;
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const need = this.sentBytes + text.length * 3;
    if (need > this.sent.length) {
      const grown = new Uint8Array(Math.max(need, this.sent.length * 2));
      grown.set(this.sent.subarray(0, this.sentBytes));
      this.sent = grown;
    }
    const start = this.sentBytes;
    this.sentBytes += encoder.encodeInto(text, this.sent.subarray(start)).written;
    return this.sent.subarray(start, this.sentBytes);
  }

  /**
   * Ends the stream: the terminal event goes into the record first, and to the harness only
   * once the record is written. A complete answer whose record failed ends with an error event.
   */
  private terminate(status: CallStatus, error: string, terminal: string): Uint8Array {
    this.over = true;
    const bytes = this.out(terminal);
    const recorded = this.finish(status, error);
    if (recorded || status !== CallStatus.OK) return bytes;
    return encoder.encode(this.translator ? this.translator.withdraw(WITHDRAWN) : this.errorEvent(WITHDRAWN, "recorder_unavailable"));
  }

  /** The upstream ended: how complete was it? */
  private atEnd(): Uint8Array {
    const { translator } = this;
    const tail = this.out(this.rewriter.end());
    const url = this.call.record.upstream;
    if (this.malformed !== undefined) {
      const message = `upstream ${url} sent a data line that is not JSON: ${this.malformed}`;
      return concatBytes([tail, this.terminate(CallStatus.UPSTREAM_ERROR, message, this.failure(message, "upstream_bad_stream"))]);
    }
    if (this.upstreamError !== undefined) {
      // Passthrough: the harness already got the upstream's error event, which ends its stream.
      const terminal = translator ? translator.fail(this.upstreamError) : "";
      return concatBytes([tail, this.terminate(CallStatus.UPSTREAM_ERROR, `upstream ${url} reported an error mid-stream: ${this.upstreamError}`, terminal)]);
    }
    if (this.sawDone || this.call.capture.finishReason !== "") {
      return concatBytes([tail, this.terminate(CallStatus.OK, "", translator ? translator.finish() : DONE)]);
    }
    const message = `upstream ${url} ended the stream before it was complete (no [DONE], no finish reason): the answer is cut short`;
    return concatBytes([tail, this.terminate(CallStatus.UPSTREAM_ERROR, message, this.failure(message, "upstream_stream_cut"))]);
  }

  /** A failed upstream read: how the stream ends. */
  private readFailed(error: unknown): Uint8Array {
    if (this.finished) {
      this.over = true;
      return NOTHING;
    }
    // After [DONE] the answer is whole, however the connection then ends.
    if (this.sawDone && !this.idle) return this.atEnd();
    const url = this.call.record.upstream;
    if (this.idle) {
      const message = `upstream ${url} sent nothing for ${this.call.ctx.idleTimeoutMs} ms mid-stream`;
      return this.terminate(CallStatus.TIMEOUT, message, this.failure(message, "upstream_timeout"));
    }
    // An unterminated last event is dropped: it would run into the error event.
    const message = `upstream ${url} stream failed: ${(error as Error).message}`;
    return this.terminate(CallStatus.UPSTREAM_ERROR, message, this.failure(message, "upstream_stream_error"));
  }

  /** One upstream read: what to send the harness now (empty for nothing yet). */
  private onRead(result: ReadResult): Uint8Array {
    this.lastByteAt = performance.now();
    if (result.done) return this.atEnd();
    if (this.firstChunk) {
      this.firstChunk = false;
      this.call.firstByte(performance.now());
    }
    const value = result.value;
    this.upstreamBytes += value instanceof Uint8Array ? value.byteLength : value.bytes;
    const limit = this.call.ctx.maxStreamBytes;
    if (this.upstreamBytes > limit) {
      const message = `upstream ${this.call.record.upstream} streamed more than ${limit} bytes for one answer, the proxy's limit (--max-stream-bytes): the call is ended`;
      this.abortUpstream(new Error("stream size limit"));
      return this.terminate(CallStatus.UPSTREAM_ERROR, message, this.failure(message, "upstream_too_large"));
    }
    return this.out(value instanceof Uint8Array ? this.rewriter.push(value) : this.onItems(value.items));
  }

  /** The stream's one pull: reads the upstream and writes the harness until the stream is over. */
  async run(controller: ReadableStreamDirectController): Promise<void> {
    try {
      while (!this.over) {
        if (this.finished) break;
        // The read awaited here, its result handled synchronously: no async step per chunk
        // between the read and the write.
        let result: ReadResult | undefined;
        let readError: unknown;
        try {
          result = await this.reader.read();
        } catch (error) {
          readError = error;
        }
        const bytes = result ? this.onRead(result) : this.readFailed(readError);
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
      this.onClientAbort();
      return;
    }
    // The answer is out: the connection is idle from here on, and may be closed as such.
    this.call.ctx.connections.release(this.call.request);
    controller.close();
  }
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
