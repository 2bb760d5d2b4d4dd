/**
 * The recorder: a durable append-only segment log of forge.v1 Records (docs/record-format.md).
 * Re-exported by `proxy/index.ts`.
 */
export { openSegmentLog } from "./segment-log.ts";
export type { AppendResult, SegmentLog, SegmentLogOptions, SegmentLogStats, WriterIo } from "./segment-log.ts";
export { readRecords, readSegment } from "./reader.ts";
export type { Corruption, LoggedRecord, ReadOptions } from "./reader.ts";
export { listSegments, resolveLogDir, segmentFileName } from "./segments.ts";
export type { SegmentInfo } from "./segments.ts";
export type { Recovered } from "./recover.ts";
export { RecorderError } from "./errors.ts";
export type { RecorderErrorCode } from "./errors.ts";
