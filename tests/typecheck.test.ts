/**
 * The project type-checks under the strict tsconfig (TypeScript's native compiler, a few
 * seconds): a type error anywhere in the project fails `bun run test`, not only the editor.
 * "The project" is the folders tsconfig.json `include`s; a user's scratch `.ts` file in the
 * repository root is not part of it and must not break the suite.
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");
/** Folders with TypeScript that are not type-checked here, and why. */
const NOT_CHECKED = new Set(["node_modules", "integrations"]); // dependencies; the Python veRL loop

function tsc(...args: string[]) {
  const run = Bun.spawnSync(["bunx", "tsc", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  return { exitCode: run.exitCode, output: run.stdout.toString() + run.stderr.toString() };
}

test("tsc --noEmit reports no errors", () => {
  const run = tsc("--noEmit", "-p", ".");
  expect(run.output.split("\n").filter((line) => line.includes("error TS"))).toEqual([]);
  expect(run.exitCode).toBe(0);
}, 120_000); // tsc takes seconds, more on a loaded machine

test("tsconfig.json includes every top-level folder that holds TypeScript (a new area is checked too)", () => {
  const include = (JSON.parse(readFileSync(join(ROOT, "tsconfig.json"), "utf8")) as { include: string[] }).include;
  const withTs = readdirSync(ROOT, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith(".") && !NOT_CHECKED.has(entry.name))
    .filter((entry) => new Bun.Glob("**/*.ts").scanSync({ cwd: join(ROOT, entry.name) }).next().done === false)
    .map((entry) => entry.name);
  expect(withTs.filter((name) => !include.includes(name))).toEqual([]);
});

test("a stray .ts file in the repository root is not part of the type-checked project", () => {
  const stray = join(ROOT, `scratch-${process.pid}-${Date.now()}.ts`);
  writeFileSync(stray, "const broken: number = 'not a number';\n");
  try {
    const run = tsc("--listFilesOnly", "-p", ".");
    expect(run.exitCode).toBe(0);
    const files = run.output.split("\n").map((line) => line.trim());
    expect(files.some((file) => file.endsWith("bin/forge.ts"))).toBe(true);
    expect(files.filter((file) => file.endsWith(stray.slice(ROOT.length)))).toEqual([]);
  } finally {
    rmSync(stray, { force: true });
  }
}, 120_000);
