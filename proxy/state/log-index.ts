/**
 * The proxy's state from its log in O(open rollouts), through the segment indexes beside it
 * (records/segment-index.ts; docs/proxy.md, "Restart"):
 *
 * 1. every closed segment whose index still matches it is taken from its index: its recovery
 *    scan is skipped, and its rollouts come back from their summaries (Rollout, result, call
 *    count, highest seq, token statuses);
 * 2. segments without a valid index (the one a crashed writer was writing, an index lost or
 *    stale) are scanned once after the log's recovery and their index is written;
 * 3. rollouts that have no result yet get their token history (what their next prompt delta is
 *    taken against) rebuilt from their calls' token fields, read by offset when that next call
 *    comes: a restart does not wait for it; in token-in mode their chains likewise, from their
 *    calls read back whole at their first token-in call (proxy/token-in/restore.ts).
 *
 * While serving, each appended record is noted; a segment's index is written when the log moves
 * past it and when the proxy closes. The same index gives the trajectory route one rollout's
 * frames without reading the rest of the log.
 */
import {
  createSegmentIndexer,
  decodeResult,
  describeCorruption,
  decodeRollout,
  indexSegmentFile,
  listSegments,
  loadSegmentIndex,
  readCallTokensAt,
  readRecordsAt,
  recordRolloutId,
  resolveLogDir,
  writeSegmentIndex,
  type AppendResult,
  type LoggedRecord,
  type ReadOptions,
  type SegmentIndex,
  type SegmentIndexer,
  type SegmentLog,
  type Recovered,
  verifySegments,
} from "../../records/index.ts";
import type { ModelCall, Record } from "../../schemas/index.ts";
import type { RolloutRegistry } from "./rollouts.ts";
import type { RecordedCalls } from "./chains.ts";
import { historyOf } from "./history.ts";

/** A rollout's frames in one segment. */
type Frames = { segment: string; offsets: number[] };

export interface LogIndex {
  /** Notes a record the log just took (`result` is what `append` returned). */
  note(record: Record, result: AppendResult): void;
  /** The rollout's records, in log order, read by offset. */
  recordsOf(rolloutId: string, options?: ReadOptions): AsyncGenerator<LoggedRecord>;
  /** Writes the index of the segment being written (call once the log is closed). */
  seal(): void;
}

export type RestoredLog = {
  log: SegmentLog;
  index: LogIndex;
  /**
   * The recovery check of the segments the open skipped (their index vouched for them), run
   * after the start: damage found since the index was written is quarantined and reported here
   * (and counted into `restored.damaged`), as an open would have. `stopIntegrityCheck` ends it
   * at the next segment.
   */
  integrity: Promise<Recovered[]>;
  stopIntegrityCheck(): void;
  restored: {
    rollouts: number;
    calls: number;
    /** Damaged byte ranges skipped in the log (counted by the scans that built the indexes). */
    damaged: number;
    /** Segments taken from their index, and segments read to build one. */
    indexed: number;
    scanned: number;
    /** Rollouts without a result: their token history is read back at their next call. */
    open: number;
  };
};

/**
 * Opens the log of `dataDir` with `open` (told which segments the indexes vouch for), restores
 * `registry` from the indexes and the open rollouts' calls, and returns the log with its live index.
 *
 * @example
 * const { log, index, restored } = await restoreFromLog("data", (verified) => openSegmentLog("data", { verified }), registry);
 */
export async function restoreFromLog(
  dataDir: string,
  open: (verified: ReadonlySet<string>) => Promise<SegmentLog>,
  registry: RolloutRegistry,
  options: { integrityCheckDelayMs?: number } = {},
): Promise<RestoredLog> {
  const logDir = resolveLogDir(dataDir);
  const indexes = new Map<string, SegmentIndex>();
  for (const { name } of await listSegments(logDir)) {
    const index = loadSegmentIndex(logDir, name);
    if (index) indexes.set(name, index);
  }
  const indexed = indexes.size;
  const indexedAtOpen = new Set(indexes.keys());
  const log = await open(indexedAtOpen);
  let scanned = 0;
  try {
    const current = log.stats().segment;
    const segments = (await listSegments(logDir)).filter((s) => s.name !== current);
    for (const segment of segments) {
      if (indexes.has(segment.name)) continue;
      // Written before an index existed, or by a writer that did not close: read once, indexed for next time.
      const index = await indexSegmentFile(segment.path);
      sealQuietly(logDir, index);
      indexes.set(segment.name, index);
      scanned++;
    }
    const { frames, summaries, damaged } = summarizeIndexes(segments, indexes, registry);
    // Damaged ranges per segment: those the scans skipped, and a torn tail the open cut (quarantined too).
    const damagedRanges = new Map<string, number>();
    for (const { name } of segments) damagedRanges.set(name, indexes.get(name)!.damaged);
    for (const r of log.recovered) if (r.truncated) damagedRanges.set(r.segment, (damagedRanges.get(r.segment) ?? 0) + 1);
    let calls = 0;
    let open = 0;
    for (const [id, summary] of summaries) {
      calls += summary.calls;
      const state = registry.get(id);
      // Calls whose Rollout record was lost to damage are not served (as before indexes).
      if (!state) continue;
      registry.notePolicyVersion(summary.policy);
      state.calls = summary.calls;
      state.seq = summary.seq;
      state.tokenStatusCounts = summary.status;
      if (summary.result !== undefined) {
        state.result = decodeResult(summary.result);
        continue;
      }
      // Still open: its next call's prompt delta needs the token history, rebuilt when that call
      // comes from its calls' token fields (records/call-tokens.ts: the bodies are not decoded).
      open++;
      const where = [...(frames.get(id) ?? [])].map((f) => ({ segment: f.segment, offsets: [...f.offsets] }));
      registry.deferHistory(state, () => {
        const tokens: ModelCall[] = [];
        for (const { segment, offsets } of where) {
          for (const call of readCallTokensAt(`${logDir}/${segment}`, offsets, { skipCorrupt: true })) tokens.push(call);
        }
        return historyOf(tokens, registry.recentCalls);
      }, () => recordedCalls(logDir, where, damagedSince(where[0]?.segment, segments, damagedRanges)));
    }
    const index = liveIndex(logDir, log, frames);
    const restored = { rollouts: registry.size(), calls, damaged, indexed, scanned, open };
    const verified = segments.filter((s) => indexedAtOpen.has(s.name)).map((s) => s.name);
    const { integrity, stopIntegrityCheck } = laterIntegrityCheck(logDir, verified, options.integrityCheckDelayMs ?? 1000, restored);
    return { log, index, restored, integrity, stopIntegrityCheck };
  } catch (error) {
    await log.close();
    throw error;
  }
}

type RolloutSummary = { calls: number; seq: number; status: { [name: string]: number }; policy: number; result: SegmentIndex["rollouts"][string]["result"] };

/**
 * The segments' indexes folded per rollout: where its frames are, its counts and result; each
 * rollout whose Rollout record an index holds is added to `registry` (decoded on first use).
 * The summaries leave the indexes (they are in the registry now); the offsets stay for readers.
 */
function summarizeIndexes(segments: readonly { name: string }[], indexes: Map<string, SegmentIndex>, registry: RolloutRegistry) {
  const frames = new Map<string, Frames[]>();
  const summaries = new Map<string, RolloutSummary>();
  let damaged = 0;
  for (const { name } of segments) {
    const index = indexes.get(name)!;
    damaged += index.damaged;
    for (const [id, entry] of Object.entries(index.rollouts)) {
      const encoded = entry.rollout;
      if (encoded !== undefined && !registry.get(id)) {
        registry.addRestored({ rolloutId: id, keySha256: entry.key ?? "", retryOf: entry.retryOf ?? "", policyVersion: entry.policy }, () => decodeRollout(encoded)!);
      }
      const list = frames.get(id) ?? [];
      list.push({ segment: name, offsets: entry.offsets });
      frames.set(id, list);
      const summary = summaries.get(id) ?? { calls: 0, seq: 0, status: {}, policy: 0, result: undefined };
      summary.calls += entry.calls;
      summary.seq = Math.max(summary.seq, entry.seq);
      summary.policy = Math.max(summary.policy, entry.policy);
      for (const [status, n] of Object.entries(entry.status)) summary.status[status] = (summary.status[status] ?? 0) + n;
      if (entry.result !== undefined) summary.result = entry.result;
      summaries.set(id, summary);
    }
    for (const entry of Object.values(index.rollouts)) {
      delete entry.rollout;
      delete entry.result;
    }
  }
  return { frames, summaries, damaged };
}

/**
 * After the start: the proxy serves while its older segments are checked (a full read of
 * them, which would otherwise compete with the start itself), `delayMs` later. Stopping cancels
 * the wait. Damage found is counted into `restored.damaged`.
 */
function laterIntegrityCheck(logDir: string, verified: string[], delayMs: number, restored: { damaged: number }) {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let release = () => {};
  const integrity = new Promise<void>((resolve) => {
    release = resolve;
    timer = setTimeout(resolve, delayMs);
  })
    .then(() => verifySegments(logDir, verified, () => stopped))
    .then((found) => {
      restored.damaged += found.length;
      return found;
    });
  const stopIntegrityCheck = () => {
    stopped = true;
    clearTimeout(timer);
    release();
  };
  return { integrity, stopIntegrityCheck };
}

/**
 * Damaged ranges the restart found (and quarantined) in segments from `first` on: a call of a
 * rollout whose first record is in `first` may have been in one of them (a damaged frame names
 * no rollout that can be trusted).
 */
function damagedSince(first: string | undefined, segments: { name: string }[], damagedRanges: Map<string, number>): string {
  if (first === undefined) return "";
  return segments
    .filter((s) => s.name >= first && (damagedRanges.get(s.name) ?? 0) > 0)
    .map((s) => `${s.name} has ${damagedRanges.get(s.name)} damaged range(s), quarantined in log/quarantine/`)
    .join("; ");
}

/**
 * A rollout's ModelCall records read back whole from its frames (what restoring its token-in
 * chains needs: their bodies, chain fields and token views), with what may be missing: damage
 * the scans counted since its first segment, and frames that fail their check now (damage the
 * integrity check found after the start, or since).
 */
async function recordedCalls(logDir: string, where: Frames[], damagedBefore: string): Promise<RecordedCalls> {
  const calls: ModelCall[] = [];
  const damage = damagedBefore === "" ? [] : [damagedBefore];
  for (const { segment, offsets } of where) {
    for await (const { record } of readRecordsAt(`${logDir}/${segment}`, offsets, { onCorruption: (c) => void damage.push(describeCorruption(c)) })) {
      if (record.kind.case === "modelCall") calls.push(record.kind.value);
    }
  }
  return { calls, damage: damage.join("; ") };
}

/** The index is a shortcut: failing to write it costs a scan at the next start, never a call. */
function sealQuietly(logDir: string, index: SegmentIndex): void {
  try {
    writeSegmentIndex(logDir, index);
  } catch (error) {
    console.warn(`forge proxy: WARNING: ${(error as Error).message}; the segment will be read again at the next start`);
  }
}

function liveIndex(logDir: string, log: SegmentLog, frames: Map<string, Frames[]>): LogIndex {
  let indexer: SegmentIndexer = createSegmentIndexer(log.stats().segment);
  const seal = () => {
    const index = indexer.index();
    if (index.records > 0) sealQuietly(logDir, index);
  };
  return {
    note(record, result) {
      if (result.offset < 0) return;
      if (result.segment !== indexer.segment) {
        // The log moved to a new segment: the previous one is complete.
        seal();
        indexer = createSegmentIndexer(result.segment);
      }
      indexer.note(record, result.offset, result.bytes);
      const id = recordRolloutId(record);
      if (!id) return;
      const list = frames.get(id) ?? [];
      const last = list.at(-1);
      if (last?.segment === result.segment) last.offsets.push(result.offset);
      else list.push({ segment: result.segment, offsets: [result.offset] });
      frames.set(id, list);
    },
    async *recordsOf(rolloutId, options = {}) {
      for (const { segment, offsets } of [...(frames.get(rolloutId) ?? [])]) yield* readRecordsAt(`${logDir}/${segment}`, [...offsets], options);
    },
    seal,
  };
}

/**
 * `log` with every append noted in `index` (what the recorder and the control routes write through).
 *
 * @example
 * const recorded = indexedLog(log, index);
 * recorded.append(record); // written, and findable by its rollout
 */
export function indexedLog(log: SegmentLog, index: LogIndex): SegmentLog {
  return {
    get dir() {
      return log.dir;
    },
    get recovered() {
      return log.recovered;
    },
    append(record, options) {
      const result = log.append(record, options);
      index.note(record, result);
      return result;
    },
    sync: () => log.sync(),
    close: () => log.close(),
    stats: () => log.stats(),
  };
}
