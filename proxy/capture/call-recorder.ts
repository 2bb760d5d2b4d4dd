/**
 * Glue between a finished model call and the segment log: completes its ModelCall record (token
 * view with prompt delta, bodies stored as references to the rollout's content, latency),
 * appends it, updates the rollout state and the metrics. A failed append puts the recorder in a failed state: the proxy then refuses
 * model calls (503) instead of serving calls whose training data would be lost.
 */
import { CallStatus, messageFactory, Protocol, RecordSchema, TokenStatus, UsageSchema, type ModelCall, type Record as ForgeRecord } from "../../schemas/index.ts";
import { createContentWriter, RecorderError, type ContentWriterOptions, type SegmentLog } from "../../records/index.ts";
import { promptDelta, type TokenIds } from "../../records/index.ts";
import { tokenVerdict, type TokenCapture } from "./tokens.ts";
import { servedVersion } from "./served-version.ts";
import type { ProxyMetrics } from "../metrics.ts";
import type { RolloutRegistry, RolloutState } from "../state/rollouts.ts";
import type { TokenInRecord } from "../token-in/call.ts";

export interface RecorderHealth {
  /** Why the log cannot be written, or "" when it can. */
  failure: string;
}

/**
 * A call ready to be recorded (doors/call-in-flight.ts): its ModelCall, filled as the call
 * proceeded, and what the recorder derives the rest from.
 */
export interface RecordableCall {
  /** The record so far: ids, seq, timing start, protocol, status, answer, headers, sampling, engine. */
  readonly record: ModelCall;
  readonly rollout: RolloutState;
  /** The front door's name (metrics label). */
  readonly protocolName: string;
  /** When it went upstream (performance.now()). */
  readonly startPerf: number;
  /** Until the upstream's first byte; undefined when none came. */
  readonly ttftMs: number | undefined;
  /** The version the proxy expected for it (the record gets the served one where its servers say). */
  readonly policyVersion: number;
  readonly requestBody: Uint8Array;
  /** The body sent upstream when it is neither the harness's nor a patch of it. */
  readonly upstreamRequestBody: Uint8Array | undefined;
  readonly capture: TokenCapture;
  /** Whether ids were asked for (train mode). */
  readonly train: boolean;
  /** Completions with `echo` (the engine's logprobs then cover the prompt first). */
  readonly echo: boolean;
  /** Token-in mode: the call's chain fields, and what follows its record (token-in/call.ts). */
  readonly tokenIn: TokenInRecord | undefined;
}

export interface CallRecorder {
  readonly health: RecorderHealth;
  /** Appends the call; throws (and marks the recorder failed) when the log cannot take it. */
  record(call: RecordableCall): ModelCall;
  /** Appends any other record (Rollout, RolloutResult). */
  append(record: ForgeRecord): void;
}

const EMPTY = new Uint8Array(0);
// create() without its reflective walk per call (schemas/message-factory.ts).
const newRecord = messageFactory(RecordSchema);
const newUsage = messageFactory(UsageSchema);

/**
 * A recorder over `log`. Request bodies (and translated upstream bodies) are stored as
 * references to the content their rollout already stored in the current segment, plus what is
 * new (records/content-writer.ts); base64 images in them are stored once per rollout, decoded.
 *
 * @example
 * const recorder = createCallRecorder(log, registry, metrics);
 * recorder.record(call); // a CallInFlight at its end
 */
export function createCallRecorder(log: SegmentLog, registry: RolloutRegistry, metrics: ProxyMetrics, contentOptions: ContentWriterOptions = {}): CallRecorder {
  const health: RecorderHealth = { failure: "" };
  const content = createContentWriter(contentOptions);
  const append = (record: ForgeRecord, segment?: string) => {
    try {
      const result = log.append(record, segment === undefined ? undefined : { segment });
      // A finished rollout's content is not referred to again (a late call stores its own).
      if (record.kind.case === "rolloutResult") content.forget(record.kind.value.rolloutId);
      return result;
    } catch (error) {
      metrics.recorderError();
      // A record that does not encode (BAD_RECORD) is that call's problem: the log is fine, and
      // failing it would refuse every rollout's calls because of one bad request.
      if (!(error instanceof RecorderError && error.code === "BAD_RECORD")) {
        health.failure = `the segment log in ${log.dir} cannot be written: ${(error as Error).message}`;
      }
      throw error;
    }
  };
  return {
    health,
    append: (record) => void append(record),
    record(call) {
      const prompt = call.capture.promptTokenIds;
      // A prefix of the prompt its maker knows (token-in's chain): compared by neither the delta nor the history.
      const knownPrefix = call.tokenIn?.knownPrefix(prompt);
      const modelCall = completeRecord(call, knownPrefix);
      const record = newRecord({ kind: { case: "modelCall", value: modelCall } });
      const upstream = call.upstreamRequestBody ?? EMPTY;
      // Built for the segment the log is on; when the append would start a new one, built again
      // for that one (its pieces stored again), so that every segment reads on its own.
      let segment = log.stats().segment;
      for (;;) {
        const stored = content.begin(modelCall.rolloutId, modelCall.seq, segment);
        modelCall.requestStored = stored.store(call.requestBody, "request");
        modelCall.requestBody = modelCall.requestStored ? EMPTY : call.requestBody;
        modelCall.upstreamStored = upstream.length > 0 ? stored.store(upstream, "upstream") : undefined;
        modelCall.upstreamRequestBody = modelCall.upstreamStored ? EMPTY : upstream;
        modelCall.content = stored.content;
        modelCall.blobRefs = stored.files;
        const result = append(record, segment);
        if (result.offset >= 0) {
          stored.commit();
          break;
        }
        segment = result.segment;
      }
      registry.noteCall(call.rollout, modelCall, prompt, knownPrefix);
      call.tokenIn?.recorded(modelCall, call.rollout, prompt);
      countCall(metrics, call);
      return modelCall;
    },
  };
}

/**
 * The call's record with what its end decides: the token view (prompt as a delta of an earlier
 * call's), the token verdict, usage, the served version, latency.
 */
function completeRecord(call: RecordableCall, knownPrefix: TokenIds | undefined): ModelCall {
  const modelCall = call.record;
  const cap = call.capture;
  const ok = modelCall.status === CallStatus.OK;
  const prompt = cap.promptTokenIds;
  const verdict = tokenVerdict(cap, { train: call.train, ok, failure: modelCall.error, echo: call.echo });
  const delta = prompt ? promptDelta(prompt, call.rollout.recent, knownPrefix) : undefined;
  const endPerf = performance.now();
  const u = cap.usage;
  // Served by the rollout's own servers: the version they reported for this call's tokens.
  const version = call.rollout.serving?.upstreams.length ? servedVersion(cap.weightVersions, call.policyVersion, ok && modelCall.httpStatus === 200) : undefined;
  modelCall.endUnixMs = modelCall.startUnixMs + (endPerf - call.startPerf);
  if (cap.model) modelCall.model = cap.model;
  modelCall.policyVersion = version?.policyVersion ?? call.policyVersion;
  modelCall.servedWeightVersion = version?.served ?? "";
  modelCall.policyVersionMismatch = version?.mismatch ?? "";
  if (u) {
    modelCall.usage = newUsage({
      promptTokens: u.prompt_tokens ?? 0,
      completionTokens: u.completion_tokens ?? 0,
      totalTokens: u.total_tokens ?? 0,
      cachedTokens: u.cached_tokens ?? 0,
    });
  }
  modelCall.latencyMs = endPerf - call.startPerf;
  modelCall.ttftMs = call.ttftMs ?? 0;
  modelCall.promptTokenIds = delta?.suffix ?? [];
  modelCall.completionTokenIds = cap.completionTokenIds;
  modelCall.completionLogprobs = verdict.logprobs;
  modelCall.finishReason = cap.finishReason;
  modelCall.tokenStatus = verdict.status;
  modelCall.prefixOf = delta?.prefixOf ?? "";
  modelCall.prefixLen = delta?.prefixLen ?? 0;
  modelCall.promptLen = prompt?.length ?? 0;
  modelCall.tokenStatusReason = verdict.reason;
  // As create() takes them: a field left undefined keeps its default.
  if (call.tokenIn) for (const [name, value] of Object.entries(call.tokenIn.fields())) if (value !== undefined) (modelCall as any)[name] = value;
  return modelCall;
}

/** The call's series: calls, latency, tokens, and a train-mode answer that came without ids. */
function countCall(metrics: ProxyMetrics, call: RecordableCall): void {
  const modelCall = call.record;
  const u = call.capture.usage;
  const statusName = CallStatus[modelCall.status] ?? String(modelCall.status);
  // The series' experiment / iteration / policy_version labels (text cached per rollout); the version is the recorded one, i.e. what served the call.
  const { rollout: registered } = call.rollout;
  const scope = { rollout: registered, policyVersion: modelCall.policyVersion };
  metrics.callFinished(
    { protocol: call.protocolName, status: statusName, http_status: modelCall.httpStatus },
    modelCall.latencyMs / 1000,
    call.ttftMs === undefined ? undefined : call.ttftMs / 1000,
    scope,
  );
  metrics.tokens("prompt", u?.prompt_tokens ?? call.capture.promptTokenIds?.length ?? 0, scope);
  metrics.tokens("completion", u?.completion_tokens ?? call.capture.completionTokenIds.length, scope);
  if (modelCall.tokenStatus === TokenStatus.MISSING && modelCall.status === CallStatus.OK) metrics.tokenMissing(call.protocolName, scope);
}

export { Protocol };
