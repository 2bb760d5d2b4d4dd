import { expect, test } from "bun:test";
import { ownedRolloutId, parseShards, shardOf } from "./shards.ts";

test("shardOf: the same owner everywhere, spread evenly, and only the new shard's keys move when N grows", () => {
  const keys = Array.from({ length: 4000 }, (_, i) => `wf.i0.task-${i}.0`);
  const at4 = keys.map((k) => shardOf(k, 4));
  expect(keys.map((k) => shardOf(k, 4))).toEqual(at4);
  const counts = [0, 1, 2, 3].map((s) => at4.filter((o) => o === s).length);
  for (const n of counts) expect(n).toBeGreaterThan(850);
  // Rendezvous hashing: going to 5 shards moves keys only onto shard 4.
  const at5 = keys.map((k) => shardOf(k, 5));
  expect(at5.every((o, i) => o === at4[i] || o === 4)).toBe(true);
  expect(shardOf("x", 1)).toBe(0);
});

test("ownedRolloutId gives ids the shard owns", () => {
  const shards = { index: 2, count: 3, urls: ["http://a", "http://b", "http://c"] };
  for (let i = 0; i < 20; i++) expect(shardOf(ownedRolloutId(shards), 3)).toBe(2);
});

test("parseShards: I/N, auto/N from a StatefulSet pod's host name, URLs listed or templated; errors name the fix", () => {
  expect(parseShards("1/2", ["http://a:1/", "http://b:2"], "h")).toEqual({ index: 1, count: 2, urls: ["http://a:1", "http://b:2"] });
  expect(parseShards("auto/3", ["http://p-{i}.s.ns.svc:8080"], "exp-proxy-2")).toEqual({ index: 2, count: 3, urls: ["http://p-0.s.ns.svc:8080", "http://p-1.s.ns.svc:8080", "http://p-2.s.ns.svc:8080"] });
  expect(() => parseShards("auto/3", ["http://p-{i}"], "laptop")).toThrow(/host name "laptop" does not end in -<ordinal>/);
  expect(() => parseShards("3/3", ["http://p-{i}"], "h")).toThrow(/shard 3 of 3 does not exist/);
  expect(() => parseShards("0/2", ["http://a"], "h")).toThrow(/URL of each of the 2 shards/);
  expect(() => parseShards("two", [], "h")).toThrow(/--shard must be I\/N/);
  expect(() => parseShards("0/2", ["http://a", "not a url"], "h")).toThrow(/not a URL/);
});
