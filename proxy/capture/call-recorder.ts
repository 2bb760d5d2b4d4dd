/**
 * Glue between a finished model call and the segment log: builds the ModelCall record (token
 * view with prompt delta, bodies stored as references to the rollout's content, headers,
 * timings), appends it, updates the rollout state and the metrics. A failed append puts the recorder in a failed state: the proxy then refuses
 * model calls (503) instead of serving calls whose training data would be lost.
 */
import { CallStatus, create, Engine, LogprobsMode, ModelCallSchema, Protocol, RecordSchema, TokenStatus, UsageSchema, type ModelCall, type Record as ForgeRecord, type SamplingParams } from "../../schemas/index.ts";
import { createContentWriter, RecorderError, type ContentWriterOptions, type SegmentLog } from "../../records/index.ts";
import { promptDelta } from "../../records/index.ts";
import { tokenVerdict, type TokenCapture } from "./tokens.ts";
import { servedVersion } from "./served-version.ts";
import { engineEnum, type EngineInfo } from "../engines/kinds.ts";
import type { ProxyMetrics } from "../metrics.ts";
import type { RolloutRegistry, RolloutState } from "../state/rollouts.ts";
import type { TokenInRecord } from "../token-in/call.ts";

export interface RecorderHealth {
  /** Why the log cannot be written, or "" when it can. */
  failure: string;
}

export interface FinishedCall {
  rollout: RolloutState;
  seq: number;
  callId: string;
  protocol: Protocol;
  protocolName: string;
  startUnixMs: number;
  startPerf: number;
  ttftMs: number | undefined;
  requestBody: Uint8Array;
  responseBody: Uint8Array;
  upstreamRequestBody: Uint8Array | undefined;
  /** The top-level fields set on request_body for the upstream, when that is all that changed. */
  upstreamRequestPatch?: Uint8Array;
  model: string;
  upstream: string;
  policyVersion: number;
  stream: boolean;
  httpStatus: number;
  status: CallStatus;
  error: string;
  capture: TokenCapture;
  /** Whether ids were asked for (train mode). */
  train: boolean;
  requestHeaders: ModelCall["requestHeaders"];
  session: Record<string, string>;
  upstreamAttempts: number;
  /** The engine behind the upstream, as identified (docs/engines.md). */
  engine?: EngineInfo;
  /** The sampling parameters of the body sent upstream. */
  sampling?: SamplingParams;
  /** Completions with `echo` (the engine's logprobs then cover the prompt first). */
  echo?: boolean;
  /** Token-in mode: the call's chain fields, and what follows its record (token-in/call.ts). */
  tokenIn?: TokenInRecord;
}

export interface CallRecorder {
  readonly health: RecorderHealth;
  /** Appends the call; throws (and marks the recorder failed) when the log cannot take it. */
  record(call: FinishedCall): ModelCall;
  /** Appends any other record (Rollout, RolloutResult). */
  append(record: ForgeRecord): void;
}

const EMPTY = new Uint8Array(0);

/**
 * A recorder over `log`. Request bodies (and translated upstream bodies) are stored as
 * references to the content their rollout already stored in the current segment, plus what is
 * new (records/content-writer.ts); base64 images in them are stored once per rollout, decoded.
 *
 * @example
 * const recorder = createCallRecorder(log, registry, metrics);
 * recorder.record(finishedCall);
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
      const cap = call.capture;
      const prompt = cap.promptTokenIds;
      const verdict = tokenVerdict(cap, { train: call.train, ok: call.status === CallStatus.OK, failure: call.error, echo: call.echo });
      const tokenStatus = verdict.status;
      const delta = prompt ? promptDelta(prompt, call.rollout.recent) : undefined;
      const endPerf = performance.now();
      const u = cap.usage;
      // Served by the rollout's own servers: the version they reported for this call's tokens.
      const version = call.rollout.serving?.upstreams.length ? servedVersion(cap.weightVersions, call.policyVersion, call.status === CallStatus.OK && call.httpStatus === 200) : undefined;
      const modelCall = create(ModelCallSchema, {
        rolloutId: call.rollout.rollout.rolloutId,
        seq: call.seq,
        callId: call.callId,
        startUnixMs: call.startUnixMs,
        endUnixMs: call.startUnixMs + (endPerf - call.startPerf),
        protocol: call.protocol,
        responseBody: call.responseBody,
        model: cap.model || call.model,
        upstream: call.upstream,
        policyVersion: version?.policyVersion ?? call.policyVersion,
        servedWeightVersion: version?.served ?? "",
        policyVersionMismatch: version?.mismatch ?? "",
        stream: call.stream,
        httpStatus: call.httpStatus,
        status: call.status,
        error: call.error,
        usage: u
          ? create(UsageSchema, {
              promptTokens: u.prompt_tokens ?? 0,
              completionTokens: u.completion_tokens ?? 0,
              totalTokens: u.total_tokens ?? 0,
              cachedTokens: u.cached_tokens ?? 0,
            })
          : undefined,
        latencyMs: endPerf - call.startPerf,
        ttftMs: call.ttftMs ?? 0,
        promptTokenIds: delta?.suffix ?? [],
        completionTokenIds: cap.completionTokenIds,
        completionLogprobs: verdict.logprobs,
        finishReason: cap.finishReason,
        tokenStatus,
        prefixOf: delta?.prefixOf ?? "",
        prefixLen: delta?.prefixLen ?? 0,
        promptLen: prompt?.length ?? 0,
        requestHeaders: call.requestHeaders,
        session: call.session,
        upstreamRequestPatch: call.upstreamRequestPatch,
        upstreamAttempts: call.upstreamAttempts,
        tokenStatusReason: verdict.reason,
        sampling: call.sampling,
        engine: call.engine ? engineEnum(call.engine.kind) : Engine.UNSPECIFIED,
        engineVersion: call.engine?.version ?? "",
        logprobsMode: call.engine?.logprobsMode ?? LogprobsMode.UNSPECIFIED,
        ...call.tokenIn?.fields(),
      });
      const record = create(RecordSchema, { kind: { case: "modelCall", value: modelCall } });
      const rolloutId = modelCall.rolloutId;
      const upstream = call.upstreamRequestBody ?? EMPTY;
      // Built for the segment the log is on; when the append would start a new one, built again
      // for that one (its pieces stored again), so that every segment reads on its own.
      let segment = log.stats().segment;
      for (;;) {
        const stored = content.begin(rolloutId, call.seq, segment);
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
      registry.noteCall(call.rollout, modelCall, prompt);
      call.tokenIn?.recorded(modelCall, call.rollout);
      const statusName = CallStatus[call.status] ?? String(call.status);
      // The series' experiment / iteration / policy_version labels (text cached per rollout); the version is the recorded one, i.e. what served the call.
      const scope = { rollout: call.rollout.rollout, policyVersion: modelCall.policyVersion };
      metrics.callFinished(
        { protocol: call.protocolName, status: statusName, http_status: call.httpStatus },
        modelCall.latencyMs / 1000,
        call.ttftMs === undefined ? undefined : call.ttftMs / 1000,
        scope,
      );
      metrics.tokens("prompt", u?.prompt_tokens ?? prompt?.length ?? 0, scope);
      metrics.tokens("completion", u?.completion_tokens ?? cap.completionTokenIds.length, scope);
      if (tokenStatus === TokenStatus.MISSING && call.status === CallStatus.OK) metrics.tokenMissing(call.protocolName, scope);
      return modelCall;
    },
  };
}

export { Protocol };
