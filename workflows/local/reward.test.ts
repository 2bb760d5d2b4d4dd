import { describe, expect, test } from "bun:test";
import { mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readReward } from "./reward.ts";

const range = { min: 0, max: 1 };
const dir = () => mkdtempSync(join(tmpdir(), "forge-reward-"));

describe("readReward", () => {
  test("exit-code only when declared: 0 → 1, else 0; killed by a signal is a verifier error", () => {
    expect(readReward({ outputDir: dir(), exitCode: 0, source: "exit-code", range })).toEqual({ ok: true, reward: 1, source: "exit code 0" });
    expect(readReward({ outputDir: dir(), exitCode: 2, source: "exit-code", range })).toMatchObject({ ok: true, reward: 0 });
    expect(readReward({ outputDir: dir(), exitCode: null, source: "exit-code", range })).toMatchObject({ ok: false, error: expect.stringContaining("killed by a signal") });
  });

  test("a file reward: reward.json (object or number) before reward.txt", () => {
    const d = dir();
    writeFileSync(join(d, "reward.txt"), "0.5");
    expect(readReward({ outputDir: d, exitCode: 1, source: "file", range })).toMatchObject({ ok: true, reward: 0.5 });
    writeFileSync(join(d, "reward.json"), '{"reward": 0.75}');
    expect(readReward({ outputDir: d, exitCode: 1, source: "file", range })).toMatchObject({ ok: true, reward: 0.75 });
    writeFileSync(join(d, "reward.json"), "1");
    expect(readReward({ outputDir: d, exitCode: 1, source: "file", range })).toMatchObject({ ok: true, reward: 1 });
  });

  test("no file, a malformed file, a link or an out-of-range value is a verifier error, never a reward", () => {
    const error = (setup: (d: string) => void, r = range) => {
      const d = dir();
      setup(d);
      const read = readReward({ outputDir: d, exitCode: 0, source: "file", range: r });
      expect(read.ok).toBe(false);
      return read.ok ? "" : read.error;
    };
    expect(error(() => {})).toContain("wrote no reward");
    expect(error((d) => writeFileSync(join(d, "reward.json"), '{"score": 1}'))).toContain('expected a finite number or {"reward": number}');
    expect(error((d) => writeFileSync(join(d, "reward.txt"), ""))).toContain("expected a finite number");
    expect(error((d) => writeFileSync(join(d, "reward.txt"), "NaN"))).toContain("expected a finite number");
    expect(error((d) => writeFileSync(join(d, "reward.txt"), "1e9"))).toContain("reward 1000000000");
    expect(error((d) => writeFileSync(join(d, "reward.txt"), "-0.5"))).toContain("outside the task's reward range [0, 1]");
    expect(error((d) => symlinkSync("/etc/hostname", join(d, "reward.txt")))).toContain("not a regular file");
    expect(error((d) => writeFileSync(join(d, "reward.txt"), "0".repeat(70_000)))).toContain("more than a reward file holds");
    expect(readReward({ outputDir: ((d) => (writeFileSync(join(d, "reward.txt"), "-0.5"), d))(dir()), exitCode: 0, source: "file", range: { min: -1, max: 1 } })).toMatchObject({ ok: true, reward: -0.5 });
  });
});
