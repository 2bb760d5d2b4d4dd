/**
 * Opens DuckDB over a data directory: compacts the log, then defines macros and views.
 */
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { rm } from "node:fs/promises";
import { compactLog, type CompactOptions, type CompactSummary } from "./compact.ts";
import { defineViews } from "./views.ts";

export type AnalyticsSession = {
  connection: DuckDBConnection;
  compaction: CompactSummary;
  close(): void;
};

/**
 * Compacts `DIR/log` into `DIR/parquet` (new segments only) and returns a connection with the
 * views `rollouts`, `calls`, `tool_calls`, `samples`, `tasks`, `rollout_behaviour` and the metric macros.
 *
 * @example
 * const session = await openAnalytics("data");
 * const reader = await session.connection.runAndReadAll("SELECT avg(pass_at_k(n, c, 1)) FROM tasks");
 * session.close();
 */
export async function openAnalytics(dataDir: string, options: CompactOptions = {}): Promise<AnalyticsSession> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  const compaction = await compactLog(connection, dataDir, options);
  await defineViews(connection, dataDir);
  return {
    connection,
    compaction,
    close() {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

/**
 * Writes a self-contained DuckDB database file: the compacted tables copied in, with the
 * views and macros, for notebooks (`duckdb forge.duckdb`). Replaces an existing file.
 *
 * @example
 * await writeDatabase("data", "forge.duckdb")
 */
export async function writeDatabase(dataDir: string, path: string): Promise<void> {
  await rm(path, { force: true });
  await rm(`${path}.wal`, { force: true });
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  try {
    await defineViews(connection, dataDir, { materialize: true });
    await connection.run("CHECKPOINT");
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
