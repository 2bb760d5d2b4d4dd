import { describe, expect, test } from "bun:test";
import { WeighedMap } from "./weighed-map.ts";

describe("WeighedMap", () => {
  test("past its bound the oldest entries go; a value set again is the newest and counted once", () => {
    const m = new WeighedMap<string, string>(10);
    m.set("a", "A", 4);
    m.set("b", "B", 4);
    m.set("a", "A2", 4);
    expect(m.weight).toBe(8);
    m.set("c", "C", 4);
    expect(m.get("b")).toBeUndefined();
    expect([m.get("a"), m.get("c"), m.weight]).toEqual(["A2", "C", 8]);
  });

  test("take gives the value and lets go of it; an entry over maxEntryWeight is not kept and drops what its key held", () => {
    const m = new WeighedMap<string, number>(100, 10);
    m.set("x", 1, 5);
    expect(m.take("x")).toBe(1);
    expect([m.take("x"), m.weight]).toEqual([undefined, 0]);
    m.set("y", 2, 5);
    m.set("y", 3, 11);
    expect([m.get("y"), m.weight]).toEqual([undefined, 0]);
  });
});
