/**
 * The whole project type-checks under the strict tsconfig (TypeScript's native compiler, a
 * few seconds): a type error anywhere fails `bun test`, not only the editor.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";

test("tsc --noEmit reports no errors", () => {
  const run = Bun.spawnSync(["bunx", "tsc", "--noEmit", "-p", "."], { cwd: join(import.meta.dir, ".."), stdout: "pipe", stderr: "pipe" });
  const output = run.stdout.toString() + run.stderr.toString();
  expect(output.split("\n").filter((line) => line.includes("error TS"))).toEqual([]);
  expect(run.exitCode).toBe(0);
}, 120_000); // tsc takes seconds, more on a loaded machine
