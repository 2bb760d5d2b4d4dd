import { describe, expect, test } from "bun:test";
import { fromJs, PyFloat, pyDumps, pyFloatRepr, PyJsonError, pyLoads, toJs, tryPyLoads } from "./pyjson.ts";

// Expected strings are what CPython 3.11 prints (json.dumps(json.loads(x), ensure_ascii=False), repr(float)).
describe("Python's json, as vLLM and the chat template use it", () => {
  test.each([
    ['{"path":"a"}', '{"path": "a"}'],
    ['{"b":1,"1":2.0}', '{"b": 1, "1": 2.0}'],
    ['{"a":{"b":[1,2,{"c":null}]},"t":true,"f":false}', '{"a": {"b": [1, 2, {"c": null}]}, "t": true, "f": false}'],
    ['{"x":1e16,"y":1e-7,"z":0.0001,"w":123456789012345678901234567890}', '{"x": 1e+16, "y": 1e-07, "z": 0.0001, "w": 123456789012345678901234567890}'],
    ['{"n":NaN,"i":[Infinity,-Infinity,1E400]}', '{"n": NaN, "i": [Infinity, -Infinity, Infinity]}'],
    ['{"u":"\\u00e9\\ud83d\\ude00 你好","e":"\\n\\t\\"\\\\\\/"}', '{"u": "é😀 你好", "e": "\\n\\t\\"\\\\/"}'],
    ['{"a":1,"a":2,"b":3}', '{"a": 2, "b": 3}'],
    [" \n [ ] \t", "[]"],
    ['"\\u001f"', '"\\u001f"'],
    ["-0", "0"],
    ["-0.0", "-0.0"],
  ])("%s → %s", (input, output) => {
    expect(pyDumps(pyLoads(input))).toBe(output);
  });

  test.each([
    ["", "Expecting value: line 1 column 1 (char 0)"],
    ['{"a":1,}', "Expecting property name enclosed in double quotes"],
    ["[1,]", "Expecting value"],
    ['{"a" 1}', "Expecting ':' delimiter"],
    ["01", "Extra data"],
    ['"a\nb"', "Invalid control character"],
    ['"abc', "Unterminated string"],
    ['"\\x"', "Invalid \\escape"],
    ["{'a': 1}", "Expecting property name"],
    ["nan", "Expecting value"],
  ])("rejects %j (%s), as json.loads does", (input, message) => {
    expect(() => pyLoads(input)).toThrow(PyJsonError);
    expect(() => pyLoads(input)).toThrow(message);
    expect(tryPyLoads(input)).toBeUndefined();
  });

  test("float repr switches to exponent form where Python's does", () => {
    expect([1, 1.5, 100, 1e15, 1e16, 1.5e-5, 0.0001, -0, 0.1 + 0.2, 123456789.123].map(pyFloatRepr)).toEqual([
      "1.0",
      "1.5",
      "100.0",
      "1000000000000000.0",
      "1e+16",
      "1.5e-05",
      "0.0001",
      "-0.0",
      "0.30000000000000004",
      "123456789.123",
    ]);
    expect(pyDumps(new PyFloat(1e100))).toBe("1e+100");
  });

  test("values JavaScript parsed: whole numbers are ints, others floats; objects keep JavaScript's key order", () => {
    expect(pyDumps(fromJs({ a: 1, b: 0.5, c: [true, null, "x"], d: undefined, big: 2 ** 60 }))).toBe('{"a": 1, "b": 0.5, "c": [true, null, "x"], "big": 1152921504606846976}');
    expect(toJs(pyLoads('{"a": [1.0, 2], "b": {"c": 12345678901234567890}}'))).toEqual({ a: [1, 2], b: { c: 12345678901234567000 } });
  });
});
