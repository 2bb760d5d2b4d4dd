import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readReward } from "./reward.ts";

const dirs = () => {
  const root = mkdtempSync(join(tmpdir(), "forge-reward-"));
  const logsDir = join(root, "logs");
  const workspace = join(root, "ws");
  mkdirSync(logsDir);
  mkdirSync(workspace);
  return { logsDir, workspace };
};

describe("readReward", () => {
  test("exit code decides without a reward file", () => {
    expect(readReward({ ...dirs(), exitCode: 0 }).reward).toBe(1);
    expect(readReward({ ...dirs(), exitCode: 2 }).reward).toBe(0);
    expect(readReward({ ...dirs(), exitCode: null }).source).toContain("killed");
  });

  test("reward.json (object or number) before reward.txt, logs dir before the workspace", () => {
    const d = dirs();
    writeFileSync(join(d.workspace, "reward.txt"), "0.25\n");
    expect(readReward({ ...d, exitCode: 1 })).toMatchObject({ reward: 0.25 });
    writeFileSync(join(d.logsDir, "reward.txt"), "0.5");
    expect(readReward({ ...d, exitCode: 1 })).toMatchObject({ reward: 0.5 });
    writeFileSync(join(d.logsDir, "reward.json"), '{"reward": 0.75}');
    expect(readReward({ ...d, exitCode: 1 })).toMatchObject({ reward: 0.75 });
    writeFileSync(join(d.logsDir, "reward.json"), "1");
    expect(readReward({ ...d, exitCode: 1 })).toMatchObject({ reward: 1 });
  });

  test("a malformed reward file gives 0 and says why", () => {
    const d = dirs();
    writeFileSync(join(d.logsDir, "reward.json"), '{"score": 1}');
    expect(readReward({ ...d, exitCode: 0 })).toMatchObject({ reward: 0, error: expect.stringContaining('expected a number or {"reward": number}') });
    const e = dirs();
    writeFileSync(join(e.logsDir, "reward.txt"), "");
    expect(readReward({ ...e, exitCode: 0 }).error).toContain("expected a number");
  });
});
