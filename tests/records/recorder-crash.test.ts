/**
 * kill -9 of a process in the middle of appending from 32 concurrent streams: every record it
 * reported as appended must be in the log, intact, after the next open; a torn tail, if the kill
 * landed inside a write, is cut and reported; and a new writer can append afterwards.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openSegmentLog, readRecords } from "../../records/index.ts";
import { bodySizeFor, expectedBody, modelCallRecord, scratchDir } from "../../records/testing.ts";

const writerScript = join(import.meta.dir, "..", "..", "records", "test-writer.ts");
const STREAMS = 32;
const BODY_BYTES = 64 * 1024; // frames of 1 byte to 64 KB: many straddle pages, so a kill can land mid-write
const SEGMENT_BYTES = 8 << 20; // small enough that the run rolls segments

async function killMidway(dir: string): Promise<{ appended: string[]; exitCode: number | null; signal: unknown }> {
  const child = Bun.spawn(["bun", writerScript, dir, String(STREAMS), String(BODY_BYTES), "0", "50", String(SEGMENT_BYTES)], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const decoder = new TextDecoder();
  let text = "";
  let lines = 0;
  const reader = child.stdout.getReader();
  const started = Date.now();
  let readyAt = 0;
  // Kill once it has appended a good amount (or after a while on a slow machine).
  while (true) {
    const { value, done } = await reader.read();
    if (done) break;
    const chunk = decoder.decode(value, { stream: true });
    text += chunk;
    lines += chunk.split("\n").length - 1;
    if (!readyAt && text.startsWith("ready")) readyAt = Date.now();
    if (lines > 2500 || (readyAt && Date.now() - readyAt > 1500) || Date.now() - started > 10_000) {
      child.kill("SIGKILL");
      break;
    }
  }
  await child.exited; // reaped: its pid is dead, so its LOCK is stale
  // Drain what was already printed before the kill.
  while (true) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  // Only complete lines are claims; a line cut by the kill is not.
  const complete = text.slice(0, text.lastIndexOf("\n") + 1).split("\n").filter((l) => l.startsWith("s"));
  return { appended: complete, exitCode: child.exitCode, signal: child.signalCode };
}

describe("recorder survives kill -9", () => {
  test("32 streams, SIGKILL mid-way: every appended record is intact, the tail is cut, a new writer appends", async () => {
    const scratch = scratchDir("forge-recorder-crash-");
    try {
      const { appended, signal } = await killMidway(scratch.dir);
      expect(signal).toBe("SIGKILL");
      expect(appended.length).toBeGreaterThan(100);

      const log = await openSegmentLog(scratch.dir, { segmentMaxBytes: SEGMENT_BYTES });
      // A kill inside a write leaves at most one torn frame, at the end of the newest segment.
      expect(log.recovered.length).toBeLessThanOrEqual(1);
      for (const r of log.recovered) {
        expect(r.truncated).toBe(true);
        expect(r.reason).toMatch(/short frame|short frame header/);
      }
      const recoveredSegment = log.recovered[0]?.segment;
      log.append(modelCallRecord("after", 1, "after-1", 100));
      await log.sync();
      await log.close();

      const found = new Map<string, number>();
      const perStream = new Map<string, number>();
      let afterCrash = 0;
      for await (const { record, segment } of readRecords(scratch.dir, { onCorruption: (c) => expect(c).toBeUndefined() })) {
        expect(record.kind.case).toBe("modelCall");
        const call = record.kind.value as { callId: string; rolloutId: string; seq: number; requestBody: Uint8Array };
        if (call.callId === "after-1") {
          afterCrash += 1;
          continue;
        }
        if (recoveredSegment) expect(segment <= recoveredSegment).toBe(true);
        const stream = Number(call.rolloutId.slice(1));
        expect(call.requestBody).toEqual(expectedBody(call.callId, bodySizeFor(stream, call.seq, BODY_BYTES)));
        // Each stream appends in order, so its records in the log are exactly 1..k.
        expect(call.seq).toBe((perStream.get(call.rolloutId) ?? 0) + 1);
        perStream.set(call.rolloutId, call.seq);
        found.set(call.callId, (found.get(call.callId) ?? 0) + 1);
      }
      expect(afterCrash).toBe(1);
      const missing = appended.filter((id) => found.get(id) !== 1);
      expect(missing).toEqual([]);
      expect(perStream.size).toBe(STREAMS);

      const again = await openSegmentLog(scratch.dir);
      expect(again.recovered).toEqual([]);
      await again.close();
    } finally {
      scratch.cleanup();
    }
  }, 30_000);
});
