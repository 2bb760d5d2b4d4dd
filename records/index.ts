/**
 * The records area: the forge.v1 record log (docs/record-format.md) — a durable append-only
 * segment log, its reader and recovery, record encoding, and the functions that rebuild what a
 * record stores in compact form (a prompt from its delta, an upstream request from its patch,
 * a request body from the content pieces of its rollout).
 * Every writer and reader of records goes through here.
 */
export { openSegmentLog } from "./segment-log.ts";
export type { AppendResult, SegmentLog, WriterIo } from "./segment-log.ts";
export { describeCorruption, readRecords, readSegment } from "./reader.ts";
export type { Corruption, LoggedRecord, ReadOptions } from "./reader.ts";
export { listSegments, resolveLogDir } from "./segments.ts";
export { readCallTokensAt, readRecordsAt } from "./frames-at.ts";
export { dataDirsOf } from "./shards.ts";
export { createSegmentIndexer, decodeResult, decodeRollout, indexSegmentFile, loadSegmentIndex, recordRolloutId, writeSegmentIndex, type SegmentIndex, type SegmentIndexer } from "./segment-index.ts";
export { verifySegments, type Recovered } from "./recover.ts";
export { lockHeld } from "./lock.ts";
export { RecorderError } from "./errors.ts";
export { fullPrompt, idsFrom, isViewPrefix, joinIds, startsWithIds, promptDelta, type PastCall, type TokenIds } from "./prompt-delta.ts";
export { upstreamRequestOf } from "./upstream-request.ts";
export { createContentStore, requestBodyOf, StoredBodyError, type ContentStore } from "./content-store.ts";
export { createContentWriter, STORED_BODY_SCAN, type ContentWriterOptions } from "./content-writer.ts";
export { bodySpans, scannedBodySpans, type BodySpans } from "./body-spans.ts";
