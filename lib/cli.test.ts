import { describe, expect, test } from "bun:test";
import { intFlag, parseCommand, UsageError } from "./cli.ts";

const spec = { name: "demo", usage: "usage: forge demo [--data DIR] [--json]", options: { data: { type: "string" }, json: { type: "boolean" } } } as const;

function problem(argv: string[], allowPositionals = false): string {
  try {
    parseCommand({ ...spec, allowPositionals }, argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`${argv.join(" ")} was accepted`);
}

describe("parseCommand", () => {
  test("parses flags and positionals", () => {
    expect(parseCommand({ ...spec, allowPositionals: true }, ["x", "--data", "d", "--json"])).toMatchObject({ values: { data: "d", json: true }, positionals: ["x"] });
  });

  test("each argument mistake is one line in the CLI's words, followed by the usage", () => {
    expect(problem(["--frobnicate"])).toBe("forge demo: unknown option --frobnicate\n\nusage: forge demo [--data DIR] [--json]");
    expect(problem(["-x"]).split("\n")[0]).toBe("forge demo: unknown option -x");
    expect(problem(["--frob=3"]).split("\n")[0]).toBe("forge demo: unknown option --frob");
    expect(problem(["--data"]).split("\n")[0]).toBe("forge demo: option --data needs a value");
    expect(problem(["--json=yes"]).split("\n")[0]).toBe("forge demo: option --json takes no value");
    expect(problem(["stray"]).split("\n")[0]).toBe('forge demo: unexpected argument "stray"');
  });

  test("--help prints the usage and returns null", () => {
    expect(parseCommand(spec, ["--frobnicate", "--help"])).toBeNull();
  });

  test("intFlag names the flag", () => {
    expect(intFlag("k", "3", 1)).toBe(3);
    expect(intFlag("k", undefined, 1)).toBe(1);
    expect(() => intFlag("k", "three", 1)).toThrow('--k must be an integer, got "three"');
  });
});
