/**
 * Data directories of a sharded proxy (docs/scale.md, "A sharded proxy"): each shard records to
 * its own data directory, and a **sharded data root** holds them side by side as `shard-0/`,
 * `shard-1/`, … (each with its `log/`). Every rollout's records are in exactly one shard, so the
 * readers of a root read its shards one after the other.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { segmentNumber } from "./segments.ts";

const SHARD_DIR = /^shard-(\d+)$/;

/** The data directory of shard `index` under a sharded data root. */
export function shardDataDir(root: string, index: number): string {
  return join(root, `shard-${index}`);
}

/**
 * The data directories `dir` stands for: itself when it holds a log (or is one); else its
 * `shard-N/` subdirectories that do, by number; else itself (an empty or new data directory).
 *
 * @example
 * dataDirsOf(".forge/runs/q") // [".forge/runs/q/shard-0", ".forge/runs/q/shard-1"] for a run with 2 proxy shards
 */
export function dataDirsOf(dir: string): string[] {
  if (basename(dir) === "log" || existsSync(join(dir, "log"))) return [dir];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [dir];
  }
  // A log directory passed as such (segments or a LOCK directly in it).
  if (names.some((name) => name === "LOCK" || segmentNumber(name) !== undefined)) return [dir];
  const shards = names
    .map((name) => ({ name, match: SHARD_DIR.exec(name) }))
    .filter(({ name, match }) => match && statSync(join(dir, name)).isDirectory() && existsSync(join(dir, name, "log")))
    .sort((a, b) => Number(a.match![1]) - Number(b.match![1]))
    .map(({ name }) => join(dir, name));
  return shards.length > 0 ? shards : [dir];
}
