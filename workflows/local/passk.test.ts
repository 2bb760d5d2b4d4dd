import { describe, expect, test } from "bun:test";
import { formatPassTable, passAtK, passHatK, passTable } from "./passk.ts";
import type { RolloutOutcome } from "./rollout.ts";

const outcome = (task_id: string, reward: number, status: RolloutOutcome["status"] = "ok"): RolloutOutcome => ({
  rollout_id: `${task_id}.${Math.random()}`,
  task_id,
  attempt: 0,
  status,
  reward,
  verifier_output: "",
  harness_exit_code: 0,
  duration_ms: 1,
  dir: "/x",
});

describe("pass@k / pass^k", () => {
  test("unbiased estimators match the closed forms", () => {
    expect(passAtK(4, 1, 1)).toBeCloseTo(0.25);
    expect(passAtK(4, 1, 2)).toBeCloseTo(0.5); // 1 - C(3,2)/C(4,2) = 1 - 3/6
    expect(passAtK(4, 0, 4)).toBe(0);
    expect(passAtK(4, 4, 1)).toBe(1);
    expect(passHatK(4, 2, 2)).toBeCloseTo(1 / 6);
    expect(passHatK(4, 3, 4)).toBe(0);
    expect(passAtK(2, 1, 3)).toBeNaN();
  });

  test("table per task with a mean row; infra errors are not scored", () => {
    const rows = passTable([outcome("a", 1), outcome("a", 0), outcome("b", 1), outcome("b", 1), outcome("b", 0, "infra_error")], [1, 2], 1);
    expect(rows.map((r) => [r.task_id, r.n, r.passed])).toEqual([["a", 2, 1], ["b", 2, 2], ["(mean)", 4, 3]]);
    expect(rows[2]!.pass_at[1]).toBeCloseTo(0.75);
    expect(rows[2]!.pass_hat[2]).toBeCloseTo(0.5);
    expect(formatPassTable(rows, [1, 2]).split("\n")[0]).toMatch(/^task\s+n\s+passed\s+pass@1\s+pass@2\s+pass\^1\s+pass\^2$/);
  });
});
