/**
 * The recorder's append path against plain fs.writeSync of the same frame bytes, in one run:
 * appends/s and MB/s for 2 KB and 200 KB records, group commit (fsync every 50 ms) on.
 * Also: encode+CRC alone (where the difference goes) and the scan rate of open's recovery.
 *
 *   bun bench/recorder.ts [--mb 64] [--json]
 */
import { closeSync, openSync, rmSync, writeSync, mkdtempSync, fsyncSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32c } from "@node-rs/crc32";
import { RecordSchema, toBinary, type Record } from "../schemas/index.ts";
import { openSegmentLog } from "../records/index.ts";
import { modelCallRecord } from "../records/testing.ts";
import { FRAME_HEADER_BYTES, writeFrameHeader } from "../records/frame.ts";

const args = process.argv.slice(2);
const mbIndex = args.indexOf("--mb");
const totalMb = mbIndex >= 0 ? Number(args[mbIndex + 1]) : 64;
const json = args.includes("--json");
const REPEATS = 3;

type Row = { size: string; method: string; appendsPerSec: number; usPerOp: number; mbPerSec: number; ratio: number; bytesPerRecord?: number };

function records(bodyBytes: number): Record[] {
  // 16 distinct records, reused: the bench measures the write path, not record construction.
  return Array.from({ length: 16 }, (_, i) => modelCallRecord("bench", i + 1, `bench-${i}`, bodyBytes));
}

/** The frame the recorder writes for `record` (docs/record-format.md: 16-byte header, then the payload). */
function frameOf(record: Record): Uint8Array {
  const payload = toBinary(RecordSchema, record);
  const frame = Buffer.alloc(FRAME_HEADER_BYTES + payload.length);
  writeFrameHeader(frame, payload.length, crc32c(payload));
  frame.set(payload, FRAME_HEADER_BYTES);
  return frame;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function measure(bodyBytes: number, label: string): Promise<Row[]> {
  const recs = records(bodyBytes);
  const frames = recs.map(frameOf);
  const frameBytes = frames[0]!.length;
  const count = Math.max(200, Math.floor((totalMb * 1e6) / frameBytes));
  const mb = (count * frameBytes) / 1e6;
  const times = { baseline: [] as number[], encode: [] as number[], recorder: [] as number[], scan: [] as number[] };
  let bytesPerRecord = 0; // on disk, frame header included
  for (let r = 0; r < REPEATS; r++) {
    const dir = mkdtempSync(join(tmpdir(), "forge-bench-recorder-"));
    try {
      // Baseline: the same bytes, already framed, written with plain writeSync; one fsync at the end.
      const fd = openSync(join(dir, "plain.bin"), "w");
      let t = performance.now();
      for (let i = 0; i < count; i++) writeSync(fd, frames[i % frames.length]!);
      fsyncSync(fd);
      times.baseline.push(performance.now() - t);
      closeSync(fd);
      rmSync(join(dir, "plain.bin"));

      t = performance.now();
      let sink = 0;
      for (let i = 0; i < count; i++) sink ^= crc32c(toBinary(RecordSchema, recs[i % recs.length]!));
      times.encode.push(performance.now() - t);
      if (sink === 0.5) console.log(sink); // keep the work observable

      const log = await openSegmentLog(dir, { groupCommitMs: 50 });
      t = performance.now();
      for (let i = 0; i < count; i++) {
        log.append(recs[i % recs.length]!);
        // Give the group-commit timer its chance, as the proxy's event loop would.
        if (i % 256 === 255) await new Promise<void>((resolve) => setImmediate(resolve));
      }
      await log.sync();
      times.recorder.push(performance.now() - t);
      const stats = log.stats();
      bytesPerRecord = Math.round((stats.bytesWritten - 8) / stats.records);
      await log.close();

      t = performance.now();
      const reopened = await openSegmentLog(dir);
      times.scan.push(performance.now() - t);
      await reopened.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const row = (method: string, ms: number): Row => ({
    size: label,
    method,
    appendsPerSec: Math.round(count / (ms / 1000)),
    usPerOp: Math.round(((ms * 1000) / count) * 100) / 100,
    mbPerSec: Math.round((mb / (ms / 1000)) * 10) / 10,
    ratio: Math.round((median(times.baseline) / ms) * 100) / 100,
  });
  return [
    row("fs.writeSync (baseline)", median(times.baseline)),
    row("encode + crc32c only", median(times.encode)),
    { ...row("SegmentLog.append, fsync/50ms", median(times.recorder)), bytesPerRecord },
    row("open: recovery scan", median(times.scan)),
  ];
}

const rows = [...(await measure(2 * 1024, "2 KB")), ...(await measure(200 * 1024, "200 KB"))];
if (json) {
  console.log(JSON.stringify(rows, null, 2));
} else {
  console.log(`recorder bench: ~${totalMb} MB per case, median of ${REPEATS}; ratio = baseline time / this time (1 = as fast as plain writeSync)`);
  console.log(`${"size".padEnd(8)}${"method".padEnd(32)}${"ops/s".padStart(12)}${"µs/op".padStart(9)}${"MB/s".padStart(10)}${"ratio".padStart(8)}${"B/record".padStart(10)}`);
  for (const r of rows)
    console.log(
      `${r.size.padEnd(8)}${r.method.padEnd(32)}${String(r.appendsPerSec).padStart(12)}${r.usPerOp.toFixed(2).padStart(9)}${String(r.mbPerSec).padStart(10)}${r.ratio.toFixed(2).padStart(8)}${(r.bytesPerRecord === undefined ? "" : String(r.bytesPerRecord)).padStart(10)}`,
    );
  console.log(`frame header: ${FRAME_HEADER_BYTES} bytes per record`);
}
