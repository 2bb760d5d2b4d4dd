/**
 * One model call on its way through the proxy: created where the call enters
 * (routes/model.ts), taken and filled by each step of the pipeline (doors/pipeline.ts,
 * doors/stream-answer.ts), recorded once by the recorder (capture/call-recorder.ts). Its
 * ModelCall record is built as the call proceeds: each step sets the fields it learns (seq and
 * start when the call goes upstream, the upstream's URL when it answers, status and answer at
 * the end), so nothing is copied into a record at the end.
 */
import { messageFactory, ModelCallSchema, type CallStatus, type ModelCall } from "../../schemas/index.ts";
import { newCapture, type HarnessWants, type TokenCapture } from "../capture/tokens.ts";
import { redactedHeaders } from "../capture/headers.ts";
import { sessionHeaders } from "../capture/session-headers.ts";
import type { RecordableCall } from "../capture/call-recorder.ts";
import { ProxyHttpError } from "../errors.ts";
import { engineEnum, type EngineInfo } from "../engines/kinds.ts";
import type { RolloutState } from "../state/rollouts.ts";
import { leaveCall as leaveRollout, type CallSignal } from "../state/cancel.ts";
import type { TokenInCall } from "../token-in/call.ts";
import type { FrontDoor, PipelineContext, PreparedCall } from "./types.ts";

const encoder = new TextEncoder();
/** create(ModelCallSchema, …) without its reflective walk per call (schemas/message-factory.ts). */
const newModelCall = messageFactory(ModelCallSchema);

/** How a call failed before it had an answer to pass on: what the harness and the record are told. */
export interface CallFailure {
  status: number;
  message: string;
  type: string;
  code: string | null;
}

export class CallInFlight implements RecordableCall {
  /** The record, filled as the call proceeds; the recorder adds the token view and the bodies. */
  readonly record: ModelCall;
  readonly callId = `call-${crypto.randomUUID()}`;
  /** What the answer gave: ids, finish reason, usage (filled chunk by chunk for a stream). */
  readonly capture: TokenCapture = newCapture();
  /** Whether ids were asked for (train mode). */
  readonly train: boolean;
  /** Fields of the answer the harness asked for (kept in what it receives). */
  wants: HarnessWants;
  /** Completions with `echo` (the engine's logprobs then cover the prompt first). */
  echo = false;
  /** The policy version the proxy expects for it (the pause gate's, or the rollout's own servers'). */
  policyVersion = 0;
  /** The call's abort signal and its sources (state/cancel.ts), let go of at `leave()`. */
  private entered: CallSignal | undefined;
  /** When it went upstream (performance.now()); the record's latency and time to first token count from here. */
  startPerf = 0;
  /** Until the upstream's first byte; undefined while none came. */
  ttftMs: number | undefined;
  /** The body sent upstream when it is neither the harness's nor a patch of it. */
  upstreamRequestBody: Uint8Array | undefined;
  /** Token-in mode: the engine request rendered for it (token-in/call.ts). */
  tokenIn: TokenInCall | undefined;
  /** `x-forge-call-id` and `x-forge-seq`, on every answer once it has a seq. */
  headers: Record<string, string> = {};
  private admitted = false;

  constructor(
    readonly ctx: PipelineContext,
    /** The rollout the call belongs to. */
    readonly rollout: RolloutState,
    readonly door: FrontDoor,
    /** The harness's request and its body as it came. */
    readonly request: Request,
    readonly requestBody: Uint8Array,
    /** What the door made of it. */
    readonly prepared: PreparedCall,
  ) {
    this.train = ctx.mode === "train";
    this.wants = prepared.wants;
    const registered = rollout.rollout; // its Rollout record
    this.record = newModelCall({
      rolloutId: registered.rolloutId,
      callId: this.callId,
      protocol: door.protocol,
      model: prepared.model,
      stream: prepared.stream,
    });
  }

  get rolloutId(): string {
    return this.record.rolloutId;
  }

  /** The front door's name (metrics label). */
  get protocolName(): string {
    return this.door.name;
  }

  /** Aborts the upstream request: the harness went away, or the rollout was cancelled (state/cancel.ts). */
  get signal(): AbortSignal | undefined {
    return this.entered?.signal;
  }

  /** Counted in flight (the proxy's limit, the pause gate, the rollout's calls) until `leave()`. */
  enter(policyVersion: number, entered: CallSignal): void {
    this.admitted = true;
    this.policyVersion = policyVersion;
    this.entered = entered;
    this.ctx.metrics.inFlight(1);
  }

  /** Counts the call out once (it is recorded, refused or failed); later calls do nothing. */
  leave(): void {
    if (!this.admitted) return;
    this.admitted = false;
    const ctx = this.ctx;
    ctx.admitted.count--;
    ctx.gate.leave();
    ctx.metrics.inFlight(-1);
    leaveRollout(this.rollout, this.entered);
  }

  /** The engine the call goes to, as identified (docs/engines.md). */
  noteEngine(engine: EngineInfo): void {
    this.record.engine = engineEnum(engine.kind);
    this.record.engineVersion = engine.version;
    this.record.logprobsMode = engine.logprobsMode;
  }

  /** It goes upstream now: its seq, the clock its latency counts from, the harness's headers (a refused call does not read them). */
  start(seq: number): void {
    this.record.seq = seq;
    this.record.requestHeaders = redactedHeaders(this.request.headers);
    this.record.session = sessionHeaders(this.request.headers);
    this.record.startUnixMs = Date.now();
    this.startPerf = performance.now();
    this.headers = { "x-forge-call-id": this.callId, "x-forge-seq": String(seq) };
  }

  /** The upstream's first byte came at `at` (performance.now()). */
  firstByte(at: number): void {
    this.ttftMs = at - this.startPerf;
  }

  /** How the call ended, with what the harness was sent. */
  end(httpStatus: number, status: CallStatus, error: string, responseBody: Uint8Array): void {
    this.record.httpStatus = httpStatus;
    this.record.status = status;
    this.record.error = error;
    this.record.responseBody = responseBody;
  }

  /** Appends the record (the harness is answered only once it is in); a record the log refused is a 503. */
  commit(): ModelCall {
    try {
      return this.ctx.recorder.record(this);
    } catch (error) {
      throw new ProxyHttpError(503, `the call could not be recorded, so it is not served: ${(error as Error).message}`, "service_unavailable", "recorder_unavailable");
    }
  }

  /** Ends, records and answers the call with `bytes` (JSON); the call is counted out. */
  answer(httpStatus: number, status: CallStatus, error: string, bytes: Uint8Array, extraHeaders: Record<string, string> = {}): Response {
    this.end(httpStatus, status, error, bytes);
    this.commit();
    this.leave();
    return new Response(bytes, { status: httpStatus, headers: { "content-type": "application/json", ...this.headers, ...extraHeaders } });
  }

  /** Answers the call with its door's error body for `failure`, recorded with `status`. */
  fail(failure: CallFailure, status: CallStatus, extraHeaders?: Record<string, string>): Response {
    const body = this.prepared.errorBody(failure.status, failure.message, failure.type, failure.code);
    return this.answer(failure.status, status, failure.message, encoder.encode(JSON.stringify(body)), extraHeaders);
  }
}
