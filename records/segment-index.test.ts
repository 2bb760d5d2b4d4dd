import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { create, RecordSchema, RolloutResultSchema, RolloutSchema, RolloutStatus, TokenStatus } from "../schemas/index.ts";
import { readRecordsAt } from "./frames-at.ts";
import { readRecords } from "./reader.ts";
import { openSegmentLog } from "./segment-log.ts";
import { createSegmentIndexer, decodeResult, decodeRollout, indexSegmentFile, loadSegmentIndex, segmentIndexDir, writeSegmentIndex } from "./segment-index.ts";
import { modelCallRecord, scratchDir } from "./testing.ts";

let scratch = scratchDir("forge-index-");
afterEach(() => {
  scratch.cleanup();
  scratch = scratchDir("forge-index-");
});

const rolloutRecord = (id: string, policyVersion = 0) => create(RecordSchema, { kind: { case: "rollout", value: create(RolloutSchema, { rolloutId: id, taskId: `t-${id}`, policyVersion }) } });
const resultRecord = (id: string, reward: number) => create(RecordSchema, { kind: { case: "rolloutResult", value: create(RolloutResultSchema, { rolloutId: id, reward, status: RolloutStatus.OK }) } });

/** A log of two rollouts (one finished) written by a writer that notes every append in an indexer. */
async function writeIndexedLog() {
  const log = await openSegmentLog(scratch.dir, { groupCommitMs: 60_000 });
  const indexer = createSegmentIndexer(log.stats().segment);
  const append = (record: ReturnType<typeof rolloutRecord>) => {
    const result = log.append(record);
    indexer.note(record, result.offset, result.bytes);
  };
  append(rolloutRecord("a", 2));
  append(rolloutRecord("b"));
  for (let seq = 1; seq <= 3; seq++) append(modelCallRecord("a", seq, `a${seq}`, 300));
  append(modelCallRecord("b", 1, "b1", 5000));
  append(resultRecord("a", 1));
  const segment = log.stats().segment;
  await log.close();
  return { indexer, segment, path: join(log.dir, segment), logDir: log.dir };
}

describe("segment index", () => {
  test("built from the appends, it is what a scan of the segment builds; summaries and offsets per rollout", async () => {
    const { indexer, path } = await writeIndexedLog();
    const live = indexer.index();
    const scanned = await indexSegmentFile(path);
    expect(scanned).toEqual({ ...live, size: readFileSync(path).length });
    expect(live.size).toBe(readFileSync(path).length);
    expect(Object.keys(live.rollouts)).toEqual(["a", "b"]);
    const a = live.rollouts.a!;
    // The calls were served at policy version 3 (the Rollout record says 2).
    expect({ calls: a.calls, seq: a.seq, policy: a.policy, offsets: a.offsets.length }).toEqual({ calls: 3, seq: 3, policy: 3, offsets: 5 });
    expect(decodeRollout(a.rollout)?.taskId).toBe("t-a");
    expect(decodeResult(a.result)?.reward).toBe(1);
    expect(live.rollouts.b!.result).toBeUndefined();
    expect(a.status).toEqual({ [TokenStatus[TokenStatus.COMPLETE]]: 3 });
    // The offsets are the records' own: reading them by offset gives the rollout's records, in order.
    const all = [];
    for await (const r of readRecords(scratch.dir)) all.push(r);
    const read = [];
    for await (const r of readRecordsAt(path, a.offsets)) read.push(r);
    expect(read.map((r) => r.offset)).toEqual(all.filter((r) => (r.record.kind.value as { rolloutId: string }).rolloutId === "a").map((r) => r.offset));
    expect(read.map((r) => r.record.kind.case)).toEqual(["rollout", "modelCall", "modelCall", "modelCall", "rolloutResult"]);
  });

  test("loaded only while the segment matches it: same size, an intact last frame ending where the index says", async () => {
    const { indexer, segment, path, logDir } = await writeIndexedLog();
    writeSegmentIndex(logDir, indexer.index());
    expect(loadSegmentIndex(logDir, segment)).toEqual(indexer.index());
    const pristine = readFileSync(path);

    // Grown (a writer appended after the index): stale.
    appendFileSync(path, Buffer.alloc(10));
    expect(loadSegmentIndex(logDir, segment)).toBeUndefined();
    // Cut (the tail lost to a machine crash): stale.
    writeFileSync(path, pristine);
    truncateSync(path, pristine.length - 1);
    expect(loadSegmentIndex(logDir, segment)).toBeUndefined();
    // Same size but the last frame's header is not where the index says (bytes replaced): stale.
    const shifted = Buffer.from(pristine);
    shifted[indexer.index().last! + 1]! ^= 0xff;
    writeFileSync(path, shifted);
    expect(loadSegmentIndex(logDir, segment)).toBeUndefined();
    // Back as it was: trusted again.
    writeFileSync(path, pristine);
    expect(loadSegmentIndex(logDir, segment)).toBeDefined();
    // An index file that is not JSON, another format, or another segment's: not used.
    const file = join(segmentIndexDir(logDir), `${segment}.json`);
    writeFileSync(file, "{ half");
    expect(loadSegmentIndex(logDir, segment)).toBeUndefined();
    writeFileSync(file, JSON.stringify({ ...indexer.index(), format: "forge-segment-index/0" }));
    expect(loadSegmentIndex(logDir, segment)).toBeUndefined();
    writeFileSync(file, JSON.stringify({ ...indexer.index(), segment: "seg-00000009.forge" }));
    expect(loadSegmentIndex(logDir, segment)).toBeUndefined();
  });

  test("written atomically: no temporary file left, and an unwritable folder is a clear error", async () => {
    const { indexer, logDir } = await writeIndexedLog();
    writeSegmentIndex(logDir, indexer.index());
    const { readdirSync, chmodSync } = await import("node:fs");
    expect(readdirSync(segmentIndexDir(logDir))).toEqual([`${indexer.segment}.json`]);
    if (process.getuid?.() !== 0) {
      chmodSync(segmentIndexDir(logDir), 0o500);
      try {
        expect(() => writeSegmentIndex(logDir, indexer.index())).toThrow(/write the segment index.*seg-\d+\.forge\.json/);
      } finally {
        chmodSync(segmentIndexDir(logDir), 0o755);
      }
    }
  });

  test("reading by offset checks each frame: a damaged one is an error, or skipped when told", async () => {
    const { indexer, path } = await writeIndexedLog();
    const offsets = indexer.index().rollouts.a!.offsets;
    const bytes = readFileSync(path);
    bytes[offsets[2]! + 16 + 20]! ^= 0x01; // a payload byte of the second call
    writeFileSync(path, bytes);
    const strict = async () => {
      for await (const _ of readRecordsAt(path, offsets)) {
      }
    };
    await expect(strict()).rejects.toThrow(/CRC mismatch at offset \d+.*skipCorrupt/);
    const skipped: number[] = [];
    const read = [];
    for await (const r of readRecordsAt(path, offsets, { onCorruption: (c) => skipped.push(c.offset) })) read.push(r.offset);
    expect(skipped).toEqual([offsets[2]!]);
    expect(read).toEqual(offsets.filter((_, i) => i !== 2));
    // An offset that is no frame start (an index that lies) is damage too, never a misread record.
    const wrong = [];
    for await (const r of readRecordsAt(path, [offsets[0]! + 3], { onCorruption: (c) => wrong.push(c.reason) })) wrong.push(r);
    expect(wrong).toEqual([expect.stringContaining("no intact frame header")]);
  });
});
