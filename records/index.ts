/**
 * The records area: the forge.v1 record log (docs/record-format.md) — a durable append-only
 * segment log, its reader and recovery, record encoding, and the functions that rebuild what a
 * record stores in compact form (a prompt from its delta, an upstream request from its patch,
 * a request body from the content pieces of its rollout).
 * Every writer and reader of records goes through here.
 */
export { openSegmentLog } from "./segment-log.ts";
export type { AppendOptions, AppendResult, SegmentLog, SegmentLogOptions, SegmentLogStats, WriterIo } from "./segment-log.ts";
export { describeCorruption, readRecords, readSegment } from "./reader.ts";
export type { Corruption, LoggedRecord, ReadOptions } from "./reader.ts";
export { listSegments, resolveLogDir, segmentFileName } from "./segments.ts";
export { readCallTokensAt, readRecordsAt } from "./frames-at.ts";
export { dataDirsOf, shardDataDir } from "./shards.ts";
export { callTokensOf } from "./call-tokens.ts";
export {
  createSegmentIndexer,
  decodeResult,
  decodeRollout,
  indexSegmentFile,
  loadSegmentIndex,
  recordRolloutId,
  segmentIndexDir,
  writeSegmentIndex,
  type RolloutEntry,
  type SegmentIndex,
  type SegmentIndexer,
} from "./segment-index.ts";
export type { SegmentInfo } from "./segments.ts";
export { quarantineDir, verifySegments, type Recovered } from "./recover.ts";
export { lockHeld } from "./lock.ts";
export { RecorderError } from "./errors.ts";
export type { RecorderErrorCode } from "./errors.ts";
export { fullPrompt, joinIds, startsWithIds, promptDelta, type PastCall, type PromptDelta, type TokenIds } from "./prompt-delta.ts";
export { upstreamRequestOf } from "./upstream-request.ts";
export { createContentStore, requestBodyOf, upstreamRequestBodyOf, StoredBodyError, type ContentStore } from "./content-store.ts";
export { createContentWriter, type BodyKind, type CallContent, type ContentWriter, type ContentWriterOptions } from "./content-writer.ts";
export { base64File, base64CacheStats, type Base64File } from "./base64-files.ts";
export { bodySpans, type BodySpans, type CutSpan, type PieceSpan, type Span, type SpanOptions } from "./body-spans.ts";
