/**
 * pass@k, pass^k (unbiased and Claw-Eval), mean reward and grouping, against values computed
 * by hand (the arithmetic is in the comments), including n < k, c = 0, c = n, missing trials.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scored } from "../analytics/fixtures.ts";
import { passK, type Row } from "../analytics/metrics.ts";
import { openAnalytics, type AnalyticsSession } from "../analytics/session.ts";
import { fakeLog } from "../analytics/testing.ts";

let session: AnalyticsSession;

// Task A: attempts 0..5 = ok 1, failed 0, infra_error, ok 1, failed 0, timeout 0 → n = 5, c = 2.
// Task B: 3 failures (one a timeout) → n = 3, c = 0.
// Task C: 2 successes → n = c = 2.
// Task D: 1 success → n = 1 < k for k = 2.
// Task E: only an infra error → n = 0 (excluded from the unbiased estimators, a miss for Claw).
// Task U: registered, never finished → not counted in n.
const records = [
  ...scored({ id: "a0", task: "A", attempt: 0 }, "ok", 1),
  ...scored({ id: "a1", task: "A", attempt: 1 }, "failed", 0),
  ...scored({ id: "a2", task: "A", attempt: 2 }, "infra_error", 0),
  ...scored({ id: "a3", task: "A", attempt: 3 }, "ok", 1),
  ...scored({ id: "a4", task: "A", attempt: 4 }, "failed", 0),
  ...scored({ id: "a5", task: "A", attempt: 5 }, "timeout", 0),
  ...scored({ id: "b0", task: "B", attempt: 0 }, "failed", 0),
  ...scored({ id: "b1", task: "B", attempt: 1 }, "failed", 0),
  ...scored({ id: "b2", task: "B", attempt: 2 }, "timeout", 0),
  ...scored({ id: "c0", task: "C", attempt: 0 }, "ok", 1),
  ...scored({ id: "c1", task: "C", attempt: 1 }, "ok", 1),
  ...scored({ id: "d0", task: "D", attempt: 0 }, "ok", 1),
  ...scored({ id: "e0", task: "E", attempt: 0 }, "infra_error", 0),
];

beforeAll(async () => {
  const log = await fakeLog();
  await log.addSegment(records.slice(0, 10));
  await log.addSegment(records.slice(10));
  session = await openAnalytics(log.dir, { readSegment: log.readSegment });
});
afterAll(() => session.close());

async function scalar(sql: string): Promise<unknown> {
  const reader = await session.connection.runAndReadAll(`SELECT ${sql} AS v`);
  return reader.getRowObjectsJS()[0]!.v;
}

describe("macros", () => {
  test("pass_at_k matches 1 - C(n-c,k)/C(n,k)", async () => {
    expect(await scalar("pass_at_k(5, 2, 1)")).toBeCloseTo(0.4, 12);
    expect(await scalar("pass_at_k(5, 2, 2)")).toBeCloseTo(1 - 3 / 10, 12); // C(3,2)/C(5,2)
    expect(await scalar("pass_at_k(10, 3, 5)")).toBeCloseTo(1 - 21 / 252, 12); // C(7,5)/C(10,5)
    expect(await scalar("pass_at_k(5, 0, 2)")).toBe(0); // c = 0
    expect(await scalar("pass_at_k(5, 5, 2)")).toBe(1); // c = n
    expect(await scalar("pass_at_k(5, 4, 2)")).toBe(1); // n - c < k
    expect(await scalar("pass_at_k(1, 1, 2)")).toBeNull(); // n < k
  });
  test("pass_at_k stays finite where binomials would overflow", async () => {
    // C(2000,1000) overflows a double; the product form does not.
    const value = (await scalar("pass_at_k(2000, 1, 1000)")) as number;
    expect(value).toBeCloseTo(0.5, 12); // 1 - C(1999,1000)/C(2000,1000) = 1 - 1000/2000
  });
  test("pass_hat_k matches C(c,k)/C(n,k)", async () => {
    expect(await scalar("pass_hat_k(5, 2, 1)")).toBeCloseTo(0.4, 12);
    expect(await scalar("pass_hat_k(5, 2, 2)")).toBeCloseTo(1 / 10, 12);
    expect(await scalar("pass_hat_k(10, 6, 3)")).toBeCloseTo(20 / 120, 12); // C(6,3)/C(10,3)
    expect(await scalar("pass_hat_k(5, 1, 2)")).toBe(0); // c < k
    expect(await scalar("pass_hat_k(4, 4, 4)")).toBe(1); // c = n
    expect(await scalar("pass_hat_k(2, 2, 3)")).toBeNull(); // n < k
  });
  test("claw macros", async () => {
    expect(await scalar("claw_pass_at_k(1, 3)")).toBe(1);
    expect(await scalar("claw_pass_at_k(0, 3)")).toBe(0);
    expect(await scalar("claw_pass_hat_k(2, 3)")).toBe(0);
    expect(await scalar("claw_pass_hat_k(3, 3)")).toBe(1);
    expect(await scalar("claw_pass_hat_k(NULL, 1)")).toBe(0);
  });
});

function only(rows: Row[]): Row {
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

describe("unbiased convention", () => {
  test("per-task estimates averaged; n < k and n = 0 tasks left out", async () => {
    const row = only(await passK(session.connection, { by: [], ks: [1, 2, 5], convention: "unbiased", threshold: 1 }));
    expect(row.tasks).toBe(5);
    expect(row.rollouts).toBe(11); // 5 + 3 + 2 + 1 + 0: infra errors are not in n
    expect(row.successes).toBe(5);
    expect(row.infra_errors).toBe(2);
    expect(row.mean_reward as number).toBeCloseTo(5 / 11, 12);
    // k=1: A 0.4, B 0, C 1, D 1 (E: n = 0 < 1) → 2.4 / 4
    expect(row["tasks_scored@1"]).toBe(4);
    expect(row["pass@1"] as number).toBeCloseTo(0.6, 12);
    expect(row["pass^1"] as number).toBeCloseTo(0.6, 12);
    // k=2: A 0.7, B 0, C 1 (D: n < k) → 1.7 / 3; pass^2: A 0.1, B 0, C 1 → 1.1 / 3
    expect(row["tasks_scored@2"]).toBe(3);
    expect(row["pass@2"] as number).toBeCloseTo(1.7 / 3, 12);
    expect(row["pass^2"] as number).toBeCloseTo(1.1 / 3, 12);
    // k=5: only A has n >= 5: pass@5 = 1 (n - c = 3 < 5), pass^5 = 0 (c < 5)
    expect(row["tasks_scored@5"]).toBe(1);
    expect(row["pass@5"]).toBe(1);
    expect(row["pass^5"]).toBe(0);
  });

  test("the threshold decides success", async () => {
    const log = await fakeLog();
    await log.addSegment([
      ...scored({ id: "x0", task: "X", attempt: 0 }, "ok", 0.5),
      ...scored({ id: "x1", task: "X", attempt: 1 }, "ok", 0.25),
    ]);
    const own = await openAnalytics(log.dir, { readSegment: log.readSegment });
    try {
      const strict = only(await passK(own.connection, { by: [], ks: [1], convention: "unbiased", threshold: 1 }));
      expect(strict["pass@1"]).toBe(0);
      const loose = only(await passK(own.connection, { by: [], ks: [1], convention: "unbiased", threshold: 0.5 }));
      expect(loose["pass@1"]).toBeCloseTo(0.5, 12);
      expect(loose.mean_reward as number).toBeCloseTo(0.375, 12);
    } finally {
      own.close();
    }
  });
});

describe("claw convention", () => {
  test("first k valid trials by attempt; missing trials are failures", async () => {
    const row = only(await passK(session.connection, { by: [], ks: [1, 2], convention: "claw", threshold: 1 }));
    // k=1 first trials: A a0 ✓, B ✗, C ✓, D ✓, E missing ✗ → 3/5 for both
    expect(row["pass@1"] as number).toBeCloseTo(0.6, 12);
    expect(row["pass^1"] as number).toBeCloseTo(0.6, 12);
    // k=2: A [a0 ✓, a1 ✗] any ✓ all ✗; B ✗ ✗; C ✓ ✓; D [✓, missing] any ✓ all ✗; E ✗
    expect(row["pass@2"] as number).toBeCloseTo(3 / 5, 12);
    expect(row["pass^2"] as number).toBeCloseTo(1 / 5, 12);
    expect(row["tasks_scored@2"]).toBe(5);
  });
});

describe("grouping", () => {
  test("by harness and iteration, and by task", async () => {
    const log = await fakeLog();
    await log.addSegment([
      ...scored({ id: "h1", task: "T", harness: "codex", iteration: 0, attempt: 0 }, "ok", 1),
      ...scored({ id: "h2", task: "T", harness: "codex", iteration: 0, attempt: 1 }, "failed", 0),
      ...scored({ id: "h3", task: "T", harness: "codex", iteration: 1, attempt: 0 }, "ok", 1),
      ...scored({ id: "h4", task: "T", harness: "claude-code", iteration: 0, attempt: 0 }, "failed", 0),
      ...scored({ id: "h5", task: "S", harness: "claude-code", iteration: 0, attempt: 0 }, "ok", 1),
    ]);
    const own = await openAnalytics(log.dir, { readSegment: log.readSegment });
    try {
      const rows = await passK(own.connection, { by: ["harness", "iteration"], ks: [1], convention: "unbiased", threshold: 1 });
      expect(rows.map((r) => [r.harness, r.iteration, r.tasks, r["pass@1"]])).toEqual([
        ["claude-code", 0, 2, 0.5], // T 0/1, S 1/1
        ["codex", 0, 1, 0.5], // T 1/2
        ["codex", 1, 1, 1],
      ]);
      const byAll = await passK(own.connection, { by: ["experiment", "policy_version", "iteration", "harness", "task"], ks: [1], convention: "claw", threshold: 1 });
      expect(byAll).toHaveLength(4); // (codex,0,T) (codex,1,T) (claude-code,0,T) (claude-code,0,S)
      expect(byAll.every((r) => r.tasks === 1 && r.experiment === "exp" && r.policy_version === 0)).toBe(true);
      const byTask = await passK(own.connection, { by: ["task"], ks: [1], convention: "unbiased", threshold: 1 });
      // T over all harnesses and iterations: c = 2 of n = 4
      expect(byTask.map((r) => [r.task, r["pass@1"]])).toEqual([
        ["S", 1],
        ["T", 0.5],
      ]);
    } finally {
      own.close();
    }
  });
});
