/**
 * Streams the frames of one segment file in bounded memory, checking each CRC32C, and says
 * where and why bytes were damaged. Shared by recovery (on open) and by the readers.
 *
 * Version 2 segments are resynchronised after damage: a frame whose header is intact but whose
 * payload fails its CRC is skipped by its length (exactly that frame is lost); after a damaged
 * header the scan looks for the next sync marker whose header CRC checks out. Version 1
 * segments have no sync marker: their scan stops at the first damage, as it always did.
 */
import { open } from "node:fs/promises";
import { crc32c } from "@node-rs/crc32";
import { RecorderError, ioError } from "./errors.ts";
import {
  FRAME_HEADER_BYTES,
  FRAME_HEADER_BYTES_V1,
  MAX_PAYLOAD_BYTES,
  SEGMENT_HEADER_BYTES,
  SYNC_MARKER,
  checkedFrameLength,
  isHeaderPrefix,
  segmentVersion,
  type SegmentVersion,
} from "./frame.ts";

/**
 * A damaged byte range. `incomplete`: the file ends inside a frame (or inside the header),
 * which is what a writer killed mid-write, or still writing, leaves. `corrupt`: bytes that are
 * not a valid frame (CRC mismatch, no sync marker, impossible length).
 */
export type Damage = {
  offset: number;
  /** Bytes from `offset` to the next valid frame (or to the end of the file). */
  length: number;
  kind: "incomplete" | "corrupt";
  reason: string;
  /** The range runs to the end of the file: no valid frame follows it. */
  tail: boolean;
};

/** Kept for readers of the older name: a damaged range. */
export type ScanProblem = Damage;

/** Filled in while a scan runs; final once the iteration is over. */
export type ScanOutcome = {
  /** Size of the file when the scan started (a live writer may grow it; the scan stops there). */
  size: number;
  /** Valid frames seen. */
  records: number;
  /** Offset just past the last valid frame (0 when even the header is bad). */
  end: number;
  /** The segment's format version (0 for an empty file). */
  version: SegmentVersion | 0;
  /** Every damaged range, in file order; only the last can be a `tail`. */
  damage: Damage[];
};

export type Frame = { payload: Uint8Array; offset: number };

export type ScanOptions = {
  /**
   * Reuse one buffer for the whole scan (recovery, which only checks CRCs). Readers must not:
   * protobuf `bytes` fields decode as views into the buffer they were read from.
   */
  reuseBuffer?: boolean;
  chunkBytes?: number;
  /** Called as soon as a damaged range is found, before the frames after it are yielded. */
  onDamage?: (damage: Damage) => void;
};

/** An empty outcome for `scanFrames` to fill in. */
export function newOutcome(): ScanOutcome {
  return { size: 0, records: 0, end: 0, version: 0, damage: [] };
}

/**
 * Yields every valid frame of the segment at `path`, in order, reading `chunkBytes` at a time;
 * damaged ranges are passed to `onDamage` and listed in `outcome.damage`. Throws RecorderError
 * when the file is not a forge segment at all (a foreign or future header), rather than skip it.
 *
 * @example
 * const outcome = newOutcome();
 * for await (const { payload, offset } of scanFrames("data/log/seg-00000001.forge", outcome)) use(payload);
 * for (const d of outcome.damage) console.warn(d.reason);
 */
export async function* scanFrames(path: string, outcome: ScanOutcome, options: ScanOptions = {}): AsyncGenerator<Frame> {
  const chunkBytes = Math.max(options.chunkBytes ?? 1 << 20, 64);
  let handle;
  try {
    handle = await open(path, "r");
  } catch (error) {
    throw ioError("open segment", path, error);
  }
  const damaged = (damage: Damage): void => {
    outcome.damage.push(damage);
    options.onDamage?.(damage);
  };
  try {
    const size = (await handle.stat()).size;
    outcome.size = size;
    outcome.records = 0;
    outcome.end = 0;
    outcome.damage = [];
    if (size === 0) return; // created, never written: an empty segment
    const version = await readSegmentVersion(handle, path, size, damaged);
    if (version === undefined) return;
    outcome.version = version;
    outcome.end = SEGMENT_HEADER_BYTES;
    const window = new FileWindow(handle, path, size, chunkBytes, options.reuseBuffer === true);
    yield* scanBody(window, version, outcome, damaged);
  } finally {
    await handle.close();
  }
}

type FileHandle = Awaited<ReturnType<typeof open>>;

/**
 * The segment's format version from its header; undefined (after reporting the damage) when
 * the header is torn or zeroed. Throws when the file is no forge segment at all.
 */
async function readSegmentVersion(handle: FileHandle, path: string, size: number, damaged: (damage: Damage) => void): Promise<SegmentVersion | undefined> {
  const head = new Uint8Array(Math.min(size, SEGMENT_HEADER_BYTES));
  await readFully(handle, head, 0);
  const version = segmentVersion(head);
  if (version !== undefined) return version;
  if (isHeaderPrefix(head)) {
    damaged({
      offset: 0,
      length: size,
      kind: size < SEGMENT_HEADER_BYTES ? "incomplete" : "corrupt",
      reason: size < SEGMENT_HEADER_BYTES ? `truncated segment header (${size} of 8 bytes)` : "zeroed segment header",
      tail: true,
    });
    return undefined;
  }
  const shown = JSON.stringify(new TextDecoder().decode(head));
  throw new RecorderError("BAD_HEADER", path, `recorder: ${path} is not a forge segment: header ${shown}, expected "FORGESG2" or "FORGESG1" (a file from another program or a newer format; move it out of the log directory)`);
}

/** A window on the file: buf[0, filled) holds the bytes at file offsets [bufAt, bufAt + filled). */
class FileWindow {
  buf = new Uint8Array(0);
  view = new DataView(this.buf.buffer);
  bufAt = SEGMENT_HEADER_BYTES;
  filled = 0;

  constructor(
    private readonly handle: FileHandle,
    private readonly path: string,
    readonly size: number,
    private readonly chunkBytes: number,
    private readonly reuseBuffer: boolean,
  ) {}

  // Makes the window hold file bytes [at, at + n); the caller has checked the file has them.
  // Bytes before `at` are dropped. `want` reads ahead up to that many bytes when it must read.
  async ensure(at: number, n: number, want = n): Promise<void> {
    if (at >= this.bufAt && at + n <= this.bufAt + this.filled) return;
    const keepFrom = Math.max(0, Math.min(at - this.bufAt, this.filled));
    const kept = at >= this.bufAt ? this.filled - keepFrom : 0;
    const need = Math.max(n, Math.min(Math.max(want, this.chunkBytes), this.size - at));
    if (this.reuseBuffer && this.buf.length >= need) {
      this.buf.copyWithin(0, keepFrom, keepFrom + kept);
    } else {
      const next = new Uint8Array(need);
      if (kept > 0) next.set(this.buf.subarray(keepFrom, keepFrom + kept), 0);
      this.buf = next;
      this.view = new DataView(this.buf.buffer);
    }
    this.filled = kept;
    this.bufAt = at;
    while (this.filled < n) {
      const readPos = this.bufAt + this.filled;
      const count = Math.min(this.buf.length - this.filled, this.size - readPos);
      const { bytesRead } = await this.handle.read(this.buf, this.filled, count, readPos);
      if (bytesRead === 0) throw new RecorderError("IO", this.path, `recorder: ${this.path} shrank while being read (at offset ${readPos}); was it truncated by another process?`);
      this.filled += bytesRead;
    }
  }

  /** The offset of the next intact v2 frame header at or after `from`, or -1. */
  async findNextHeader(from: number): Promise<number> {
    const size = this.size;
    let at = from;
    while (at + FRAME_HEADER_BYTES <= size) {
      await this.ensure(at, FRAME_HEADER_BYTES, this.chunkBytes);
      const window = Buffer.from(this.buf.buffer, this.buf.byteOffset, this.filled);
      const hit = window.indexOf(SYNC_MARKER, at - this.bufAt);
      if (hit === -1) {
        // The marker may straddle the end of the window: go on from its last 3 bytes.
        const next = this.bufAt + this.filled - (SYNC_MARKER.length - 1);
        if (this.bufAt + this.filled >= size) return -1;
        at = Math.max(next, at + 1);
        continue;
      }
      const candidate = this.bufAt + hit;
      if (candidate + FRAME_HEADER_BYTES > size) return -1;
      await this.ensure(candidate, FRAME_HEADER_BYTES, this.chunkBytes);
      if (checkedFrameLength(this.buf, this.view, candidate - this.bufAt) !== -1) return candidate;
      at = candidate + 1;
    }
    return -1;
  }
}

/** The damage of the `left` bytes at `pos`, too few for a frame header, that end the file. */
async function shortHeaderDamage(w: FileWindow, pos: number, version: SegmentVersion, headerBytes: number): Promise<Damage> {
  const left = w.size - pos;
  await w.ensure(pos, left);
  const bytes = w.buf.subarray(pos - w.bufAt, pos - w.bufAt + left);
  // A writer's header cut short starts with the sync marker; anything else is damage.
  const torn = version === 1 || SYNC_MARKER.subarray(0, Math.min(left, 4)).every((b, i) => b === bytes[i]);
  return {
    offset: pos,
    length: left,
    kind: torn ? "incomplete" : "corrupt",
    reason: torn ? `short frame header at offset ${pos}: ${left} of ${headerBytes} bytes` : `${left} bytes at offset ${pos} that are no frame`,
    tail: true,
  };
}

/**
 * The frame header at `pos` (in the window): its payload length and CRC, or `next`, where the
 * scan goes on after a damaged header (reported; -1: the scan ends).
 */
async function readFrameHeader(w: FileWindow, pos: number, version: SegmentVersion, damaged: (damage: Damage) => void): Promise<{ length: number; crc: number } | { next: number }> {
  const size = w.size;
  if (version === 2) {
    const length = checkedFrameLength(w.buf, w.view, pos - w.bufAt);
    const crc = w.view.getUint32(pos - w.bufAt + 8, true);
    if (length !== -1) return { length, crc };
    const next = await w.findNextHeader(pos + 1);
    const end = next === -1 ? size : next;
    damaged({ offset: pos, length: end - pos, kind: "corrupt", reason: `damaged frame header at offset ${pos}${next === -1 ? "; no intact frame follows" : `; the next intact frame is at offset ${next}`}`, tail: next === -1 });
    return { next };
  }
  const length = w.view.getUint32(pos - w.bufAt, true);
  const crc = w.view.getUint32(pos - w.bufAt + 4, true);
  if (length === 0 || length > MAX_PAYLOAD_BYTES) {
    damaged({ offset: pos, length: size - pos, kind: "corrupt", reason: `bad frame length ${length} at offset ${pos}`, tail: true });
    return { next: -1 };
  }
  return { length, crc };
}

/** The frames after the segment header, each CRC-checked; damaged ones are reported and skipped (v2) or end the scan (v1). */
async function* scanBody(w: FileWindow, version: SegmentVersion, outcome: ScanOutcome, damaged: (damage: Damage) => void): AsyncGenerator<Frame> {
  const size = w.size;
  const headerBytes = version === 2 ? FRAME_HEADER_BYTES : FRAME_HEADER_BYTES_V1;
  let pos = SEGMENT_HEADER_BYTES;
  while (pos < size) {
    const left = size - pos;
    if (left < headerBytes) {
      damaged(await shortHeaderDamage(w, pos, version, headerBytes));
      return;
    }
    await w.ensure(pos, headerBytes);
    const header = await readFrameHeader(w, pos, version, damaged);
    if ("next" in header) {
      if (header.next === -1) return;
      pos = header.next;
      continue;
    }
    const { length, crc } = header;
    if (left - headerBytes < length) {
      // v2: the header checked out, so the frame really runs past the end of the file.
      damaged({
        offset: pos,
        length: left,
        kind: "incomplete",
        reason: `short frame at offset ${pos}: length ${length} but only ${left - headerBytes} bytes follow`,
        tail: true,
      });
      return;
    }
    await w.ensure(pos, headerBytes + length);
    const payload = w.buf.subarray(pos - w.bufAt + headerBytes, pos - w.bufAt + headerBytes + length);
    const actual = crc32c(payload) >>> 0;
    const frameEnd = pos + headerBytes + length;
    if (actual !== crc) {
      const reason = `CRC mismatch at offset ${pos} (stored ${hex(crc)}, computed ${hex(actual)})`;
      if (version === 1) {
        damaged({ offset: pos, length: left, kind: "corrupt", reason, tail: true });
        return;
      }
      // The header is intact: exactly this frame is damaged, the next one starts after it.
      damaged({ offset: pos, length: headerBytes + length, kind: "corrupt", reason, tail: frameEnd === size });
      pos = frameEnd;
      continue;
    }
    const offset = pos;
    pos = frameEnd;
    outcome.records += 1;
    outcome.end = pos;
    yield { payload, offset };
  }
}

async function readFully(handle: FileHandle, into: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < into.length) {
    const { bytesRead } = await handle.read(into, done, into.length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
}

function hex(n: number): string {
  return `0x${n.toString(16).padStart(8, "0")}`;
}
