import { describe, expect, test } from "bun:test";
import { ownCopy } from "./strings.ts";

describe("ownCopy", () => {
  test("every code unit kept: newlines, quotes, backslashes, non-ASCII and a lone surrogate", () => {
    for (const text of ["", "user\n", '"q" \\ \t', "ünïcode ✓", "a\ud800b"]) expect(ownCopy(text)).toBe(text);
  });
});
