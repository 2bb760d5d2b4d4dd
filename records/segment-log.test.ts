import { afterEach, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { equals } from "@bufbuild/protobuf";
import { create, fromBinary, RecordSchema, toBinary, type Record } from "../schemas/index.ts";
import { RecorderError } from "./errors.ts";
import { openSegmentLog, nodeIo, type WriterIo } from "./segment-log.ts";
import { readRecords } from "./reader.ts";
import { expectedBody, modelCallRecord, recordsOfEveryKind, scratchDir } from "./testing.ts";
import { crc32c } from "@node-rs/crc32";

let scratch = scratchDir();
afterEach(() => {
  scratch.cleanup();
  scratch = scratchDir();
});

async function readAll(dir: string) {
  const out = [];
  for await (const entry of readRecords(dir)) out.push(entry);
  return out;
}

describe("openSegmentLog", () => {
  test("round trip of all four record kinds, frame layout as documented", async () => {
    const log = await openSegmentLog(scratch.dir, { groupCommitMs: 10 });
    const records = recordsOfEveryKind();
    const positions = records.map((record) => log.append(record));
    expect(log.stats()).toMatchObject({ records: 4, segment: "seg-00000001.forge" });
    await log.close();

    const read = await readAll(scratch.dir);
    expect(read.map((r) => r.record.kind.case)).toEqual(["rollout", "modelCall", "blob", "rolloutResult"]);
    for (const [i, entry] of read.entries()) {
      expect(equals(RecordSchema, entry.record, records[i]!)).toBe(true);
      expect(entry).toMatchObject(positions[i]!);
    }

    const bytes = readFileSync(join(scratch.dir, "log", "seg-00000001.forge"));
    expect(bytes.subarray(0, 8).toString()).toBe("FORGESG2");
    const payload = toBinary(RecordSchema, records[0]!);
    expect([...bytes.subarray(8, 12)]).toEqual([0xf5, 0x46, 0x52, 0x4d]); // the sync marker
    expect(bytes.readUInt32LE(12)).toBe(payload.length);
    expect(bytes.readUInt32LE(16)).toBe(crc32c(payload) >>> 0);
    expect(bytes.readUInt32LE(20)).toBe(crc32c(bytes.subarray(8, 20)) >>> 0); // the header's own CRC
    expect(new Uint8Array(bytes.subarray(24, 24 + payload.length))).toEqual(payload);
  });

  test("accepts the log directory itself as well as the data directory", async () => {
    const log = await openSegmentLog(join(scratch.dir, "log"));
    log.append(recordsOfEveryKind()[0]!);
    await log.close();
    expect(readdirSync(join(scratch.dir, "log"))).toEqual(["seg-00000001.forge"]);
    expect(await readAll(join(scratch.dir, "log"))).toHaveLength(1);
    expect(await readAll(scratch.dir)).toHaveLength(1);
  });

  test("rolls to a new segment at segmentMaxBytes; a new writer never appends to an old segment", async () => {
    const log = await openSegmentLog(scratch.dir, { segmentMaxBytes: 4096 });
    for (let i = 1; i <= 40; i++) log.append(modelCallRecord("r", i, `r-${i}`, 500));
    const stats = log.stats();
    await log.close();
    const names = readdirSync(join(scratch.dir, "log")).filter((n) => n.endsWith(".forge")).sort();
    expect(names.length).toBeGreaterThan(5);
    expect(stats.segment).toBe(names[names.length - 1]!);
    for (const name of names.slice(0, -1)) expect(statSync(join(scratch.dir, "log", name)).size).toBeLessThanOrEqual(4096);
    const read = await readAll(scratch.dir);
    expect(read.map((r) => (r.record.kind.value as { callId: string }).callId)).toEqual(Array.from({ length: 40 }, (_, i) => `r-${i + 1}`));

    const sizes = names.map((n) => statSync(join(scratch.dir, "log", n)).size);
    const again = await openSegmentLog(scratch.dir, { segmentMaxBytes: 4096 });
    again.append(modelCallRecord("r", 41, "r-41", 10));
    expect(again.stats().segment).toBe(`seg-${String(names.length + 1).padStart(8, "0")}.forge`);
    await again.close();
    expect(names.map((n) => statSync(join(scratch.dir, "log", n)).size)).toEqual(sizes);
  });

  test("a record larger than a segment gets a segment of its own", async () => {
    const log = await openSegmentLog(scratch.dir, { segmentMaxBytes: 1024 });
    log.append(modelCallRecord("r", 1, "small", 10));
    log.append(modelCallRecord("r", 2, "big", 5000));
    log.append(modelCallRecord("r", 3, "after", 10));
    await log.close();
    const read = await readAll(scratch.dir);
    expect(read.map((r) => r.segment)).toEqual(["seg-00000001.forge", "seg-00000002.forge", "seg-00000003.forge"]);
  });

  test("sync fsyncs what was appended; the group-commit timer fsyncs only when dirty", async () => {
    const log = await openSegmentLog(scratch.dir, { groupCommitMs: 5 });
    await Bun.sleep(30);
    expect(log.stats().fsyncs).toBe(0);
    log.append(recordsOfEveryKind()[1]!);
    await log.sync();
    const afterSync = log.stats().fsyncs;
    expect(afterSync).toBeGreaterThan(0);
    await log.sync(); // nothing new: no fsync
    expect(log.stats().fsyncs).toBe(afterSync);
    log.append(recordsOfEveryKind()[2]!);
    for (let waited = 0; log.stats().fsyncs === afterSync && waited < 2000; waited += 5) await Bun.sleep(5);
    await Bun.sleep(30); // several more ticks, nothing new appended
    expect(log.stats().fsyncs).toBe(afterSync + 1);
    await log.close();
  });

  test("segments rolled while an fsync is in flight are synced and closed, never fsynced after close", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const calls: number[] = [];
    const io: WriterIo = {
      ...nodeIo,
      fdatasync: async (fd) => {
        calls.push(fd);
        await gate;
        return nodeIo.fdatasync(fd);
      },
    };
    const log = await openSegmentLog(scratch.dir, { io, groupCommitMs: 60_000, segmentMaxBytes: 200 });
    log.append(modelCallRecord("r", 1, "a", 100));
    log.append(modelCallRecord("r", 2, "b", 100)); // rolls to segment 2
    const first = log.sync(); // blocks in the fsync of segment 1
    while (calls.length === 0) await Bun.sleep(1);
    log.append(modelCallRecord("r", 3, "c", 100)); // rolls to segment 3 meanwhile
    log.append(modelCallRecord("r", 4, "d", 100)); // and 4
    release();
    await first;
    await log.sync();
    expect(log.stats().segment).toBe("seg-00000004.forge");
    await log.close();
    expect(calls.length).toBeGreaterThanOrEqual(4); // every segment was fsynced (a closed fd would have thrown EBADF)
    expect((await readAll(scratch.dir)).map((r) => r.segment)).toEqual(["seg-00000001.forge", "seg-00000002.forge", "seg-00000003.forge", "seg-00000004.forge"]);
  });

  test("an empty segment is removed at close; append after close and empty records are refused", async () => {
    const log = await openSegmentLog(scratch.dir);
    expect(() => log.append({ $typeName: "forge.v1.Record", kind: { case: undefined } })).toThrow(/empty Record/);
    const bad = { $typeName: "forge.v1.Record", kind: { case: "blob", value: { sha256: 5 } } } as unknown as Parameters<typeof log.append>[0];
    expect(() => log.append(bad)).toThrow(/does not encode as forge.v1.Record/);
    await log.close();
    await log.close();
    expect(readdirSync(join(scratch.dir, "log"))).toEqual([]);
    expect(() => log.append(recordsOfEveryKind()[0]!)).toThrow(RecorderError);
  });

  test("a record bound to a segment is not written into another: the result names the segment to build it for", async () => {
    const log = await openSegmentLog(scratch.dir, { groupCommitMs: 60_000, segmentMaxBytes: 400 });
    const first = log.stats().segment;
    expect(log.append(modelCallRecord("r", 1, "a", 100), { segment: first }).offset).toBeGreaterThan(0);
    expect(log.append(modelCallRecord("r", 2, "b", 10), { segment: "seg-00000099.forge" })).toEqual({ segment: first, offset: -1, bytes: 0 });
    // Would roll: the log starts the next segment, writes nothing, and says so.
    const rolled = log.append(modelCallRecord("r", 3, "c", 300), { segment: first });
    expect(rolled.offset).toBe(-1);
    expect(rolled.segment).not.toBe(first);
    expect(log.stats().segment).toBe(rolled.segment);
    // Built again for the new, empty segment: it always lands there, whatever its size.
    expect(log.append(modelCallRecord("r", 3, "c", 2000), { segment: rolled.segment })).toMatchObject({ segment: rolled.segment, offset: 8 });
    await log.close();
    expect((await readAll(scratch.dir)).map((r) => [r.segment, (r.record.kind.value as { callId: string }).callId])).toEqual([
      [first, "a"],
      [rolled.segment, "c"],
    ]);
  });

  test("groupCommitMs 0 fsyncs inside append", async () => {
    const log = await openSegmentLog(scratch.dir, { groupCommitMs: 0 });
    log.append(recordsOfEveryKind()[0]!);
    expect(log.stats().fsyncs).toBe(1);
    await log.close();
  });
});

describe("append failures", () => {
  // Root ignores permissions and there is no tiny file system here: inject the failing syscall.
  function failingIo(options: { failAfterBytes: number; errno: string; truncateFails?: boolean }): WriterIo & { arm(): void } {
    let armed = false;
    return {
      ...nodeIo,
      arm: () => (armed = true),
      writev(fd, buffers, position) {
        if (!armed) return nodeIo.writev(fd, buffers, position);
        armed = false;
        // Write a prefix, as a disk filling up mid-frame does, then fail on the next call.
        const total = buffers.reduce((n, b) => n + b.length, 0);
        const first = Math.min(options.failAfterBytes, total);
        if (first > 0) {
          const flat = Buffer.concat(buffers).subarray(0, first);
          nodeIo.writev(fd, [flat], position);
          this.writev = (() => {
            this.writev = nodeIo.writev;
            throw Object.assign(new Error(`${options.errno}: injected`), { code: options.errno });
          }) as WriterIo["writev"];
          return first;
        }
        throw Object.assign(new Error(`${options.errno}: injected`), { code: options.errno });
      },
      ftruncate(fd, length) {
        if (options.truncateFails) throw Object.assign(new Error("EIO: injected"), { code: "EIO" });
        nodeIo.ftruncate(fd, length);
      },
    };
  }

  test("ENOSPC mid-frame throws RecorderError, cuts the partial frame, and the log stays usable", async () => {
    const io = failingIo({ failAfterBytes: 20, errno: "ENOSPC" });
    const log = await openSegmentLog(scratch.dir, { io });
    log.append(modelCallRecord("r", 1, "ok-1", 100));
    const sizeBefore = statSync(join(scratch.dir, "log", "seg-00000001.forge")).size;
    io.arm();
    let error: unknown;
    try {
      log.append(modelCallRecord("r", 2, "lost", 100));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RecorderError);
    expect((error as RecorderError).errno).toBe("ENOSPC");
    expect((error as Error).message).toContain("seg-00000001.forge");
    expect((error as Error).message).toContain("no space left");
    expect(statSync(join(scratch.dir, "log", "seg-00000001.forge")).size).toBe(sizeBefore);
    log.append(modelCallRecord("r", 3, "ok-3", 100));
    await log.close();
    const read = await readAll(scratch.dir);
    expect(read.map((r) => (r.record.kind.value as { callId: string }).callId)).toEqual(["ok-1", "ok-3"]);
  });

  test("ENOSPC inside the body of a large (multi-buffer) frame cuts it too", async () => {
    const io = failingIo({ failAfterBytes: 100_000, errno: "ENOSPC" });
    const log = await openSegmentLog(scratch.dir, { io });
    log.append(modelCallRecord("r", 1, "ok-1", 300_000));
    const sizeBefore = statSync(join(scratch.dir, "log", "seg-00000001.forge")).size;
    io.arm();
    expect(() => log.append(modelCallRecord("r", 2, "lost", 300_000))).toThrow(RecorderError);
    expect(statSync(join(scratch.dir, "log", "seg-00000001.forge")).size).toBe(sizeBefore);
    log.append(modelCallRecord("r", 3, "ok-3", 300_000));
    await log.close();
    expect((await readAll(scratch.dir)).map((r) => (r.record.kind.value as { callId: string }).callId)).toEqual(["ok-1", "ok-3"]);
  });

  test("EACCES / EROFS at once give RecorderError with a fix in the message", async () => {
    for (const errno of ["EACCES", "EROFS"]) {
      const io = failingIo({ failAfterBytes: 0, errno });
      const log = await openSegmentLog(scratch.dir, { io });
      io.arm();
      expect(() => log.append(recordsOfEveryKind()[0]!)).toThrow(errno === "EROFS" ? /read-only/ : /permission denied/);
      await log.close();
    }
  });

  test("when the partial frame cannot be cut, later appends are refused and the next open cuts it", async () => {
    const io = failingIo({ failAfterBytes: 30, errno: "ENOSPC", truncateFails: true });
    const log = await openSegmentLog(scratch.dir, { io });
    log.append(modelCallRecord("r", 1, "ok-1", 100));
    io.arm();
    expect(() => log.append(modelCallRecord("r", 2, "lost", 100))).toThrow(RecorderError);
    expect(() => log.append(modelCallRecord("r", 3, "refused", 100))).toThrow(/reopen the log/);
    await log.close().catch(() => {});
    const again = await openSegmentLog(scratch.dir);
    expect(again.recovered).toEqual([expect.objectContaining({ segment: "seg-00000001.forge", keptRecords: 1, cutBytes: 30, truncated: true })]);
    await again.close();
    expect((await readAll(scratch.dir)).length).toBe(1);
  });

  test("a failed fsync fails sync() and every later append", async () => {
    const io: WriterIo = { ...nodeIo, fdatasync: async () => Promise.reject(Object.assign(new Error("EIO"), { code: "EIO" })) };
    const log = await openSegmentLog(scratch.dir, { io, groupCommitMs: 1000 });
    log.append(recordsOfEveryKind()[0]!);
    await expect(log.sync()).rejects.toThrow(/fsync .* failed/);
    expect(() => log.append(recordsOfEveryKind()[0]!)).toThrow(/fsync/);
    await log.close().catch(() => {});
  });

  test("an unusable data directory gives RecorderError naming it", async () => {
    const file = join(scratch.dir, "file");
    await Bun.write(file, "x");
    await expect(openSegmentLog(join(file, "data"))).rejects.toThrow(RecorderError);
    await expect(openSegmentLog(join(file, "data"))).rejects.toThrow(file);
  });
});

describe("records with big bodies (written as several buffers, see encode-record.ts)", () => {
  const bigRecords = (): Record[] => [
    modelCallRecord("r", 1, "small", 100),
    modelCallRecord("r", 2, "big", 400_000),
    create(RecordSchema, { kind: { case: "blob", value: { sha256: "ef".repeat(32), mediaType: "image/png", data: expectedBody("png", 1 << 20) } } }),
    modelCallRecord("r", 3, "after", 100),
  ];

  test("read back equal; the frame header has the payload's length and CRC", async () => {
    const log = await openSegmentLog(scratch.dir);
    const records = bigRecords();
    const positions = records.map((record) => log.append(record));
    await log.close();
    const read = await readAll(scratch.dir);
    expect(read).toHaveLength(records.length);
    for (const [i, entry] of read.entries()) {
      expect(equals(RecordSchema, entry.record, records[i]!)).toBe(true);
      expect(entry).toMatchObject(positions[i]!);
    }
    const bytes = readFileSync(join(scratch.dir, "log", "seg-00000001.forge"));
    const at = positions[2]!.offset;
    const length = bytes.readUInt32LE(at + 4);
    const payload = bytes.subarray(at + 16, at + 16 + length);
    expect(length).toBe(toBinary(RecordSchema, records[2]!).length);
    expect(bytes.readUInt32LE(at + 8)).toBe(crc32c(payload) >>> 0);
    expect(equals(RecordSchema, fromBinary(RecordSchema, payload), records[2]!)).toBe(true);
  });

  test("short writes that stop inside any buffer are continued", async () => {
    let calls = 0;
    const io: WriterIo = {
      ...nodeIo,
      writev(fd, buffers, position) {
        calls += 1;
        const flat = Buffer.concat(buffers);
        return nodeIo.writev(fd, [flat.subarray(0, Math.min(flat.length, 4099))], position);
      },
    };
    const log = await openSegmentLog(scratch.dir, { io });
    const records = bigRecords();
    for (const record of records) log.append(record);
    await log.close();
    expect(calls).toBeGreaterThan(300);
    const read = await readAll(scratch.dir);
    expect(read.every((entry, i) => equals(RecordSchema, entry.record, records[i]!))).toBe(true);
  });

  test("a torn tail inside a big frame is cut on open", async () => {
    const log = await openSegmentLog(scratch.dir);
    const records = bigRecords();
    const positions = records.slice(0, 2).map((record) => log.append(record));
    await log.close();
    const path = join(scratch.dir, "log", "seg-00000001.forge");
    truncateSync(path, positions[1]!.offset + 200_000);
    const again = await openSegmentLog(scratch.dir);
    expect(again.recovered).toEqual([expect.objectContaining({ segment: "seg-00000001.forge", keptRecords: 1, truncated: true })]);
    await again.close();
    expect((await readAll(scratch.dir)).map((r) => (r.record.kind.value as { callId: string }).callId)).toEqual(["small"]);
  });
});
