import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

function listFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path) : [path];
  });
}

describe("generated protobuf code", () => {
  test("schemas/gen is what `bun run gen` produces from schemas/forge", () => {
    const root = join(import.meta.dir, "..");
    const out = mkdtempSync(join(tmpdir(), "forge-gen-"));
    const run = Bun.spawnSync(
      ["bunx", "buf", "generate", "schemas", "--template", "schemas/buf.gen.yaml", "-o", out],
      { cwd: root, stderr: "pipe" },
    );
    expect(run.stderr.toString()).toBe("");
    expect(run.exitCode).toBe(0);
    const committed = join(root, "schemas", "gen");
    const fresh = join(out, "schemas", "gen");
    const names = (dir: string) => listFiles(dir).map((f) => relative(dir, f)).sort();
    expect(names(fresh)).toEqual(names(committed));
    for (const name of names(fresh)) {
      // A failure here means a .proto changed without `bun run gen`.
      expect(readFileSync(join(committed, name), "utf8")).toBe(readFileSync(join(fresh, name), "utf8"));
    }
  });
});
