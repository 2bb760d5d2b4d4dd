import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { diskUsage, quantityBytes, watchDisk } from "./disk-limit.ts";

const dir = mkdtempSync(join(tmpdir(), "forge-disk-limit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("quantityBytes: binary and decimal suffixes; thousandths and garbage are refused", () => {
  expect(quantityBytes("10Gi")).toBe(10 * 2 ** 30);
  expect(quantityBytes("500M")).toBe(500e6);
  expect(quantityBytes("1.5Ki")).toBe(1536);
  expect(quantityBytes("4096")).toBe(4096);
  expect(() => quantityBytes("500m")).toThrow("thousandths");
  expect(() => quantityBytes("ten")).toThrow('"ten" is not a quantity of bytes');
});

test("diskUsage counts allocated bytes: a sparse file counts what it uses", async () => {
  const before = await diskUsage([dir]);
  writeFileSync(join(dir, "dense"), Buffer.alloc(2 * 1024 * 1024, 1));
  const sparse = Bun.spawnSync(["truncate", "-s", "20G", join(dir, "sparse")]);
  expect(sparse.exitCode).toBe(0);
  const after = await diskUsage([dir]);
  expect(after - before).toBeGreaterThanOrEqual(2 * 1024 * 1024);
  expect(after - before).toBeLessThan(3 * 1024 * 1024);
});

test("watchDisk fires once the paths hold more than the limit", async () => {
  const watched = mkdtempSync(join(dir, "w-"));
  const watch = watchDisk([watched], 1024 * 1024);
  const fired = new Promise<void>((resolve) => watch.over.addEventListener("abort", () => resolve()));
  await Bun.sleep(700);
  expect(watch.over.aborted).toBe(false);
  writeFileSync(join(watched, "big"), Buffer.alloc(3 * 1024 * 1024, 1));
  await fired;
  expect(watch.seenBytes()).toBeGreaterThan(1024 * 1024);
  watch.stop();
});
