/**
 * The files of an export: where each lies beside the batch, streamed JSONL lines, and DuckDB's
 * JSONL → parquet copy typed by the row specification (row.ts).
 */
import { createWriteStream, existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { once } from "node:events";
import { DuckDBInstance } from "@duckdb/node-api";
import { sqlString } from "../lib/index.ts";
import type { ExportManifest } from "./export-manifest.ts";
import { columnsSql } from "./row.ts";

/** The manifest path beside an output file: `batch.parquet` → `batch.manifest.json`. */
export function manifestPath(out: string): string {
  return `${out.replace(/\.(parquet|jsonl)$/, "")}.manifest.json`;
}

/** Where an export writes the images its rows refer to: `<batch>.blobs/<sha256>` (what veRL's loop loads). */
export function blobDirPath(out: string): string {
  return `${out.replace(/\.(parquet|jsonl)$/, "")}.blobs`;
}

/** The JSONL file holding the same rows as a parquet export, for stdlib-only readers. */
export function sidecarPath(out: string): string {
  return `${out.replace(/\.parquet$/, "")}.jsonl`;
}

/** Where `groupRows` puts the GRPO dataset: a folder beside the batch (outside `exports/*.parquet`, which analytics reads as samples). */
export function groupDatasetPath(out: string): string {
  return join(`${out.replace(/\.parquet$/, "")}.groups`, "dataset.parquet");
}

export async function writeLine(stream: ReturnType<typeof createWriteStream>, line: string): Promise<void> {
  if (!stream.write(line)) await once(stream, "drain");
}

export async function closeStream(stream: ReturnType<typeof createWriteStream>): Promise<void> {
  await new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
}

/** Moves the referenced Blobs from the scratch folder to `dir` (content-addressed: an existing file is the same bytes). */
export function moveReferencedBlobs(scratch: string, dir: string, referenced: Set<string>, counts: ExportManifest["images"]): void {
  if (referenced.size === 0) return;
  mkdirSync(dir, { recursive: true });
  counts.dir = dir;
  for (const sha of referenced) {
    const from = join(scratch, sha);
    if (existsSync(join(dir, sha))) counts.blobs_written++;
    else if (existsSync(from)) {
      renameSync(from, join(dir, sha));
      counts.blobs_written++;
    } else counts.blobs_missing++;
  }
}

/**
 * The first `rows` rows of a group dataset (by `extra_info.index`) as a parquet file: what one
 * veRL step trains on, exactly `data.train_batch_size` rows (see docs/verl.md, "Argo").
 * Returns the rows written; fewer than `rows` when the dataset is shorter.
 *
 * @example
 * await firstGroupRows("exports/batch.groups/dataset.parquet", 16, "/forge/verl/dataset.parquet") // 16
 */
export async function firstGroupRows(groupDataset: string, rows: number | undefined, out: string): Promise<number> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    const limit = rows === undefined ? "" : ` LIMIT ${Math.max(0, Math.floor(rows))}`;
    const select = `SELECT * FROM read_parquet(${sqlString(groupDataset)}) ORDER BY extra_info."index"${limit}`;
    await connection.run(`COPY (${select}) TO ${sqlString(out)} (FORMAT parquet, COMPRESSION zstd)`);
    const count = await connection.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM read_parquet(${sqlString(out)})`);
    return Number(count.getRowObjects()[0]!.n);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

export async function jsonlToParquet(jsonl: string, out: string, columns: readonly (readonly [string, string])[]): Promise<void> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    const partial = `${out}.tmp`;
    if (existsSync(partial)) rmSync(partial);
    // Lists stay unpadded (veRL pads in its agent loop); insertion order is kept, so row i has extra_info.index i.
    await connection.run(
      `COPY (SELECT * FROM read_json(${sqlString(jsonl)}, format = 'newline_delimited', columns = ${columnsSql(columns)},
         maximum_object_size = 1073741824)) TO ${sqlString(partial)} (FORMAT parquet, COMPRESSION zstd)`,
    );
    renameSync(partial, out);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
