import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pruneCheckpoints, savedSteps } from "./checkpoints.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function run(steps: number[], tracker?: number): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-ckpt-"));
  dirs.push(dir);
  for (const s of steps) mkdirSync(join(dir, `global_step_${s}`, "actor"), { recursive: true });
  writeFileSync(join(dir, "global_step_notes"), ""); // not a checkpoint folder
  if (tracker !== undefined) writeFileSync(join(dir, "latest_checkpointed_iteration.txt"), `${tracker}\n`);
  return dir;
}

test("keeps the newest N checkpoints, numerically ordered", () => {
  const dir = run([1, 2, 3, 10, 11], 11);
  expect(pruneCheckpoints(dir, 3)).toEqual([1, 2]);
  expect(savedSteps(dir)).toEqual([3, 10, 11]);
  expect(pruneCheckpoints(dir, 3)).toEqual([]);
});

test("never deletes the checkpoint veRL's tracker names, even when older ones are kept", () => {
  const dir = run([4, 5, 6], 4);
  expect(pruneCheckpoints(dir, 1)).toEqual([5]);
  expect(savedSteps(dir)).toEqual([4, 6]);
});

test("a missing folder has nothing to prune; keep below 1 is refused", () => {
  expect(pruneCheckpoints(join(tmpdir(), "forge-no-such-run"), 2)).toEqual([]);
  expect(() => pruneCheckpoints(run([1]), 0)).toThrow("keep must be at least 1 (training.keepCheckpoints)");
});
