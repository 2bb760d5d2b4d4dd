/**
 * Streams the frames of one segment file in bounded memory, checking each CRC32C, and says
 * where and why it stopped. Shared by recovery (on open) and by the readers.
 */
import { open } from "node:fs/promises";
import { crc32c } from "@node-rs/crc32";
import { RecorderError, ioError } from "./errors.ts";
import { FRAME_HEADER_BYTES, MAX_PAYLOAD_BYTES, SEGMENT_HEADER_BYTES, isHeaderPrefix, isSegmentMagic } from "./frame.ts";

/**
 * Why a scan stopped before the end of the file. `incomplete`: the file ends inside a frame
 * (or inside the header), which is what a writer killed mid-write, or still writing, leaves.
 * `corrupt`: bytes that were never a valid frame (CRC mismatch, impossible length).
 */
export type ScanProblem = { offset: number; kind: "incomplete" | "corrupt"; reason: string };

/** Filled in while a scan runs; final once the iteration is over. */
export type ScanOutcome = {
  /** Size of the file when the scan started (a live writer may grow it; the scan stops there). */
  size: number;
  /** Valid frames seen. */
  records: number;
  /** Offset just past the last valid frame (0 when even the header is bad). */
  end: number;
  problem?: ScanProblem;
};

export type Frame = { payload: Uint8Array; offset: number };

export type ScanOptions = {
  /**
   * Reuse one buffer for the whole scan (recovery, which only checks CRCs). Readers must not:
   * protobuf `bytes` fields decode as views into the buffer they were read from.
   */
  reuseBuffer?: boolean;
  chunkBytes?: number;
};

/** An empty outcome for `scanFrames` to fill in. */
export function newOutcome(): ScanOutcome {
  return { size: 0, records: 0, end: 0 };
}

/**
 * Yields every valid frame of the segment at `path`, in order, reading `chunkBytes` at a time;
 * stops at the first bad frame and records why in `outcome.problem`. Throws RecorderError when
 * the file is not a forge segment at all (a foreign or future header), rather than skip it.
 *
 * @example
 * const outcome = newOutcome();
 * for await (const { payload, offset } of scanFrames("data/log/seg-00000001.forge", outcome)) use(payload);
 * if (outcome.problem) console.warn(outcome.problem.reason);
 */
export async function* scanFrames(path: string, outcome: ScanOutcome, options: ScanOptions = {}): AsyncGenerator<Frame> {
  const chunkBytes = options.chunkBytes ?? 1 << 20;
  let handle;
  try {
    handle = await open(path, "r");
  } catch (error) {
    throw ioError("open segment", path, error);
  }
  try {
    const size = (await handle.stat()).size;
    outcome.size = size;
    outcome.records = 0;
    outcome.end = 0;
    if (size === 0) return; // created, never written: an empty segment
    const head = new Uint8Array(Math.min(size, SEGMENT_HEADER_BYTES));
    await readFully(handle, head, 0);
    if (size < SEGMENT_HEADER_BYTES || !isSegmentMagic(head)) {
      if (isHeaderPrefix(head)) {
        outcome.problem = {
          offset: 0,
          kind: size < SEGMENT_HEADER_BYTES ? "incomplete" : "corrupt",
          reason: size < SEGMENT_HEADER_BYTES ? `truncated segment header (${size} of 8 bytes)` : "zeroed segment header",
        };
        return;
      }
      const shown = JSON.stringify(new TextDecoder().decode(head));
      throw new RecorderError("BAD_HEADER", path, `recorder: ${path} is not a forge segment: header ${shown}, expected "FORGESG1" (a file from another program or a newer format; move it out of the log directory)`);
    }
    outcome.end = SEGMENT_HEADER_BYTES;

    let buf = new Uint8Array(0);
    let view = new DataView(buf.buffer);
    let start = 0; // first unconsumed byte in buf
    let filled = 0; // bytes of buf holding data
    let filePos = SEGMENT_HEADER_BYTES; // next file offset to read into buf
    let pos = SEGMENT_HEADER_BYTES; // file offset of buf[start]

    // Makes buf[start, start + n) hold data; the caller has checked the file has it.
    const ensure = async (n: number): Promise<void> => {
      if (filled - start >= n) return;
      const left = filled - start;
      if (options.reuseBuffer && buf.length >= n) {
        buf.copyWithin(0, start, filled);
      } else {
        const next = new Uint8Array(Math.max(chunkBytes, n));
        next.set(buf.subarray(start, filled), 0);
        buf = next;
        view = new DataView(buf.buffer);
      }
      start = 0;
      filled = left;
      while (filled < n) {
        const want = Math.min(buf.length - filled, size - filePos);
        const { bytesRead } = await handle.read(buf, filled, want, filePos);
        if (bytesRead === 0) throw new RecorderError("IO", path, `recorder: ${path} shrank while being read (at offset ${filePos}); was it truncated by another process?`);
        filled += bytesRead;
        filePos += bytesRead;
      }
    };

    while (pos < size) {
      const left = size - pos;
      if (left < FRAME_HEADER_BYTES) {
        outcome.problem = { offset: pos, kind: "incomplete", reason: `short frame header at offset ${pos}: ${left} of 8 bytes` };
        return;
      }
      await ensure(FRAME_HEADER_BYTES);
      const length = view.getUint32(start, true);
      const crc = view.getUint32(start + 4, true);
      if (length === 0 || length > MAX_PAYLOAD_BYTES) {
        outcome.problem = { offset: pos, kind: "corrupt", reason: `bad frame length ${length} at offset ${pos}` };
        return;
      }
      if (left - FRAME_HEADER_BYTES < length) {
        outcome.problem = {
          offset: pos,
          kind: "incomplete",
          reason: `short frame at offset ${pos}: length ${length} but only ${left - FRAME_HEADER_BYTES} bytes follow`,
        };
        return;
      }
      await ensure(FRAME_HEADER_BYTES + length);
      const payload = buf.subarray(start + FRAME_HEADER_BYTES, start + FRAME_HEADER_BYTES + length);
      const actual = crc32c(payload) >>> 0;
      if (actual !== crc) {
        outcome.problem = {
          offset: pos,
          kind: "corrupt",
          reason: `CRC mismatch at offset ${pos} (stored ${hex(crc)}, computed ${hex(actual)})`,
        };
        return;
      }
      const offset = pos;
      start += FRAME_HEADER_BYTES + length;
      pos += FRAME_HEADER_BYTES + length;
      outcome.records += 1;
      outcome.end = pos;
      yield { payload, offset };
    }
  } finally {
    await handle.close();
  }
}

async function readFully(handle: Awaited<ReturnType<typeof open>>, into: Uint8Array, position: number): Promise<void> {
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
