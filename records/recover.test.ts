import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RecorderError } from "./errors.ts";
import { readRecords, type Corruption } from "./reader.ts";
import { openSegmentLog } from "./segment-log.ts";
import { modelCallRecord, scratchDir } from "./testing.ts";

let scratch = scratchDir();
afterEach(() => {
  scratch.cleanup();
  scratch = scratchDir();
});

const seg = (n: number) => join(scratch.dir, "log", `seg-${String(n).padStart(8, "0")}.forge`);

/** Writes `count` records into segment 1 and returns the offset where each frame starts. */
async function writeSegment(count: number, options: { segmentMaxBytes?: number } = {}): Promise<number[]> {
  const log = await openSegmentLog(scratch.dir, options);
  const offsets = [];
  for (let i = 1; i <= count; i++) offsets.push(log.append(modelCallRecord("r", i, `c-${i}`, 100 + i)).offset);
  await log.close();
  return offsets;
}

async function callIds(options: { onCorruption?: (c: Corruption) => void } = {}): Promise<string[]> {
  const ids = [];
  for await (const { record } of readRecords(scratch.dir, options)) ids.push((record.kind.value as { callId: string }).callId);
  return ids;
}

describe("torn tails on the last segment are cut and reported", () => {
  const cases: [string, (offsets: number[], size: number) => void, RegExp][] = [
    ["cut frame header (inside the length)", (o) => truncateSync(seg(1), o[4]! + 2), /short frame header at offset \d+: 2 of 8/],
    ["cut frame header (inside the crc)", (o) => truncateSync(seg(1), o[4]! + 6), /short frame header/],
    ["cut payload", (o) => truncateSync(seg(1), o[4]! + 8 + 10), /short frame at offset \d+: length \d+ but only 10 bytes follow/],
    [
      "flipped CRC byte",
      (o) => {
        const bytes = readFileSync(seg(1));
        bytes[o[4]! + 5]! ^= 0xff;
        writeFileSync(seg(1), bytes);
      },
      /CRC mismatch at offset \d+/,
    ],
    [
      "flipped payload byte",
      (o, size) => {
        const bytes = readFileSync(seg(1));
        bytes[size - 3]! ^= 0x01;
        writeFileSync(seg(1), bytes);
      },
      /CRC mismatch/,
    ],
    ["garbage appended", () => appendFileSync(seg(1), Buffer.from("this is not a frame, just text that got appended")), /frame length|short frame/],
    ["zeros appended (power loss on some file systems)", () => appendFileSync(seg(1), Buffer.alloc(4096)), /bad frame length 0/],
  ];

  for (const [name, damage, reason] of cases) {
    test(name, async () => {
      const offsets = await writeSegment(5);
      const size = statSync(seg(1)).size;
      damage(offsets, size);
      const damagedSize = statSync(seg(1)).size;
      const kept = name === "garbage appended" || name.startsWith("zeros") ? 5 : 4;

      const log = await openSegmentLog(scratch.dir);
      expect(log.recovered).toHaveLength(1);
      const [report] = log.recovered;
      expect(report).toMatchObject({ segment: "seg-00000001.forge", keptRecords: kept, truncated: true });
      expect(report!.reason).toMatch(reason);
      const end = kept === 5 ? size : offsets[4]!;
      expect(report!.cutBytes).toBe(damagedSize - end);
      expect(statSync(seg(1)).size).toBe(end);
      log.append(modelCallRecord("r", 6, "c-6", 10));
      expect(log.stats().segment).toBe("seg-00000002.forge");
      await log.close();

      const expected = Array.from({ length: kept }, (_, i) => `c-${i + 1}`);
      expect(await callIds()).toEqual([...expected, "c-6"]);
      // Cut once: the next open finds nothing to report.
      const again = await openSegmentLog(scratch.dir);
      expect(again.recovered).toEqual([]);
      await again.close();
    });
  }

  test("a segment cut inside its own header is reset to empty", async () => {
    await writeSegment(2);
    truncateSync(seg(1), 5);
    const log = await openSegmentLog(scratch.dir);
    expect(log.recovered).toEqual([{ segment: "seg-00000001.forge", keptRecords: 0, cutBytes: 5, reason: "truncated segment header (5 of 8 bytes)", truncated: true }]);
    expect(statSync(seg(1)).size).toBe(0);
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

describe("corruption in an older segment", () => {
  test("is reported and left in place; later segments are read in full", async () => {
    const offsets = await writeSegment(30, { segmentMaxBytes: 1500 });
    // Segment 1 holds the first few records; damage its second frame.
    const first = offsets.filter((_, i) => i < 30);
    const bytes = readFileSync(seg(1));
    const second = first[1]!;
    bytes[second + 8 + 3]! ^= 0x40;
    writeFileSync(seg(1), bytes);
    const sizeBefore = statSync(seg(1)).size;

    const log = await openSegmentLog(scratch.dir, { segmentMaxBytes: 1500 });
    expect(log.recovered).toHaveLength(1);
    expect(log.recovered[0]).toMatchObject({ segment: "seg-00000001.forge", keptRecords: 1, truncated: false });
    expect(log.recovered[0]!.reason).toMatch(/CRC mismatch at offset/);
    await log.close();
    expect(statSync(seg(1)).size).toBe(sizeBefore);

    const seen: Corruption[] = [];
    const ids = await callIds({ onCorruption: (c) => seen.push(c) });
    expect(seen).toEqual([expect.objectContaining({ segment: "seg-00000001.forge", kind: "corrupt", offset: second })]);
    expect(ids[0]).toBe("c-1");
    expect(ids.at(-1)).toBe("c-30");
    const inFirst = offsets.length - ids.length + 1; // records of segment 1 that were skipped, plus the kept one
    expect(inFirst).toBeGreaterThan(1);
    expect(ids.length).toBeLessThan(30);
  });

  test("readers warn on stderr by default, but not for an in-progress frame of the newest segment", async () => {
    const offsets = await writeSegment(3);
    truncateSync(seg(1), offsets[2]! + 9);
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (...parts: unknown[]) => void warnings.push(parts.join(" "));
    try {
      expect(await callIds()).toEqual(["c-1", "c-2"]);
      expect(warnings).toEqual([]);
      const bytes = readFileSync(seg(1));
      bytes[offsets[1]! + 12]! ^= 1;
      writeFileSync(seg(1), bytes);
      expect(await callIds()).toEqual(["c-1"]);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain("CRC mismatch");
    } finally {
      console.warn = warn;
    }
  });

  test("an intact frame that is not a Record is an error, not silent damage", async () => {
    const { crc32c } = await import("@node-rs/crc32");
    await writeSegment(1);
    const payload = Buffer.from([0x0a, 0xff]); // field 1, length-delimited, length runs off the end
    const header = Buffer.alloc(8);
    header.writeUInt32LE(payload.length, 0);
    header.writeUInt32LE(crc32c(payload) >>> 0, 4);
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
