import { expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { base64CacheStats, base64File } from "./base64-files.ts";

const ascii = (text: string) => new TextEncoder().encode(text);
// A distinct file per test: the cache is process-wide.
const file = (tag: string, size: number): { bytes: Buffer; base64: string; sha256: string } => {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + tag.charCodeAt(i % tag.length)) & 0xff;
  return { bytes, base64: bytes.toString("base64"), sha256: createHash("sha256").update(bytes).digest("hex") };
};

test("canonical base64 gives the sha256 and bytes of what it encodes", () => {
  const a = file("a", 3000);
  const found = base64File(ascii(a.base64))!;
  expect(found.sha256).toBe(a.sha256);
  expect(Buffer.from(found.data).equals(a.bytes)).toBe(true);
});

test("text that does not round-trip is not a file: it stays text", () => {
  const b = file("b", 3001);
  for (const text of [
    b.base64.replace(/=+$/, ""), // padding missing
    b.base64.replaceAll("+", "-").replaceAll("/", "_"), // url-safe alphabet
    `${b.base64.slice(0, 76)}\n${b.base64.slice(76, -1)}`, // a line break (length kept a multiple of 4 with one char less)
    "not base64 at all, with spaces!!".repeat(8),
    "",
  ]) {
    expect(base64File(ascii(text))).toBeUndefined();
    expect(base64File(ascii(text))).toBeUndefined(); // the cached verdict too
  }
});

test("text seen before is answered by the cache; its bytes are decoded when read, once", () => {
  const c = file("c", 300_000);
  const before = base64CacheStats();
  base64File(ascii(c.base64));
  expect(base64CacheStats()).toMatchObject({ hits: before.hits, misses: before.misses + 1 });
  const again = base64File(ascii(c.base64))!; // a fresh copy of the text, as the next request brings
  expect(base64CacheStats()).toMatchObject({ hits: before.hits + 1, misses: before.misses + 1 });
  expect(again.sha256).toBe(c.sha256);
  expect(Buffer.from(again.data).equals(c.bytes)).toBe(true);
  expect(again.data).toBe(again.data);
});

test("the cache keeps content addressing exact: same-length texts of different files differ", () => {
  const [d, e] = [file("d", 5000), file("e", 5000)];
  expect(d.base64.length).toBe(e.base64.length);
  for (let round = 0; round < 2; round++) {
    expect(base64File(ascii(d.base64))!.sha256).toBe(d.sha256);
    expect(base64File(ascii(e.base64))!.sha256).toBe(e.sha256);
  }
});

test("a subarray of a larger buffer is read as just its bytes", () => {
  const f = file("f", 999);
  const body = ascii(`{"data":"${f.base64}"}`);
  const found = base64File(body.subarray(9, 9 + f.base64.length))!;
  expect(found.sha256).toBe(f.sha256);
});
