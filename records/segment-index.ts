/**
 * A per-segment index beside the log (docs/record-format.md, "Segment indexes"), so a writer
 * restarts without reading the whole log and a reader finds one rollout's records without
 * scanning every segment:
 *
 *   DIR/log/index/seg-00000001.forge.json
 *
 * For a closed segment it lists, per rollout, the offsets of its frames, its Rollout and
 * RolloutResult records (protobuf, base64) and what its calls add up to (count, highest seq,
 * token statuses, policy version). It is written once the segment is complete (rolled over or
 * closed by its writer, or scanned on open after a crash), through a temporary file, fsync and
 * rename, and trusted only while the segment still matches it: the same size, and an intact
 * frame header at the recorded last offset that ends exactly where the index says the frames
 * end. Anything else (no index, a stale or unreadable one) and the segment is scanned again.
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { fromBinary, RolloutResultSchema, RolloutSchema, toBinary, TokenStatus, type Record, type Rollout, type RolloutResult } from "../schemas/index.ts";
import { writeFileAtomic } from "./durable-file.ts";
import { checkedFrameLength, FRAME_HEADER_BYTES, FRAME_HEADER_BYTES_V1, SEGMENT_HEADER_BYTES, segmentVersion } from "./frame.ts";
import { readSegment } from "./reader.ts";

export const SEGMENT_INDEX_FORMAT = "forge-segment-index/1";

/** What one segment holds of one rollout. */
export type RolloutEntry = {
  /** Offsets of the rollout's frames in the segment, in order (calls, its Rollout and result). */
  offsets: number[];
  /** Its Rollout record, when registered in this segment (protobuf binary, base64), and from it what lookups need without decoding it: the key's digest, the try it retries. */
  rollout?: string;
  key?: string;
  retryOf?: string;
  /** Its RolloutResult, when finished in this segment (the last one, as readers take it). */
  result?: string;
  /** ModelCall records of the rollout in this segment, their highest seq, token statuses, highest policy version. */
  calls: number;
  seq: number;
  status: { [tokenStatus: string]: number };
  policy: number;
};

export type SegmentIndex = {
  format: typeof SEGMENT_INDEX_FORMAT;
  segment: string;
  /** File size when the index was written. */
  size: number;
  /** Frame format version of the segment. */
  version: 1 | 2;
  /** Offset of the last intact frame, and where it ends (null / the header's end when empty). */
  last: number | null;
  end: number;
  records: number;
  /** Damaged byte ranges a scan skipped (they stay quarantined; the records around them are indexed). */
  damaged: number;
  rollouts: { [rolloutId: string]: RolloutEntry };
};

/** The index folder of a log directory. */
export function segmentIndexDir(logDir: string): string {
  return join(logDir, "index");
}

const indexPath = (logDir: string, segment: string) => join(segmentIndexDir(logDir), `${segment}.json`);
const encode64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

/** The rollout a record belongs to ("" for records of none: Blobs). */
export function recordRolloutId(record: Record): string {
  const kind = record.kind;
  if (kind.case === "modelCall" || kind.case === "rollout" || kind.case === "rolloutResult") return kind.value.rolloutId;
  return "";
}

export interface SegmentIndexer {
  readonly segment: string;
  /** Adds the record written at `offset` as a frame of `bytes` bytes (header included). */
  note(record: Record, offset: number, bytes: number): void;
  /** Counts a damaged range a scan skipped. */
  damaged(): void;
  /** The index as it stands (the segment's frames so far). */
  index(): SegmentIndex;
}

/**
 * Builds the index of one segment from its records as they are written (or read).
 *
 * @example
 * const indexer = createSegmentIndexer("seg-00000003.forge");
 * const { offset } = log.append(record);
 * indexer.note(record, offset, bytes);
 */
export function createSegmentIndexer(segment: string, version: 1 | 2 = 2): SegmentIndexer {
  const rollouts: SegmentIndex["rollouts"] = {};
  let last: number | null = null;
  let end = SEGMENT_HEADER_BYTES;
  let records = 0;
  let damaged = 0;
  return {
    segment,
    note(record, offset, bytes) {
      records++;
      last = offset;
      end = offset + bytes;
      const id = recordRolloutId(record);
      if (!id) return;
      let entry = rollouts[id];
      if (!entry) {
        entry = { offsets: [], calls: 0, seq: 0, status: {}, policy: 0 };
        rollouts[id] = entry;
      }
      entry.offsets.push(offset);
      const kind = record.kind;
      if (kind.case === "modelCall") {
        const call = kind.value;
        entry.calls++;
        entry.seq = Math.max(entry.seq, call.seq);
        const status = TokenStatus[call.tokenStatus] ?? String(call.tokenStatus);
        entry.status[status] = (entry.status[status] ?? 0) + 1;
        entry.policy = Math.max(entry.policy, call.policyVersion);
      } else if (kind.case === "rollout") {
        entry.rollout = encode64(toBinary(RolloutSchema, kind.value));
        entry.key = kind.value.keySha256;
        if (kind.value.retryOf) entry.retryOf = kind.value.retryOf;
        entry.policy = Math.max(entry.policy, kind.value.policyVersion);
      } else if (kind.case === "rolloutResult") {
        entry.result = encode64(toBinary(RolloutResultSchema, kind.value));
      }
    },
    damaged: () => void damaged++,
    index: () => ({ format: SEGMENT_INDEX_FORMAT, segment, size: end, version, last, end, records, damaged, rollouts }),
  };
}

/**
 * Writes a segment's index (temporary file, fsync, rename, fsync of the folder): a crash leaves
 * the old index or the new one, never half of one.
 *
 * @example
 * writeSegmentIndex("data/log", indexer.index());
 */
export function writeSegmentIndex(logDir: string, index: SegmentIndex): void {
  writeFileAtomic(indexPath(logDir, index.segment), "write the segment index", (fd) => fs.writeSync(fd, JSON.stringify(index)));
}

/**
 * The index of `segment` if there is one and the segment still matches it; undefined otherwise
 * (missing, unreadable, another format, or stale: the segment's size or its last frame differ).
 *
 * @example
 * const index = loadSegmentIndex("data/log", "seg-00000001.forge"); // undefined: scan it
 */
export function loadSegmentIndex(logDir: string, segment: string): SegmentIndex | undefined {
  let index: SegmentIndex;
  try {
    index = JSON.parse(fs.readFileSync(indexPath(logDir, segment), "utf8")) as SegmentIndex;
  } catch {
    return undefined;
  }
  if (index?.format !== SEGMENT_INDEX_FORMAT || index.segment !== segment || typeof index.rollouts !== "object") return undefined;
  return matchesSegment(join(logDir, segment), index) ? index : undefined;
}

/** Whether the segment file at `path` is the one `index` was made of: its size, its header, and its last frame. */
function matchesSegment(path: string, index: SegmentIndex): boolean {
  let fd: number | undefined;
  try {
    fd = fs.openSync(path, "r");
    if (fs.fstatSync(fd).size !== index.size) return false;
    const head = Buffer.alloc(SEGMENT_HEADER_BYTES);
    if (fs.readSync(fd, head, 0, SEGMENT_HEADER_BYTES, 0) !== SEGMENT_HEADER_BYTES || segmentVersion(head) !== index.version) return false;
    if (index.last === null) return index.end === SEGMENT_HEADER_BYTES;
    const headerBytes = index.version === 2 ? FRAME_HEADER_BYTES : FRAME_HEADER_BYTES_V1;
    const header = Buffer.alloc(headerBytes);
    if (fs.readSync(fd, header, 0, headerBytes, index.last) !== headerBytes) return false;
    const view = new DataView(header.buffer, header.byteOffset, header.length);
    const length = index.version === 2 ? checkedFrameLength(header, view, 0) : view.getUint32(0, true);
    return length > 0 && index.last + headerBytes + length === index.end;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * Builds the index of a closed segment by reading it (damaged ranges are skipped and counted;
 * the proxy quarantined them when it opened the log).
 *
 * @example
 * writeSegmentIndex("data/log", await indexSegmentFile("data/log/seg-00000007.forge"));
 */
export async function indexSegmentFile(path: string): Promise<SegmentIndex> {
  const segment = path.slice(path.lastIndexOf("/") + 1);
  const head = Buffer.alloc(SEGMENT_HEADER_BYTES);
  let size = 0;
  {
    const fd = fs.openSync(path, "r");
    try {
      size = fs.fstatSync(fd).size;
      fs.readSync(fd, head, 0, SEGMENT_HEADER_BYTES, 0);
    } finally {
      fs.closeSync(fd);
    }
  }
  const version = segmentVersion(head) ?? 2;
  const headerBytes = version === 2 ? FRAME_HEADER_BYTES : FRAME_HEADER_BYTES_V1;
  const indexer = createSegmentIndexer(segment, version);
  for await (const { record, offset, bytes } of readSegment(path, { onCorruption: () => indexer.damaged() })) {
    indexer.note(record, offset, bytes ?? headerBytes);
  }
  return { ...indexer.index(), size };
}

/**
 * The Rollout an index entry holds (`entry.rollout`).
 *
 * @example
 * decodeRollout(index.rollouts["r-1"]!.rollout)?.taskId // "fix-typo"
 */
export function decodeRollout(base64: string | undefined): Rollout | undefined {
  return base64 === undefined ? undefined : fromBinary(RolloutSchema, Buffer.from(base64, "base64"));
}

/** The RolloutResult an index entry holds (`entry.result`). */
export function decodeResult(base64: string | undefined): RolloutResult | undefined {
  return base64 === undefined ? undefined : fromBinary(RolloutResultSchema, Buffer.from(base64, "base64"));
}
