/**
 * Incremental compaction of the segment log (`DIR/log/`) into parquet (`DIR/parquet/`).
 *
 * Closed segments are immutable, so each is compacted once into
 * `DIR/parquet/<table>/<segment>.parquet` and listed in `DIR/parquet/manifest.json`; later runs
 * read only segments not in the manifest. The segment a live writer still appends to (the
 * newest one while `DIR/log/LOCK` names a running process) is re-read on every run into
 * `<segment>.open.parquet` files that the next run replaces, so an analysis during a run sees
 * everything recorded so far without ever freezing a half-written segment.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import type { DuckDBAppender, DuckDBConnection } from "@duckdb/node-api";
import { sqlString } from "../lib/index.ts";
import { createContentStore, dataDirsOf, listSegments as listLogSegments, lockHeld, readSegment, type Corruption } from "../records/index.ts";
import type { Record } from "../schemas/index.ts";
import { rowsOf } from "./rows.ts";
import { appendRow, createTableSql, tableNames, tables, type TableName } from "./tables.ts";

export type SegmentInfo = { name: string; size: number; open: boolean };
export type ManifestEntry = { size: number; records: number; compactedAt: string };
/** `rows`: the version of the rows the parquet holds (rows.ts); parquet of another version is rebuilt. */
export type Manifest = { version: 1; rows?: number; segments: { [segment: string]: ManifestEntry } };

/**
 * The version of what rows.ts writes. Bump it when a table's columns or their meaning change:
 * parquet written by an older version is deleted and the log compacted again.
 */
export const ROWS_VERSION = 2;
/**
 * Reads the records of one segment file. `newest`: the log's last segment, whose incomplete
 * last frame is a live writer's append in progress or a torn tail the next writer cuts, not damage.
 */
export type SegmentReader = (logDir: string, segment: string, newest: boolean) => AsyncIterable<Record>;
export type CompactProgress = { segment: string; index: number; total: number; records: number };
export type CompactSummary = { compacted: string[]; reread: string[]; skipped: number; records: number };

/**
 * The segments of a log, oldest first (the recorder's listing); the newest is `open` while a
 * live process holds `LOCK`.
 *
 * @example
 * await listSegments("data/log") // [{ name: "seg-00000001.forge", size: 4096, open: false }, ...]
 */
export async function listSegments(logDir: string): Promise<SegmentInfo[]> {
  const segments = await listLogSegments(logDir);
  // The recorder's own check: a LOCK left by a dead writer whose pid was reused is not live.
  const writerAlive = lockHeld(logDir);
  return segments.map(({ name, size }, index) => ({ name, size, open: writerAlive && index === segments.length - 1 }));
}

/**
 * Reads segments with the recorder's `readSegment`, up to their last complete frame. Damage fails
 * the read (RecorderError CORRUPT) unless `onCorruption` is given: then each damaged range is
 * reported to it and the records around it are read.
 *
 * @example
 * const read = segmentReader({ onCorruption: (c) => console.warn(describeCorruption(c)) });
 */
export function segmentReader(options: { onCorruption?: (c: Corruption) => void } = {}): SegmentReader {
  return async function* (logDir, segment, newest) {
    for await (const { record } of readSegment(join(logDir, segment), { newest, onCorruption: options.onCorruption })) yield record;
  };
}

/** Reads one segment with the recorder's `readSegment`, failing on damage. */
export const recorderSegmentReader: SegmentReader = segmentReader();

/**
 * The compacted segments (`DIR/parquet/manifest.json`); empty when nothing was compacted yet.
 *
 * @example
 * Object.keys((await readManifest("data/parquet")).segments) // ["seg-00000001.forge"]
 */
export async function readManifest(parquetDir: string): Promise<Manifest> {
  try {
    const manifest = JSON.parse(await readFile(join(parquetDir, "manifest.json"), "utf8")) as Manifest;
    if (manifest.version !== 1 || typeof manifest.segments !== "object") {
      throw new Error(`${join(parquetDir, "manifest.json")}: unknown manifest version; delete DIR/parquet to recompact`);
    }
    return manifest;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { version: 1, rows: ROWS_VERSION, segments: {} };
    throw error;
  }
}

async function writeManifest(parquetDir: string, manifest: Manifest): Promise<void> {
  const path = join(parquetDir, "manifest.json");
  await writeFile(`${path}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`);
  await rename(`${path}.tmp`, path);
}

/**
 * Streams records into one parquet file per table: rows go through DuckDB appenders into
 * staging tables (DuckDB spills to disk, JS holds one record at a time), then `COPY … TO`.
 * Files are written under a temporary name and renamed, so a crash leaves no half file.
 *
 * @example
 * await compactRecords(connection, records(), "data/parquet", "seg-00000001")
 */
export async function compactRecords(
  connection: DuckDBConnection,
  records: AsyncIterable<Record>,
  parquetDir: string,
  stem: string,
  segment = stem,
  onRecord?: (count: number) => void,
): Promise<number> {
  const appenders = new Map<TableName, DuckDBAppender>();
  for (const name of tableNames) {
    await connection.run(createTableSql(name, `staging_${name}`));
    appenders.set(name, await connection.createAppender(`staging_${name}`));
  }
  const seen = new Set<string>();
  // A segment reads on its own: its stored bodies refer only to content in it.
  const content = createContentStore();
  let count = 0;
  for await (const record of records) {
    const rows = rowsOf(record, segment, seen, content);
    for (const name of tableNames) {
      for (const row of rows[name] ?? []) appendRow(appenders.get(name)!, tables[name], row);
    }
    count += 1;
    if (onRecord && count % 1000 === 0) onRecord(count);
  }
  for (const appender of appenders.values()) {
    appender.flushSync();
    appender.closeSync();
  }
  for (const name of tableNames) {
    await mkdir(join(parquetDir, name), { recursive: true });
    const path = join(parquetDir, name, `${stem}.parquet`);
    await connection.run(`COPY staging_${name} TO ${sqlString(`${path}.tmp`)} (FORMAT parquet, COMPRESSION zstd)`);
    await rename(`${path}.tmp`, path);
    await connection.run(`DROP TABLE staging_${name}`);
  }
  return count;
}

async function removeOpenFiles(parquetDir: string): Promise<void> {
  for (const name of tableNames) {
    let files: string[] = [];
    try {
      files = await readdir(join(parquetDir, name));
    } catch {
      continue;
    }
    for (const file of files.filter((f) => f.endsWith(".open.parquet") || f.endsWith(".tmp"))) {
      await rm(join(parquetDir, name, file), { force: true });
    }
  }
}

export type CompactOptions = {
  readSegment?: SegmentReader;
  /**
   * Each damaged range of the log, read past instead of failing (`forge analyze --skip-corrupt`).
   * Without it a damaged log fails compaction: metrics over a log with holes must not pass unnoticed.
   */
  onCorruption?: (corruption: Corruption) => void;
  onProgress?: (progress: CompactProgress) => void;
};

/**
 * Compacts the new closed segments of `DIR/log` and re-reads the open one.
 *
 * @example
 * const summary = await compactLog(connection, "data");
 * // { compacted: ["seg-00000002.forge"], reread: [], skipped: 1, records: 5120 }
 */
export async function compactLog(connection: DuckDBConnection, dataDir: string, options: CompactOptions = {}): Promise<CompactSummary> {
  const readSegment = options.readSegment ?? (options.onCorruption ? segmentReader({ onCorruption: options.onCorruption }) : recorderSegmentReader);
  const logDir = join(dataDir, "log");
  const parquetDir = join(dataDir, "parquet");
  await mkdir(parquetDir, { recursive: true });
  await connection.run(`SET temp_directory = ${sqlString(join(parquetDir, ".tmp"))}`);
  let manifest = await readManifest(parquetDir);
  if ((manifest.rows ?? 1) !== ROWS_VERSION) {
    // Written by another version of rows.ts: columns or their meaning differ, so start over.
    for (const name of tableNames) await rm(join(parquetDir, name), { recursive: true, force: true });
    manifest = { version: 1, rows: ROWS_VERSION, segments: {} };
    await writeManifest(parquetDir, manifest);
  }
  await removeOpenFiles(parquetDir);
  // A sharded proxy's data root holds one log per shard (records' dataDirsOf): their segments
  // are named alike, so each shard's are keyed `shard-N/seg-…` (files `shard-N.seg-…`).
  const shardDirs = dataDirsOf(dataDir);
  const logs = shardDirs.length === 1 && shardDirs[0] === dataDir ? [{ key: "", logDir }] : shardDirs.map((dir) => ({ key: `${basename(dir)}/`, logDir: join(dir, "log") }));
  const all = [];
  for (const log of logs) {
    const segments = await listSegments(log.logDir);
    for (const segment of segments) all.push({ ...log, segment, key: `${log.key}${segment.name}`, newest: segment.name === segments.at(-1)?.name });
  }
  const todo = all.filter((s) => s.segment.open || manifest.segments[s.key]?.size !== s.segment.size);
  const summary: CompactSummary = { compacted: [], reread: [], skipped: all.length - todo.length, records: 0 };
  for (const [index, { segment, key, logDir: segmentLogDir, newest }] of todo.entries()) {
    const stem = key.replace("/", ".").replace(/\.forge$/, "") + (segment.open ? ".open" : "");
    const progress = (records: number) => options.onProgress?.({ segment: key, index, total: todo.length, records });
    progress(0);
    const count = await compactRecords(connection, readSegment(segmentLogDir, segment.name, newest), parquetDir, stem, key, progress);
    progress(count);
    summary.records += count;
    if (segment.open) {
      summary.reread.push(key);
    } else {
      manifest.segments[key] = { size: segment.size, records: count, compactedAt: new Date().toISOString() };
      await writeManifest(parquetDir, manifest);
      summary.compacted.push(key);
    }
  }
  return summary;
}
