import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readFileSync, readdirSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { crc32c } from "@node-rs/crc32";
import { RecordSchema, toBinary } from "../schemas/index.ts";
import { RecorderError } from "./errors.ts";
import { FRAME_HEADER_BYTES, writeFrameHeader } from "./frame.ts";
import { readRecords, type Corruption, type ReadOptions } from "./reader.ts";
import { openSegmentLog } from "./segment-log.ts";
import { modelCallRecord, scratchDir } from "./testing.ts";

let scratch = scratchDir();
afterEach(() => {
  scratch.cleanup();
  scratch = scratchDir();
});

const seg = (n: number) => join(scratch.dir, "log", `seg-${String(n).padStart(8, "0")}.forge`);
const quarantine = () => join(scratch.dir, "log", "quarantine");

/** Writes `count` records into segment 1 (and on, past segmentMaxBytes) and returns where each frame starts. */
async function writeSegment(count: number, options: { segmentMaxBytes?: number } = {}): Promise<{ segment: string; offset: number }[]> {
  const log = await openSegmentLog(scratch.dir, options);
  const at = [];
  for (let i = 1; i <= count; i++) at.push(log.append(modelCallRecord("r", i, `c-${i}`, 100 + i)));
  await log.close();
  return at;
}

async function callIds(options: ReadOptions = {}): Promise<string[]> {
  const ids = [];
  for await (const { record } of readRecords(scratch.dir, options)) ids.push((record.kind.value as { callId: string }).callId);
  return ids;
}

function flip(path: string, offset: number, mask = 0x01): void {
  const bytes = readFileSync(path);
  bytes[offset]! ^= mask;
  writeFileSync(path, bytes);
}

const ids = (...n: number[]) => n.map((i) => `c-${i}`);

describe("a torn final frame of the last segment is quarantined, then cut", () => {
  const cases: [string, (o: number[], size: number) => void, RegExp, number][] = [
    ["cut frame header (inside the length)", (o) => truncateSync(seg(1), o[4]! + 6), /short frame header at offset \d+: 6 of 16/, 4],
    ["cut frame header (inside the header CRC)", (o) => truncateSync(seg(1), o[4]! + 14), /short frame header/, 4],
    ["cut payload", (o) => truncateSync(seg(1), o[4]! + FRAME_HEADER_BYTES + 10), /short frame at offset \d+: length \d+ but only 10 bytes follow/, 4],
    ["flipped payload-CRC byte of the last frame", (o) => flip(seg(1), o[4]! + 9, 0xff), /damaged frame header at offset \d+; no intact frame follows/, 4],
    ["flipped payload byte of the last frame", (_, size) => flip(seg(1), size - 3), /CRC mismatch at offset \d+/, 4],
    ["garbage appended", () => appendFileSync(seg(1), Buffer.from("this is not a frame, just text that got appended")), /no intact frame follows/, 5],
    ["zeros appended (power loss on some file systems)", () => appendFileSync(seg(1), Buffer.alloc(4096)), /no intact frame follows/, 5],
  ];

  for (const [name, damage, reason, kept] of cases) {
    test(name, async () => {
      const offsets = (await writeSegment(5)).map((p) => p.offset);
      const size = statSync(seg(1)).size;
      damage(offsets, size);
      const damaged = readFileSync(seg(1));
      const end = kept === 5 ? size : offsets[4]!;

      const log = await openSegmentLog(scratch.dir);
      expect(log.recovered).toHaveLength(1);
      const [report] = log.recovered;
      expect(report).toMatchObject({ segment: "seg-00000001.forge", offset: end, keptRecords: kept, truncated: true, cutBytes: damaged.length - end });
      expect(report!.reason).toMatch(reason);
      expect(statSync(seg(1)).size).toBe(end);
      // The cut bytes are kept aside, byte for byte, and listed.
      expect(readFileSync(report!.quarantine)).toEqual(damaged.subarray(end));
      const index = readFileSync(join(quarantine(), "index.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
      expect(index).toEqual([expect.objectContaining({ segment: "seg-00000001.forge", offset: end, bytes: damaged.length - end, cut: true })]);
      log.append(modelCallRecord("r", 6, "c-6", 10));
      expect(log.stats().segment).toBe("seg-00000002.forge");
      await log.close();

      expect(await callIds()).toEqual([...ids(...Array.from({ length: kept }, (_, i) => i + 1)), "c-6"]);
      // Cut once: the next open finds nothing to report.
      const again = await openSegmentLog(scratch.dir);
      expect(again.recovered).toEqual([]);
      await again.close();
    });
  }

  test("a segment cut inside its own header is reset to empty (its bytes quarantined)", async () => {
    await writeSegment(2);
    truncateSync(seg(1), 5);
    const log = await openSegmentLog(scratch.dir);
    expect(log.recovered).toEqual([
      expect.objectContaining({ segment: "seg-00000001.forge", offset: 0, bytes: 5, keptRecords: 0, cutBytes: 5, reason: "truncated segment header (5 of 8 bytes)", truncated: true }),
    ]);
    expect(statSync(seg(1)).size).toBe(0);
    expect(readFileSync(log.recovered[0]!.quarantine).toString()).toBe("FORGE");
    await log.close();
    expect(await callIds()).toEqual([]);
  });

  test("a file that is not a segment is refused, not cut", async () => {
    await writeSegment(1);
    writeFileSync(seg(2), "PARQUET1 and more");
    await expect(openSegmentLog(scratch.dir)).rejects.toThrow(/is not a forge segment: header "PARQUET1"/);
    expect(readFileSync(seg(2), "utf8")).toBe("PARQUET1 and more");
    // The LOCK was released on the failed open.
    writeFileSync(seg(2), "");
    const log = await openSegmentLog(scratch.dir);
    await log.close();
  });
});

describe("damage before the end loses only the damaged frame", () => {
  test("newest segment, flipped payload byte: the restart keeps every other record and cuts nothing", async () => {
    const at = await writeSegment(5);
    flip(seg(1), at[1]!.offset + FRAME_HEADER_BYTES + 20);
    const size = statSync(seg(1)).size;
    const log = await openSegmentLog(scratch.dir);
    expect(log.recovered).toEqual([
      expect.objectContaining({ segment: "seg-00000001.forge", offset: at[1]!.offset, bytes: at[2]!.offset - at[1]!.offset, keptRecords: 4, cutBytes: 0, truncated: false }),
    ]);
    expect(statSync(seg(1)).size).toBe(size);
    expect(readFileSync(log.recovered[0]!.quarantine)).toEqual(readFileSync(seg(1)).subarray(at[1]!.offset, at[2]!.offset));
    log.append(modelCallRecord("r", 6, "c-6", 10));
    await log.close();
    expect(await callIds({ onCorruption: () => {} })).toEqual(ids(1, 3, 4, 5, 6));
    // Quarantined once: a second open reports the damage again but copies nothing new.
    const again = await openSegmentLog(scratch.dir);
    expect(again.recovered).toHaveLength(1);
    await again.close();
    expect(readdirSync(quarantine()).sort()).toEqual(["index.jsonl", `seg-00000001.forge.at-${at[1]!.offset}.len-${at[2]!.offset - at[1]!.offset}`]);
  });

  for (const [part, delta] of [["sync marker", 1], ["length", 5], ["payload CRC", 9], ["header CRC", 13]] as const) {
    test(`flipped byte in a frame header (${part}): the reader resyncs on the next frame`, async () => {
      const at = await writeSegment(6);
      flip(seg(1), at[2]!.offset + delta, 0x80);
      const seen: Corruption[] = [];
      expect(await callIds({ onCorruption: (c) => seen.push(c) })).toEqual(ids(1, 2, 4, 5, 6));
      expect(seen).toEqual([expect.objectContaining({ segment: "seg-00000001.forge", kind: "corrupt", offset: at[2]!.offset, length: at[3]!.offset - at[2]!.offset, tail: false })]);
      const log = await openSegmentLog(scratch.dir);
      expect(log.recovered.map((r) => r.truncated)).toEqual([false]);
      await log.close();
      expect(await callIds({ skipCorrupt: true })).toEqual(ids(1, 2, 4, 5, 6));
    });
  }

  test("an older segment: the records after the damage in the same segment are read", async () => {
    const at = await writeSegment(30, { segmentMaxBytes: 2000 });
    const inFirst = at.filter((p) => p.segment === "seg-00000001.forge");
    expect(inFirst.length).toBeGreaterThan(3);
    flip(seg(1), inFirst[1]!.offset + FRAME_HEADER_BYTES + 3, 0x40);
    const before = readFileSync(seg(1));
    const log = await openSegmentLog(scratch.dir, { segmentMaxBytes: 2000 });
    expect(log.recovered).toEqual([expect.objectContaining({ segment: "seg-00000001.forge", keptRecords: inFirst.length - 1, truncated: false })]);
    expect(log.recovered[0]!.reason).toMatch(/CRC mismatch at offset/);
    await log.close();
    expect(readFileSync(seg(1))).toEqual(before);
    const expected = ids(...Array.from({ length: 30 }, (_, i) => i + 1).filter((i) => i !== 2));
    expect(await callIds({ skipCorrupt: true })).toEqual(expected);
  });

  test("one flipped byte in 800 records loses one record, wherever it lands", async () => {
    const at = await writeSegment(800, { segmentMaxBytes: 64 * 1024 });
    const bytes = readFileSync(seg(3));
    // Every byte position of one frame of segment 3, in turn (sampled: every 7th).
    const frames = at.filter((p) => p.segment === "seg-00000003.forge");
    const start = frames[4]!.offset;
    const end = frames[5]!.offset;
    for (let offset = start; offset < end; offset += 7) {
      const damaged = Buffer.from(bytes);
      damaged[offset]! ^= 0x10;
      writeFileSync(seg(3), damaged);
      let corrupt = 0;
      const read = await callIds({ onCorruption: () => corrupt++ });
      expect({ offset, records: read.length, corrupt }).toEqual({ offset, records: 799, corrupt: 1 });
    }
  });
});

describe("readers on damage", () => {
  test("refuse by default, naming the segment, the offset and --skip-corrupt; skipCorrupt warns and goes on", async () => {
    const at = await writeSegment(4);
    // Damage in the newest segment that is not its tail: an error, not a writer's append in progress.
    flip(seg(1), at[1]!.offset + FRAME_HEADER_BYTES + 2);
    let error: unknown;
    try {
      await callIds();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RecorderError);
    expect((error as RecorderError).code).toBe("CORRUPT");
    expect((error as Error).message).toMatch(new RegExp(`seg-00000001\\.forge: CRC mismatch at offset ${at[1]!.offset}.*--skip-corrupt`));
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (...parts: unknown[]) => void warnings.push(parts.join(" "));
    try {
      expect(await callIds({ skipCorrupt: true })).toEqual(ids(1, 3, 4));
    } finally {
      console.warn = warn;
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/CRC mismatch.*skipped/);
  });

  test("an in-progress frame at the end of the newest segment is not damage", async () => {
    const at = await writeSegment(3);
    truncateSync(seg(1), at[2]!.offset + 20);
    expect(await callIds()).toEqual(ids(1, 2));
  });

  test("an intact frame that is not a Record is an error, not silent damage", async () => {
    await writeSegment(1);
    const payload = Buffer.from([0x0a, 0xff]); // field 1, length-delimited, length runs off the end
    const header = Buffer.alloc(FRAME_HEADER_BYTES);
    writeFrameHeader(header, payload.length, crc32c(payload));
    appendFileSync(seg(1), Buffer.concat([header, payload]));
    let error: unknown;
    try {
      await callIds();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RecorderError);
    expect((error as Error).message).toMatch(/does not decode as forge.v1.Record/);
  });
});

describe("version 1 segments (FORGESG1, written before the sync marker) are still read", () => {
  /** A FORGESG1 segment of the given records: u32 length | u32 crc32c | payload per frame. */
  function v1Segment(n: number): { bytes: Buffer; offsets: number[] } {
    const parts: Buffer[] = [Buffer.from("FORGESG1")];
    const offsets = [];
    let at = 8;
    for (let i = 1; i <= n; i++) {
      const payload = Buffer.from(toBinary(RecordSchema, modelCallRecord("old", i, `old-${i}`, 50 + i)));
      const header = Buffer.alloc(8);
      header.writeUInt32LE(payload.length, 0);
      header.writeUInt32LE(crc32c(payload) >>> 0, 4);
      parts.push(header, payload);
      offsets.push(at);
      at += 8 + payload.length;
    }
    return { bytes: Buffer.concat(parts), offsets };
  }

  test("a v1 log reads, and a new writer continues it with v2 segments", async () => {
    const { bytes } = v1Segment(3);
    const log0 = await openSegmentLog(scratch.dir);
    await log0.close(); // creates DIR/log
    writeFileSync(seg(1), bytes);
    const log = await openSegmentLog(scratch.dir);
    expect(log.recovered).toEqual([]);
    log.append(modelCallRecord("new", 1, "new-1", 10));
    await log.close();
    expect(readFileSync(seg(2)).subarray(0, 8).toString()).toBe("FORGESG2");
    expect(await callIds()).toEqual(["old-1", "old-2", "old-3", "new-1"]);
  });

  test("damage in a v1 segment: the rest of that segment cannot be resynchronised (no sync marker); a torn v1 tail is quarantined and cut", async () => {
    const { bytes, offsets } = v1Segment(4);
    const log0 = await openSegmentLog(scratch.dir);
    await log0.close();
    const damaged = Buffer.from(bytes);
    damaged[offsets[1]! + 8 + 4]! ^= 1;
    writeFileSync(seg(1), damaged);
    const seen: Corruption[] = [];
    expect(await callIds({ onCorruption: (c) => seen.push(c) })).toEqual(["old-1"]);
    expect(seen).toEqual([expect.objectContaining({ offset: offsets[1], length: bytes.length - offsets[1]!, tail: true })]);
    // As the newest segment it is cut on open, and the cut bytes are kept in quarantine.
    const log = await openSegmentLog(scratch.dir);
    expect(log.recovered).toEqual([expect.objectContaining({ offset: offsets[1], truncated: true, cutBytes: bytes.length - offsets[1]! })]);
    expect(existsSync(log.recovered[0]!.quarantine)).toBe(true);
    expect(readFileSync(log.recovered[0]!.quarantine)).toEqual(damaged.subarray(offsets[1]!));
    await log.close();
  });
});
