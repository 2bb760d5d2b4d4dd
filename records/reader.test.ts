import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { readRecords, readSegment, type Corruption } from "./reader.ts";
import { openSegmentLog } from "./segment-log.ts";
import { listSegments, resolveLogDir } from "./segments.ts";
import { expectedBody, modelCallRecord, scratchDir } from "./testing.ts";

let scratch = scratchDir();
afterEach(() => {
  scratch.cleanup();
  scratch = scratchDir();
});

describe("readers", () => {
  test("records larger than the read chunk are read whole; bytes fields survive later chunks", async () => {
    const log = await openSegmentLog(scratch.dir);
    for (let i = 1; i <= 50; i++) log.append(modelCallRecord("r", i, `c-${i}`, 10 + i * 37));
    await log.close();
    const [segment] = await listSegments(scratch.dir);
    const kept = [];
    for await (const entry of readSegment(segment!.path, { chunkBytes: 64 })) kept.push(entry);
    expect(kept).toHaveLength(50);
    // Checked after the whole scan: a reused buffer would have overwritten earlier bodies.
    for (const [i, { record }] of kept.entries()) {
      const call = record.kind.value as { callId: string; requestBody: Uint8Array };
      expect(call.callId).toBe(`c-${i + 1}`);
      expect(call.requestBody).toEqual(expectedBody(`c-${i + 1}`, 10 + (i + 1) * 37));
    }
  });

  test("listSegments orders by counter and accepts the data or the log directory", async () => {
    const log = await openSegmentLog(scratch.dir, { segmentMaxBytes: 600 });
    for (let i = 1; i <= 12; i++) log.append(modelCallRecord("r", i, `c-${i}`, 400));
    await log.close();
    const segments = await listSegments(scratch.dir);
    expect(segments.map((s) => s.number)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(await listSegments(join(scratch.dir, "log"))).toEqual(segments);
    expect(resolveLogDir(scratch.dir)).toBe(join(scratch.dir, "log"));
    expect(await listSegments(join(scratch.dir, "nothing-here"))).toEqual([]);
  });

  test("reading while another process appends: every read is a clean prefix, no corruption", async () => {
    const writer = Bun.spawn(["bun", join(import.meta.dir, "test-writer.ts"), scratch.dir, "1", "8000", "0", "50", String(256 << 10)], {
      stdout: "pipe",
      stderr: "inherit",
    });
    try {
      const out = writer.stdout.getReader();
      await out.read(); // "ready": the writer holds the log
      const problems: Corruption[] = [];
      let last = 0;
      for (let pass = 0; pass < 4; pass++) {
        await Bun.sleep(40);
        let n = 0;
        for await (const { record } of readRecords(scratch.dir, { onCorruption: (c) => problems.push(c) })) {
          n += 1;
          const call = record.kind.value as { callId: string; requestBody: Uint8Array };
          expect(call.callId).toBe(`s0-${n}`);
        }
        expect(n).toBeGreaterThanOrEqual(last);
        last = n;
      }
      expect(last).toBeGreaterThan(0);
      // Incomplete frames at the live tail are expected; damage is not.
      expect(problems.filter((p) => p.kind !== "incomplete")).toEqual([]);
    } finally {
      writer.kill(9);
      await writer.exited;
    }
  });
});
