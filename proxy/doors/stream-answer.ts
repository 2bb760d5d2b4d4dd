/**
 * The streamed half of the model-call pipeline: reads the upstream SSE, captures token ids and
 * strips the train-mode fields chunk by chunk, sends the harness each event as soon as it is
 * complete, and records the call when the stream ends, aborts or fails.
 *
 * A passthrough stream (Chat, Completions) is a Bun `type: "direct"` stream: one pull runs the
 * whole stream and writes each event straight to the socket (no per-chunk queue and pull
 * round trip). A translated stream stays a default stream, read event by event through the
 * front door's translator.
 */
import { CallStatus } from "../../schemas/index.ts";
import { captureAndStrip, type TokenCapture } from "../capture/tokens.ts";
import { createSseRewriter } from "../capture/sse-rewriter.ts";
import type { FinishedCall } from "../capture/call-recorder.ts";
import type { PipelineContext } from "./types.ts";
import type { PreparedCall } from "./types.ts";
import { concatBytes } from "../../lib/index.ts";

const encoder = new TextEncoder();
const DONE_BYTES = encoder.encode("data: [DONE]\n\n");
const NOTHING = new Uint8Array(0);
const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" };

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
  const translated = prepared.translateStream !== undefined;
  const reader = upstream.body!.getReader();
  const sent: Uint8Array[] = []; // what the harness was sent, for the record
  let sawDone = false;
  // The first data line that is not JSON: the harness gets it as sent, the record says the call failed.
  let malformed: string | undefined;
  let finished = false;
  let over = false; // nothing more to send
  let firstChunk = true;

  const rewriter = createSseRewriter((data) => {
    if (data === "[DONE]") {
      sawDone = true;
      // Passthrough holds the end back until the call is in the log (see the end of next()).
      return translated ? undefined : "";
    }
    let chunk: any;
    try {
      chunk = JSON.parse(data);
    } catch {
      malformed ??= data.slice(0, 200);
      return undefined; // the harness gets it as sent
    }
    if (chunk === null || typeof chunk !== "object") return undefined;
    if (!captureAndStrip(prepared.capture, chunk, capture, prepared.wants)) return undefined;
    // The usage-only chunk the proxy asked for in train mode is dropped when the harness did not ask.
    if (Array.isArray(chunk.choices) && chunk.choices.length === 0 && !prepared.wants.usage && !("usage" in chunk)) return "";
    return `data: ${JSON.stringify(chunk)}\n\n`;
  });

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
      // The recorder is now failed and refuses further calls; this stream's end is withheld.
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

  // How the upstream stream ended. Passthrough records at once (before the harness sees the
  // end); a translated stream records when the translator has flushed its last events.
  let ended: { status: CallStatus; error: string } | undefined;
  const end = (status: CallStatus, error: string) => {
    over = true;
    if (translated) ended = { status, error };
    else finish(status, error);
  };

  /** Encodes what goes to the harness, once; passthrough keeps it for the record (a translated stream's record comes from the tap). */
  const out = (text: string): Uint8Array => {
    if (text === "") return NOTHING;
    const bytes = encoder.encode(text);
    if (!translated) sent.push(bytes);
    return bytes;
  };

  /** Reads the upstream once; returns what to send the harness now (empty for nothing yet). */
  const next = async (): Promise<Uint8Array> => {
    if (finished) {
      over = true;
      return NOTHING;
    }
    let result: Awaited<ReturnType<typeof reader.read>>;
    try {
      result = await reader.read();
    } catch (error) {
      if (finished) {
        over = true;
        return NOTHING;
      }
      if (idle) {
        const message = `upstream ${base.upstream} sent nothing for ${ctx.idleTimeoutMs} ms mid-stream`;
        const bytes = out(errorEvent(message, "upstream_timeout"));
        end(CallStatus.TIMEOUT, message);
        return bytes;
      }
      const message = `upstream ${base.upstream} stream failed: ${(error as Error).message}`;
      const bytes = concatBytes([out(rewriter.end()), out(errorEvent(message, "upstream_stream_error"))]);
      end(CallStatus.UPSTREAM_ERROR, message);
      return bytes;
    }
    lastByteAt = performance.now();
    if (result.done) {
      const tail = out(rewriter.end());
      const complete = sawDone || capture.finishReason !== "";
      const status = malformed !== undefined ? CallStatus.UPSTREAM_ERROR : complete ? CallStatus.OK : CallStatus.UPSTREAM_ERROR;
      const error =
        malformed !== undefined
          ? `upstream ${base.upstream} sent a data line that is not JSON: ${malformed}`
          : complete
            ? ""
            : `upstream ${base.upstream} ended the stream before [DONE]`;
      if (sawDone && !translated) {
        // The harness sees the end of the stream only once the call is in the log: a call that
        // could not be recorded ends with an error event instead of a clean [DONE].
        over = true;
        sent.push(DONE_BYTES);
        const recorded = finish(status, error);
        return concatBytes([tail, recorded ? DONE_BYTES : encoder.encode(errorEvent("the call could not be recorded, so its answer is withdrawn", "recorder_unavailable"))]);
      }
      end(status, error);
      return tail;
    }
    if (firstChunk) {
      firstChunk = false;
      base.ttftMs = performance.now() - base.startPerf;
    }
    return out(rewriter.push(result.value));
  };

  const headers = { ...SSE_HEADERS, ...callHeaders };
  if (!translated) {
    const body = new ReadableStream({
      type: "direct",
      async pull(controller: ReadableStreamDirectController) {
        try {
          while (!over) {
            const bytes = await next();
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
        controller.close();
      },
      cancel: onClientAbort,
    });
    return new Response(body, { status: 200, headers });
  }

  const events = new ReadableStream<Uint8Array>({
    async pull(controller) {
      // A pull that enqueues nothing is not called again while a piped reader waits (Streams
      // spec: pullAgain is only set by reads during the pull), so read on until there is output:
      // an event split over several upstream reads must not stall a translated stream.
      for (;;) {
        if (over) {
          controller.close();
          return;
        }
        const bytes = await next();
        if (bytes.length > 0) controller.enqueue(bytes);
        if (over) {
          controller.close();
          return;
        }
        if (bytes.length > 0) return;
      }
    },
    cancel: onClientAbort,
  });
  const tap = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      sent.push(chunk);
      controller.enqueue(chunk);
    },
    flush() {
      // The translator's last events are in: now the record holds all the harness got.
      if (ended) finish(ended.status, ended.error);
    },
  });
  return new Response(events.pipeThrough(prepared.translateStream!()).pipeThrough(tap), { status: 200, headers });
}
