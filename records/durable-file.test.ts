import { afterEach, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "./durable-file.ts";
import { RecorderError } from "./errors.ts";
import { scratchDir } from "./testing.ts";

let scratch = scratchDir();
afterEach(() => {
  scratch.cleanup();
  scratch = scratchDir();
});

test("writeFileAtomic replaces the file whole, creating its folder", () => {
  const path = join(scratch.dir, "index", "a.json");
  writeFileAtomic(path, "write", (fd) => writeSync(fd, "one"));
  writeFileAtomic(path, "write", (fd) => writeSync(fd, "two"));
  expect(readFileSync(path, "utf8")).toBe("two");
  expect(readdirSync(join(scratch.dir, "index"))).toEqual(["a.json"]);
});

test("a failure half-way keeps the old file, leaves no temporary file and names the action and path", () => {
  const path = join(scratch.dir, "a.json");
  writeFileSync(path, "old");
  const fail = () =>
    writeFileAtomic(path, "write the segment index", (fd) => {
      writeSync(fd, "half");
      throw Object.assign(new Error("no space"), { code: "ENOSPC" });
    });
  expect(fail).toThrow(RecorderError);
  expect(fail).toThrow(`recorder: cannot write the segment index ${path}: ENOSPC`);
  expect(readFileSync(path, "utf8")).toBe("old");
  expect(readdirSync(scratch.dir)).toEqual(["a.json"]);
});
