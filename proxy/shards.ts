/**
 * A sharded proxy (docs/scale.md, "A sharded proxy"): N proxy processes, each with its own data
 * directory and log, each owning the rollouts hashed to it. A rollout and its retries share an
 * owner (the key is the first try's id), so superseding an earlier try stays one shard's
 * business. Which shard owns a key is rendezvous hashing over the shard indices: every process
 * computes the same owner, and a change of N moves only the keys of the added or removed shard.
 */

/** This process's place among the shards and how to reach each of them (its own URL included). */
export type ShardOptions = {
  /** 0 … count-1. */
  index: number;
  count: number;
  /** Base URL of every shard, by index (what the base URLs handed out start with). */
  urls: string[];
};

/**
 * The shard that owns `key` (a rollout's first try's id).
 *
 * @example
 * shardOf("quick-1a2b.i0.fix-typo.0", 4) // 2
 */
export function shardOf(key: string, count: number): number {
  let best = 0;
  let bestScore = -1n;
  for (let i = 0; i < count; i++) {
    // Bun.hash (wyhash, seed 0) is the same in every process and release.
    const score = BigInt.asUintN(64, BigInt(Bun.hash(`${i}\u0000${key}`)));
    if (score > bestScore) {
      best = i;
      bestScore = score;
    }
  }
  return best;
}

/**
 * A fresh rollout id that this shard owns (a registration without `rollout_id`).
 *
 * @example
 * const id = ownedRolloutId({ index: 1, count: 2, urls }); // "ro-…", shardOf(id, 2) === 1
 */
export function ownedRolloutId(shards: ShardOptions): string {
  for (;;) {
    const id = `ro-${crypto.randomUUID()}`;
    if (shardOf(id, shards.count) === shards.index) return id;
  }
}

/**
 * Parses `--shard I/N` (`auto/N` takes I from the host name's trailing `-<ordinal>`, as a
 * StatefulSet names its pods) and the shards' URLs (`--shard-url` once per shard, in order, or
 * one template with `{i}`).
 *
 * @example
 * parseShards("auto/3", ["http://forge-proxy-{i}.forge-proxy-shards.ns.svc:8080"], "forge-proxy-2")
 * // { index: 2, count: 3, urls: ["http://forge-proxy-0.…", "http://forge-proxy-1.…", "http://forge-proxy-2.…"] }
 */
export function parseShards(shard: string, urls: string[], hostname: string): ShardOptions {
  const match = /^(auto|\d+)\/(\d+)$/.exec(shard);
  if (!match) throw new Error(`--shard must be I/N (e.g. 0/4) or auto/N, got "${shard}"`);
  const count = Number(match[2]);
  if (count < 1) throw new Error(`--shard ${shard}: N must be at least 1`);
  let index: number;
  if (match[1] === "auto") {
    const ordinal = /-(\d+)$/.exec(hostname)?.[1];
    if (ordinal === undefined) throw new Error(`--shard auto/${count}: the host name "${hostname}" does not end in -<ordinal> (a StatefulSet pod's does); pass --shard I/${count}`);
    index = Number(ordinal);
  } else index = Number(match[1]);
  if (index >= count) throw new Error(`--shard ${shard}: shard ${index} of ${count} does not exist (0 … ${count - 1})`);
  const list = urls.length === 1 && urls[0]!.includes("{i}") ? Array.from({ length: count }, (_, i) => urls[0]!.replaceAll("{i}", String(i))) : urls;
  if (list.length !== count) throw new Error(`--shard ${shard}: give the URL of each of the ${count} shards (--shard-url once per shard, in order, or one template with {i}); got ${list.length}`);
  for (const url of list) {
    try {
      new URL(url);
    } catch {
      throw new Error(`--shard-url "${url}" is not a URL`);
    }
  }
  return { index, count, urls: list.map((u) => u.replace(/\/+$/, "")) };
}
