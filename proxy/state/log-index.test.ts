import { afterEach, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { openSegmentLog, readRecords, type SegmentLog } from "../../records/index.ts";
import { segmentIndexDir } from "../../records/testing.ts";
import { create, ModelCallSchema, RecordSchema, RolloutResultSchema, RolloutSchema, RolloutStatus, TokenStatus, toJson, type Record } from "../../schemas/index.ts";
import { indexedLog, restoreFromLog } from "./log-index.ts";
import { createRolloutRegistry, type RolloutRegistry } from "./rollouts.ts";

let dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs = [];
});
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "forge-log-index-"));
  dirs.push(dir);
  return dir;
};

const rollout = (id: string) => create(RecordSchema, { kind: { case: "rollout", value: create(RolloutSchema, { rolloutId: id, taskId: "t", keySha256: `sha-${id}`, policyVersion: 1 }) } });
const result = (id: string) => create(RecordSchema, { kind: { case: "rolloutResult", value: create(RolloutResultSchema, { rolloutId: id, reward: 1, status: RolloutStatus.OK }) } });
/** Call `seq` of a rollout whose prompts grow by extending the previous call (prompt deltas). */
const call = (id: string, seq: number) =>
  create(RecordSchema, {
    kind: {
      case: "modelCall",
      value: create(ModelCallSchema, {
        rolloutId: id,
        seq,
        callId: `${id}-${seq}`,
        prefixOf: seq > 1 ? `${id}-${seq - 1}` : "",
        prefixLen: seq > 1 ? 2 * (seq - 1) : 0,
        promptTokenIds: seq > 1 ? [100 + seq] : [1],
        promptLen: 2 * seq - 1,
        completionTokenIds: [200 + seq],
        tokenStatus: seq === 2 ? TokenStatus.PARTIAL : TokenStatus.COMPLETE,
        policyVersion: seq,
        requestBody: new Uint8Array(120).fill(seq),
      }),
    },
  });

/** A proxy's state, compared across restores: every rollout's record, result, counters and token history. */
function snapshot(registry: RolloutRegistry, ids: string[]) {
  return {
    policy: registry.maxPolicyVersion(),
    rollouts: ids.map((id) => {
      const s = registry.get(id);
      if (!s) return { id, missing: true };
      return { id, rollout: toJson(RolloutSchema, s.rollout), result: s.result ? toJson(RolloutResultSchema, s.result) : null, seq: s.seq, calls: s.calls, counts: s.tokenStatusCounts, recent: s.recent };
    }),
  };
}

/** What a start did before the indexes: every record of the log replayed in order. */
async function replayWholeLog(dir: string): Promise<RolloutRegistry> {
  const registry = createRolloutRegistry();
  for await (const { record } of readRecords(dir)) {
    const kind = record.kind;
    if (kind.case === "rollout") registry.add(kind.value);
    else if (kind.case === "modelCall") registry.replayCall(kind.value);
    else if (kind.case === "rolloutResult") {
      const state = registry.get(kind.value.rolloutId);
      if (state) {
        state.result = kind.value;
        registry.forgetHistory(state);
      }
    }
  }
  return registry;
}

async function restore(dir: string, segmentMaxBytes?: number) {
  const registry = createRolloutRegistry();
  const restored = await restoreFromLog(dir, (verified) => openSegmentLog(dir, { groupCommitMs: 60_000, verified, ...(segmentMaxBytes ? { segmentMaxBytes } : {}) }), registry);
  return { ...restored, registry, writer: indexedLog(restored.log, restored.index) };
}

async function close(r: { writer: SegmentLog; index: { seal(): void }; integrity: Promise<unknown>; stopIntegrityCheck(): void }) {
  r.stopIntegrityCheck();
  await r.integrity;
  await r.writer.close();
  r.index.seal();
}

/**
 * Three writer lives: finished and open rollouts spread over several segments. With `crashedCopy`,
 * the last life's log is copied while it is still being written (no index sealed for its
 * segment, its LOCK left behind as a killed writer leaves it) and that copy is what the test uses.
 */
async function history(dir: string, crashedCopy?: string) {
  const ids = ["done-early", "open-long", "done-late", "open-new"];
  let r = await restore(dir, 900);
  const write = (record: Record) => r.writer.append(record);
  write(rollout("done-early"));
  write(rollout("open-long"));
  for (let seq = 1; seq <= 3; seq++) write(call("done-early", seq));
  write(result("done-early"));
  for (let seq = 1; seq <= 4; seq++) write(call("open-long", seq));
  await close(r);
  r = await restore(dir, 900);
  write(rollout("done-late"));
  write(call("open-long", 5));
  write(call("done-late", 1));
  write(result("done-late"));
  await close(r);
  r = await restore(dir, 900);
  write(rollout("open-new"));
  write(call("open-new", 1));
  write(call("open-long", 6));
  if (crashedCopy) {
    cpSync(dir, crashedCopy, { recursive: true });
    // A LOCK naming a process that is gone (pid 2^22 - 1 is above any pid_max in use).
    writeFileSync(join(crashedCopy, "log", "LOCK"), `4194303\n${hostname()}\n`);
  }
  await close(r);
  return ids;
}

describe("restoring the proxy's state from the segment indexes", () => {
  test("the same state as reading the whole log: finished rollouts from their summaries, open ones with their token history", async () => {
    const dir = scratch();
    const ids = await history(dir);
    const logDir = join(dir, "log");
    const segments = readdirSync(logDir).filter((n) => n.endsWith(".forge"));
    expect(segments.length).toBeGreaterThan(3); // rolled within lives (900-byte segments) and across them
    // Every closed segment has its index, written at its roll or at the close.
    expect(readdirSync(segmentIndexDir(logDir)).sort()).toEqual(segments.map((s) => `${s}.json`).sort());

    const fast = await restore(dir);
    expect(fast.restored).toMatchObject({ rollouts: 4, calls: 3 + 6 + 1 + 1, indexed: segments.length, scanned: 0, open: 2 });
    const indexedState = snapshot(fast.registry, ids);
    await close(fast);
    expect(indexedState).toEqual(snapshot(await replayWholeLog(dir), ids));

    rmSync(segmentIndexDir(logDir), { recursive: true });
    const slow = await restore(dir);
    expect(slow.restored).toMatchObject({ indexed: 0, scanned: segments.length });
    expect(snapshot(slow.registry, ids)).toEqual(indexedState);
    await close(slow);
    // The open rollouts' history is what their next prompt delta needs: their last calls' full tokens.
    const open = indexedState.rollouts.find((r) => r.id === "open-long") as unknown as { recent: { callId: string; tokens: Uint32Array }[]; seq: number; calls: number };
    expect({ seq: open.seq, calls: open.calls }).toEqual({ seq: 6, calls: 6 });
    expect(open.recent.at(-1)).toEqual({ callId: "open-long-6", tokens: Uint32Array.from([1, 201, 102, 202, 103, 203, 104, 204, 105, 205, 106, 206]) });
    expect(indexedState.policy).toBe(6);
  });

  test("after a writer that did not close: its last segment is scanned once and indexed; nothing is lost", async () => {
    const dir = scratch();
    const ids = await history(scratch(), dir);
    const logDir = join(dir, "log");
    const first = await restore(dir);
    expect(first.restored.scanned).toBe(1);
    const state = snapshot(first.registry, ids);
    expect(state.rollouts.find((r) => r.id === "open-new")).toMatchObject({ seq: 1, calls: 1 });
    await close(first);
    const second = await restore(dir);
    expect(second.restored.scanned).toBe(0);
    expect(snapshot(second.registry, ids)).toEqual(state);
    await close(second);
    // Every record is still in the log, once.
    let records = 0;
    for await (const _ of readRecords(logDir)) records++;
    expect(records).toBe(4 + 11 + 2);
  });

  test("a stale index (its segment's tail lost in a machine crash) or an unreadable one is rebuilt from the segment", async () => {
    const dir = scratch();
    const ids = await history(dir);
    const logDir = join(dir, "log");
    const segments = readdirSync(logDir).filter((n) => n.endsWith(".forge")).sort();
    const reference = await restore(dir);
    const state = snapshot(reference.registry, ids);
    await close(reference);
    // The index of one segment is garbage, and the last segment lost its last frame (not fsynced).
    writeFileSync(join(segmentIndexDir(logDir), `${segments[0]}.json`), "not json");
    const last = join(logDir, segments.at(-1)!);
    const lastIndex = JSON.parse(readFileSync(join(segmentIndexDir(logDir), `${segments.at(-1)}.json`), "utf8"));
    truncateSync(last, lastIndex.last);
    const after = await restore(dir);
    expect(after.restored).toMatchObject({ scanned: 2 });
    // The lost frame is lost; everything else is as before.
    const lost = snapshot(after.registry, ids);
    const changed = lost.rollouts.filter((r, i) => JSON.stringify(r) !== JSON.stringify(state.rollouts[i]));
    expect(changed.length).toBeLessThanOrEqual(1);
    await close(after);
  });

  test("the rollout's records by offset, across segments and lives, and nobody else's", async () => {
    const dir = scratch();
    await history(dir);
    const r = await restore(dir);
    r.writer.append(call("open-long", 7));
    const read = [];
    for await (const { record } of r.index.recordsOf("open-long")) read.push(record.kind.case === "modelCall" ? record.kind.value.seq : record.kind.case);
    expect(read).toEqual(["rollout", 1, 2, 3, 4, 5, 6, 7]);
    const all = [];
    for await (const { record } of readRecords(dir)) if ((record.kind.value as { rolloutId?: string }).rolloutId === "open-long") all.push(record.kind.case === "modelCall" ? record.kind.value.seq : record.kind.case);
    expect(read).toEqual(all);
    await close(r);
  });
});
