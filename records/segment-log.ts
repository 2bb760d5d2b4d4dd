/**
 * The writer: an append-only log of `Record`s in segment files. `append` hands the frame to the
 * OS before it returns (a kill -9 loses nothing appended); fsync runs on a group-commit timer
 * and on `sync()` (a machine crash loses at most `groupCommitMs` of records).
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { crc32c } from "@node-rs/crc32";
import type { Record } from "../schemas/index.ts";
import { syncDir } from "./durable-file.ts";
import { encodeRecord, type EncodedRecord } from "./encode-record.ts";
import { RecorderError, ioError } from "./errors.ts";
import { FRAME_HEADER_BYTES, MAX_PAYLOAD_BYTES, SEGMENT_HEADER_BYTES, SEGMENT_MAGIC, writeFrameHeader } from "./frame.ts";
import { LOCK_HEARTBEAT_MS, acquireLock, type Lock } from "./lock.ts";
import { recoverSegments, type Recovered } from "./recover.ts";
import { resolveLogDir, segmentFileName, segmentNamesSync, segmentNumber } from "./segments.ts";

/** The system calls the writer makes on its hot path; replaceable so tests can inject ENOSPC. */
export type WriterIo = {
  writev(fd: number, buffers: Uint8Array[], position: number): number;
  ftruncate(fd: number, length: number): void;
  fdatasync(fd: number): Promise<void>;
  fdatasyncSync(fd: number): void;
};

export const nodeIo: WriterIo = {
  writev: (fd, buffers, position) => fs.writevSync(fd, buffers, position),
  ftruncate: (fd, length) => fs.ftruncateSync(fd, length),
  fdatasync: promisify(fs.fdatasync),
  fdatasyncSync: (fd) => fs.fdatasyncSync(fd),
};

export type SegmentLogOptions = {
  /** fsync interval; 0 fsyncs inside every append (slow, for tests or paranoid setups). */
  groupCommitMs?: number;
  /** A new segment is started before a frame would take the current one past this size. */
  segmentMaxBytes?: number;
  /** For tests: the writer's system calls. */
  io?: WriterIo;
  /**
   * Segments whose recovery scan is skipped: closed segments a segment index vouches for
   * (records/segment-index.ts checked their size and last frame), so a restart does not read
   * the whole log.
   */
  verified?: ReadonlySet<string>;
};

/**
 * Where the record went; `offset` is -1 when it was not written (see `AppendOptions.segment`).
 * `bytes`: the frame's size, header included (0 when not written).
 */
export type AppendResult = { segment: string; offset: number; bytes: number };

export type AppendOptions = {
  /**
   * The segment the record must land in, because it refers to records there (stored bodies:
   * docs/record-format.md). When the log is on another segment, or this record would start a
   * new one, nothing is written (a new segment is started if needed) and the result names the
   * segment to build the record for, with offset -1. A record built for a segment that has no
   * record yet always lands in it.
   */
  segment?: string;
};

export type SegmentLogStats = {
  /** Bytes written since open (frames and segment headers). */
  bytesWritten: number;
  /** Records appended since open. */
  records: number;
  /** The segment being written. */
  segment: string;
  /** fsyncs done since open. */
  fsyncs: number;
};

export type SegmentLog = {
  /** The log directory (`DIR/log`). */
  readonly dir: string;
  /** Torn tails cut, and corruption found, when the log was opened. */
  readonly recovered: Recovered[];
  /** Appends one record; the bytes are with the OS when it returns. Throws RecorderError. */
  append(record: Record, options?: AppendOptions): AppendResult;
  /** Resolves once everything appended before the call is on stable storage. */
  sync(): Promise<void>;
  /** Syncs, closes the files and releases the LOCK. Idempotent. */
  close(): Promise<void>;
  stats(): SegmentLogStats;
};

type Segment = { name: string; path: string; fd: number; size: number; records: number };

const MiB = 1 << 20;

/**
 * Opens the log of data directory `dir` (segments in `dir/log`) for writing: takes the LOCK,
 * scans every segment (cutting a torn tail off the last one) and starts a new segment.
 *
 * @example
 * const log = await openSegmentLog("data", { groupCommitMs: 50 });
 * log.append(create(RecordSchema, { kind: { case: "blob", value: blob } }));
 * await log.sync();
 * await log.close();
 */
export async function openSegmentLog(dir: string, options: SegmentLogOptions = {}): Promise<SegmentLog> {
  const groupCommitMs = options.groupCommitMs ?? 50;
  const segmentMaxBytes = options.segmentMaxBytes ?? 256 * MiB;
  if (!(groupCommitMs >= 0)) throw new RangeError(`openSegmentLog: groupCommitMs must be >= 0, got ${groupCommitMs}`);
  if (!(segmentMaxBytes > SEGMENT_HEADER_BYTES)) throw new RangeError(`openSegmentLog: segmentMaxBytes must be > 8, got ${segmentMaxBytes}`);

  const logDir = resolveLogDir(dir);
  try {
    fs.mkdirSync(logDir, { recursive: true });
  } catch (error) {
    throw ioError("create log directory", logDir, error);
  }
  const lock = acquireLock(logDir);
  try {
    const names = segmentNamesSync(logDir);
    const recovered = await recoverSegments(logDir, options.verified ? names.filter((name) => !options.verified!.has(name)) : names, names.at(-1));
    const last = names.length > 0 ? segmentNumber(names[names.length - 1]!)! : 0;
    const current = createSegment(logDir, last + 1);
    syncDir(logDir);
    return new SegmentLogWriter(logDir, lock, recovered, current, { groupCommitMs, segmentMaxBytes, io: options.io ?? nodeIo });
  } catch (error) {
    lock.release();
    throw error;
  }
}

/**
 * The open log: the segment being written, the rolled ones waiting for their fsync, the
 * group-commit timer and the first failure (after which nothing is trusted until reopen).
 */
class SegmentLogWriter implements SegmentLog {
  private readonly header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  private readonly rolled: Segment[] = []; // rolled over, not yet fsynced and closed
  private bytesWritten = SEGMENT_HEADER_BYTES;
  private records = 0;
  private fsyncs = 0;
  private written = 0; // appends + rolls so far: what a sync has to cover
  private synced = 0;
  private dirDirty = false;
  private failure: RecorderError | undefined; // after a failed fsync nothing is trusted until reopen
  private closing: Promise<void> | undefined;
  private chain: Promise<void> = Promise.resolve();
  private syncing = false;
  private readonly timer: ReturnType<typeof setInterval> | undefined;
  private readonly heartbeat: ReturnType<typeof setInterval>;
  private readonly groupCommitMs: number;
  private readonly segmentMaxBytes: number;
  private readonly io: WriterIo;

  constructor(
    readonly dir: string,
    private readonly lock: Lock,
    readonly recovered: Recovered[],
    private current: Segment,
    settings: { groupCommitMs: number; segmentMaxBytes: number; io: WriterIo },
  ) {
    this.groupCommitMs = settings.groupCommitMs;
    this.segmentMaxBytes = settings.segmentMaxBytes;
    this.io = settings.io;
    this.timer = this.groupCommitMs > 0 ? setInterval(() => this.groupCommit(), this.groupCommitMs) : undefined;
    this.timer?.unref();
    this.heartbeat = setInterval(() => lock.heartbeat(), LOCK_HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  append(record: Record, options?: AppendOptions): AppendResult {
    const logDir = this.dir;
    if (this.closing) throw new RecorderError("CLOSED", logDir, `recorder: append after close of the log in ${logDir}`);
    if (this.failure) throw this.failure;
    if (record.kind.case === undefined) {
      throw new RecorderError("BAD_RECORD", logDir, "recorder: append of an empty Record (kind not set): set one of model_call, blob, rollout, rollout_result");
    }
    if (options?.segment !== undefined && options.segment !== this.current.name) return { segment: this.current.name, offset: -1, bytes: 0 };
    const payload = this.encode(record);
    const frameBytes = FRAME_HEADER_BYTES + payload.length;
    if (this.current.records > 0 && this.current.size + frameBytes > this.segmentMaxBytes) {
      try {
        this.roll();
      } catch (error) {
        throw error instanceof RecorderError ? error : ioError("start a new segment in", logDir, error);
      }
      if (options?.segment !== undefined) return { segment: this.current.name, offset: -1, bytes: 0 };
    }
    let crc = 0;
    for (const part of payload.parts) crc = crc32c(part, crc);
    writeFrameHeader(this.header, payload.length, crc);
    const segment = this.current;
    const offset = segment.size;
    this.writeFrame(segment, payload, offset);
    segment.size += frameBytes;
    segment.records += 1;
    this.bytesWritten += frameBytes;
    this.records += 1;
    this.written += 1;
    if (this.groupCommitMs === 0) this.syncNow(segment);
    return { segment: segment.name, offset, bytes: frameBytes };
  }

  sync(): Promise<void> {
    if (this.closing) return this.closing; // close() syncs everything appended
    if (this.failure) return Promise.reject(this.failure);
    const run = this.chain.then(() => this.doSync());
    this.chain = run.catch(() => {});
    return run;
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  stats(): SegmentLogStats {
    return { bytesWritten: this.bytesWritten, records: this.records, segment: this.current.name, fsyncs: this.fsyncs };
  }

  /** The record's frame payload, or a BAD_RECORD error saying why it cannot be one. */
  private encode(record: Record): EncodedRecord {
    const logDir = this.dir;
    let payload: EncodedRecord;
    try {
      payload = encodeRecord(record);
    } catch (error) {
      throw new RecorderError("BAD_RECORD", logDir, `recorder: record does not encode as forge.v1.Record (${(error as Error).message}); build it with create(RecordSchema, ...)`, { cause: error });
    }
    if (payload.length > MAX_PAYLOAD_BYTES) {
      throw new RecorderError("BAD_RECORD", logDir, `recorder: record of ${payload.length} bytes is over the ${MAX_PAYLOAD_BYTES}-byte frame limit; store large data as smaller Blob records`);
    }
    return payload;
  }

  /** groupCommitMs 0: the append's own fsync. */
  private syncNow(segment: Segment): void {
    try {
      this.io.fdatasyncSync(segment.fd);
      this.fsyncs += 1;
      this.synced = this.written;
    } catch (error) {
      this.failure = ioError("fsync", segment.path, error);
      throw this.failure;
    }
  }

  /** The group-commit timer's tick: one sync at a time, and none with nothing to sync. */
  private groupCommit(): void {
    if (this.syncing || this.failure || this.closing || (this.synced >= this.written && !this.dirDirty)) return;
    this.syncing = true;
    // A failure is kept in `failure`: the next append or sync reports it.
    this.sync()
      .catch(() => {})
      .finally(() => (this.syncing = false));
  }

  private roll(): void {
    const next = createSegment(this.dir, segmentNumber(this.current.name)! + 1);
    this.rolled.push(this.current);
    this.current = next;
    this.bytesWritten += SEGMENT_HEADER_BYTES;
    this.dirDirty = true;
    this.written += 1;
  }

  // Writes the frame at `offset`, looping on short writes. On failure the partial frame is cut
  // off again so the segment stays a sequence of whole frames.
  private writeFrame(segment: Segment, payload: EncodedRecord, offset: number): void {
    let parts: Uint8Array[] = [this.header, ...payload.parts];
    let position = offset;
    const end = offset + FRAME_HEADER_BYTES + payload.length;
    try {
      while (position < end) {
        const n = this.io.writev(segment.fd, parts, position);
        if (n <= 0) throw Object.assign(new Error("write returned 0 bytes"), { code: "EIO" });
        position += n;
        parts = skip(parts, n);
      }
    } catch (error) {
      const cause = ioError("append to", segment.path, error);
      if (position > offset) {
        try {
          this.io.ftruncate(segment.fd, offset);
        } catch (truncateError) {
          this.failure = new RecorderError(
            "FAILED",
            segment.path,
            `recorder: a failed append left a partial frame in ${segment.path} at offset ${offset} that could not be cut (${(truncateError as NodeJS.ErrnoException).code ?? truncateError}); reopen the log, which cuts it`,
            { cause: truncateError },
          );
        }
      }
      throw cause;
    }
  }

  private async doSync(): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.synced >= this.written && !this.dirDirty) return;
    const target = this.written;
    let at = this.current.path;
    try {
      // Rolled segments leave `rolled` only once synced and closed, so close() finds any left.
      while (this.rolled.length > 0) {
        const old = this.rolled[0]!;
        at = old.path;
        await this.io.fdatasync(old.fd);
        fs.closeSync(old.fd);
        this.rolled.shift();
        this.fsyncs += 1;
      }
      // Read `current` only now: segments rolled while the loop awaited were synced and closed
      // by it. One rolled during this last await stays open in `rolled` until the next sync.
      const segment = this.current;
      at = segment.path;
      await this.io.fdatasync(segment.fd);
      this.fsyncs += 1;
      if (this.dirDirty) {
        this.dirDirty = false;
        syncDir(this.dir);
      }
      this.synced = Math.max(this.synced, target);
    } catch (error) {
      this.failure ??= new RecorderError(
        "FAILED",
        at,
        `recorder: fsync of ${at} failed (${(error as NodeJS.ErrnoException).code ?? error}); records since the last successful fsync may not be on disk. Fix the disk, then reopen the log`,
        { cause: error },
      );
      throw this.failure;
    }
  }

  private async shutDown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    clearInterval(this.heartbeat);
    let error: unknown;
    try {
      await this.chain;
      await this.doSync();
    } catch (e) {
      error = e;
    }
    for (const old of this.rolled.splice(0)) fs.closeSync(old.fd);
    fs.closeSync(this.current.fd);
    // A segment that never got a record is removed: restarts would otherwise leave a trail of them.
    if (this.current.records === 0 && !error) {
      try {
        fs.unlinkSync(this.current.path);
        syncDir(this.dir);
      } catch {
        // Harmless: an empty segment reads as no records.
      }
    }
    this.lock.release();
    if (error) throw error;
  }
}

/** Creates segment `number` (never an existing file) with its header. */
function createSegment(logDir: string, number: number): Segment {
  const name = segmentFileName(number);
  const path = join(logDir, name);
  let fd: number;
  try {
    fd = fs.openSync(path, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o644);
  } catch (error) {
    throw ioError("create segment", path, error);
  }
  try {
    fs.writeSync(fd, SEGMENT_MAGIC, 0, SEGMENT_HEADER_BYTES, 0);
  } catch (error) {
    fs.closeSync(fd);
    fs.rmSync(path, { force: true });
    throw ioError("write the header of", path, error);
  }
  return { name, path, fd, size: SEGMENT_HEADER_BYTES, records: 0 };
}

/** The buffers left after the first `n` bytes of `parts` were written. */
function skip(parts: Uint8Array[], n: number): Uint8Array[] {
  const rest: Uint8Array[] = [];
  let left = n;
  for (const part of parts) {
    if (left >= part.length) {
      left -= part.length;
      continue;
    }
    rest.push(left > 0 ? part.subarray(left) : part);
    left = 0;
  }
  return rest;
}
