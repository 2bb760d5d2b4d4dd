import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { parseYamlAgainst } from "./yaml-file.ts";

const Schema = z.strictObject({
  name: z.string({ error: "expected a name" }),
  match: z.union([z.string(), z.strictObject({ regex: z.string(), flags: z.string().optional() })]).optional(),
  items: z.array(z.strictObject({ size: z.number() })).default([]),
});

const problems = (source: string) => {
  const result = parseYamlAgainst(Schema, source, "f.yaml", "a mapping");
  return result.ok ? [] : result.problems;
};

describe("parseYamlAgainst", () => {
  test("unknown keys are suggested from the schema, through unions and arrays", () => {
    expect(problems('name: a\nmatch: { regx: "x" }\n')).toEqual([
      "f.yaml:2:8: match.regex: required field is missing",
      'f.yaml:2:10: match: unknown field "regx" (did you mean "regex"?)',
    ]);
    expect(problems("name: a\nitems:\n  - { size: 1, colour: red }\n")).toEqual(['f.yaml:3:16: items[0]: unknown field "colour" (allowed: size)']);
  });

  test("missing fields use the schema's words; wrong values say what was given", () => {
    expect(problems("items: []\n")).toEqual(["f.yaml:1:1: name: expected a name"]);
    expect(problems("name: a\nitems:\n  - { size: big }\n")).toEqual(['f.yaml:3:13: items[0].size: Invalid input: expected number, received string, got "big"']);
  });

  test("a top level that is not a mapping, and YAML syntax errors, name the file", () => {
    expect(problems("- a\n- b\n")).toEqual(["f.yaml:1:1: expected a mapping"]);
    expect(problems("name: [\n")[0]).toMatch(/^f\.yaml:\d+:\d+: YAML syntax error: /);
  });
});
