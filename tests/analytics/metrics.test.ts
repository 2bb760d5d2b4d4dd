/**
 * pass@k, pass^k, mean reward and the missing-trial and Claw-Eval conventions, against reference
 * formulas computed here independently of the SQL:
 * - Chen et al. (2021) pass@k and tau-bench's pass^k in exact rational arithmetic (BigInt);
 * - tau-bench's `display_metrics` (every task scored over the same num_trials; a trial without
 *   a successful result counts as a failure);
 * - Claw-Eval's `score_summary.py` `analyze_model` (graded scores padded with 0.0 up to
 *   EXPECTED_TRIALS, avg / any / all against PASS_THRESHOLD 0.75).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { analyze } from "../../analytics/analysis.ts";
import { scored } from "../../analytics/testing.ts";
import { passK, type PassOptions, type Row } from "../../analytics/metrics.ts";
import { openAnalytics, type AnalyticsSession } from "../../analytics/session.ts";
import { fakeLog } from "../../analytics/testing.ts";
import type { Record } from "../../schemas/index.ts";

// ---------------------------------------------------------------------------------------------
// Reference formulas
// ---------------------------------------------------------------------------------------------

function comb(n: number, k: number): bigint {
  if (k < 0 || k > n) return 0n;
  let r = 1n;
  for (let i = 1; i <= k; i++) r = (r * BigInt(n - k + i)) / BigInt(i);
  return r;
}

/** a / b for BigInts as a double, exact to the last bit for our ranges (scaled integer division). */
function ratio(a: bigint, b: bigint): number {
  if (a === 0n) return 0;
  const scale = 10n ** 30n;
  return Number((a * scale) / b) / 1e30;
}

/** Chen et al. 2021: 1 - C(n-c, k) / C(n, k). */
const chenPassAtK = (n: number, c: number, k: number) => 1 - ratio(comb(n - c, k), comb(n, k));
/** tau-bench: C(c, k) / C(n, k). */
const tauPassHatK = (n: number, c: number, k: number) => ratio(comb(c, k), comb(n, k));

/**
 * tau-bench's display_metrics over results {task, trial, reward}: num_trials = distinct trial
 * numbers, c per task = successful results, pass^k = mean over tasks of C(c,k)/C(num_trials,k).
 */
function tauBench(results: { task: string; trial: number; success: boolean }[], k: number): number {
  const numTrials = new Set(results.map((r) => r.trial)).size;
  const c = new Map<string, number>();
  for (const r of results) c.set(r.task, (c.get(r.task) ?? 0) + (r.success ? 1 : 0));
  let sum = 0;
  for (const value of c.values()) sum += tauPassHatK(numTrials, value, k);
  return sum / c.size;
}

/** Claw-Eval's analyze_model: per task the graded scores (errored traces have none). */
function clawEval(tasks: Map<string, number[]>, expectedTrials: number, threshold = 0.75) {
  let avgPass = 0;
  let anyPass = 0;
  let allPass = 0;
  let avgScore = 0;
  for (const raw of tasks.values()) {
    const scores = [...raw, ...Array(Math.max(0, expectedTrials - raw.length)).fill(0)];
    // The scores here are multiples of 1/20: summed exactly, so that a task exactly at the
    // threshold passes whatever order its trials are summed in (Python sums in file order).
    const avg = scores.reduce((a, b) => a + Math.round(b * 20), 0) / 20 / expectedTrials;
    avgScore += avg;
    if (avg >= threshold) avgPass++;
    if (scores.some((s) => s >= threshold)) anyPass++;
    if (scores.every((s) => s >= threshold)) allPass++;
  }
  const n = tasks.size;
  return { avg_pass_rate: avgPass / n, any_pass_rate: anyPass / n, all_pass_rate: allPass / n, overall_avg_score: avgScore / n };
}

/** A deterministic pseudo-random stream (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------

async function sessionOf(records: Record[]): Promise<AnalyticsSession> {
  const log = await fakeLog();
  await log.addSegment(records);
  return openAnalytics(log.dir, { readSegment: log.readSegment });
}

function only(rows: Row[]): Row {
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

const pooled = (ks: number[], extra: Partial<PassOptions> = {}): PassOptions => ({ by: [], ks, convention: "unbiased", ...extra });

let session: AnalyticsSession;

// Task A: attempts 0..5 = ok 1, failed 0, infra_error, ok 1, failed 0, timeout 0 → n = 5, c = 2.
// Task B: 3 failures (one a timeout) → n = 3, c = 0.
// Task C: 2 successes → n = c = 2.
// Task D: 1 success → n = 1.
// Task E: only an infra error → n = 0.
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
  test("pass_at_k matches 1 - C(n-c,k)/C(n,k), edge cases", async () => {
    expect(await scalar("pass_at_k(5, 2, 1)")).toBeCloseTo(0.4, 12);
    expect(await scalar("pass_at_k(5, 2, 2)")).toBeCloseTo(1 - 3 / 10, 12); // C(3,2)/C(5,2)
    expect(await scalar("pass_at_k(5, 0, 2)")).toBe(0); // c = 0
    expect(await scalar("pass_at_k(5, 5, 2)")).toBe(1); // c = n
    expect(await scalar("pass_at_k(5, 4, 2)")).toBe(1); // n - c < k
    expect(await scalar("pass_at_k(1, 1, 2)")).toBeNull(); // n < k
  });
  test("pass_hat_k matches C(c,k)/C(n,k), edge cases", async () => {
    expect(await scalar("pass_hat_k(10, 6, 3)")).toBeCloseTo(20 / 120, 12);
    expect(await scalar("pass_hat_k(5, 1, 2)")).toBe(0); // c < k
    expect(await scalar("pass_hat_k(4, 4, 4)")).toBe(1); // c = n
    expect(await scalar("pass_hat_k(2, 2, 3)")).toBeNull(); // n < k
  });
  test("both agree with exact rational arithmetic up to n = 5000", async () => {
    const next = random(20);
    const cases: [number, number, number][] = [[2000, 1, 1000], [5000, 2500, 10], [5000, 4990, 5], [5000, 7, 4000]];
    for (let i = 0; i < 60; i++) {
      const n = 1 + Math.floor(next() * 5000);
      cases.push([n, Math.floor(next() * (n + 1)), 1 + Math.floor(next() * Math.min(n, 50))]);
    }
    const sql = cases.map(([n, c, k], i) => `SELECT ${i} AS i, pass_at_k(${n}, ${c}, ${k}) AS at, pass_hat_k(${n}, ${c}, ${k}) AS hat`).join(" UNION ALL ");
    const rows = (await session.connection.runAndReadAll(`${sql} ORDER BY i`)).getRowObjectsJS();
    cases.forEach(([n, c, k], i) => {
      expect(Math.abs((rows[i]!.at as number) - chenPassAtK(n, c, k))).toBeLessThan(1e-12);
      expect(Math.abs((rows[i]!.hat as number) - tauPassHatK(n, c, k))).toBeLessThan(1e-12);
    });
  });
  test("Claw-Eval predicates pad missing trials with 0.0", async () => {
    expect(await scalar("claw_any_pass(1, 1, 3, 0.75)")).toBe(true);
    expect(await scalar("claw_any_pass(0, 3, 3, 0.75)")).toBe(false);
    expect(await scalar("claw_all_pass(0, 2, 3, 0.75)")).toBe(false); // a padded 0.0 fails
    expect(await scalar("claw_all_pass(0, 4, 3, 0.75)")).toBe(true); // every graded trial counts
    expect(await scalar("claw_all_pass(0, 2, 3, 0.0)")).toBe(true); // 0.0 >= 0 passes, as in Python
    expect(await scalar("claw_avg_pass(2.25, 3, 0.75)")).toBe(true); // 2.25 / 3 = 0.75
    expect(await scalar("claw_avg_score(4.0, 3)")).toBeCloseTo(4 / 3, 12); // sum over every graded trial / EXPECTED_TRIALS
  });
});

describe("unbiased, missing trials excluded (the default)", () => {
  test("the same tasks for every k: those with at least max(k) valid trials; the counts say how many", async () => {
    // k ≤ 2: A (n 5, c 2), B (3, 0), C (2, 2) scored; D (n 1) and E (n 0) excluded.
    const row = only(await passK(session.connection, pooled([1, 2])));
    expect([row.tasks, row.tasks_scored, row.tasks_excluded, row.rollouts, row.valid, row.successes, row.infra_errors]).toEqual([5, 3, 2, 13, 11, 5, 2]);
    expect(row.missing_trials).toBe("exclude");
    expect(row["pass@1"] as number).toBeCloseTo((0.4 + 0 + 1) / 3, 12);
    expect(row["pass@2"] as number).toBeCloseTo((chenPassAtK(5, 2, 2) + 0 + 1) / 3, 12);
    expect(row["pass^2"] as number).toBeCloseTo((tauPassHatK(5, 2, 2) + 0 + 1) / 3, 12);
    // Mean reward over the same rollouts as pass@1, task by task: equal for 0/1 rewards.
    expect(row.mean_reward as number).toBeCloseTo(row["pass@1"] as number, 12);
    // k = 1 alone scores D too.
    const one = only(await passK(session.connection, pooled([1])));
    expect([one.tasks_scored, one["pass@1"]]).toEqual([4, 0.6]);
    // max k = 5: only A.
    const five = only(await passK(session.connection, pooled([1, 5])));
    expect([five.tasks_scored, five["pass@5"], five["pass^5"]]).toEqual([1, 1, 0]);
    expect(five["pass@1"] as number).toBeCloseTo(0.4, 12);
  });

  test("so the curves are monotone in k", async () => {
    const next = random(7);
    const recs: Record[] = [];
    for (let t = 0; t < 30; t++) {
      const p = next();
      for (let a = 0; a < 8; a++) {
        const infra = next() < 0.15;
        recs.push(...scored({ id: `m${t}.${a}`, task: `t${t}`, attempt: a }, infra ? "infra_error" : next() < p ? "ok" : "failed", infra ? 0 : 1));
      }
    }
    const own = await sessionOf(recs);
    try {
      const row = only(await passK(own.connection, pooled([1, 2, 3, 4, 5, 6])));
      for (let k = 2; k <= 6; k++) {
        expect(row[`pass@${k}`] as number).toBeGreaterThanOrEqual(row[`pass@${k - 1}`] as number);
        expect(row[`pass^${k}`] as number).toBeLessThanOrEqual(row[`pass^${k - 1}`] as number);
      }
      expect((row.tasks_scored as number) + (row.tasks_excluded as number)).toBe(30);
    } finally {
      own.close();
    }
  });
});

describe("unbiased, missing trials count as failures (tau-bench)", () => {
  test("matches tau-bench's display_metrics: every task over num_trials, infra errors and never-run trials fail", async () => {
    const next = random(11);
    const k = 4;
    const labels = { "openforge.dev/rollouts-k": String(k), "openforge.dev/missing-trials": "fail", "openforge.dev/run": "tau-1" };
    const recs: Record[] = [];
    const tau: { task: string; trial: number; success: boolean }[] = [];
    for (let t = 0; t < 40; t++) {
      const p = next();
      for (let trial = 0; trial < k; trial++) {
        const roll = next();
        if (roll < 0.1 && trial > 0) continue; // never registered: tau-bench has no result, the trial still counts
        const status = roll < 0.2 ? "infra_error" : next() < p ? "ok" : "failed";
        recs.push(...scored({ id: `tau-1.i0.t${t}.${trial}`, task: `t${t}`, attempt: trial, labels }, status, status === "ok" ? 1 : 0));
        tau.push({ task: `t${t}`, trial, success: status === "ok" });
      }
    }
    const own = await sessionOf(recs);
    try {
      const row = only(await passK(own.connection, pooled([1, 2, 3, 4])));
      expect(row.missing_trials).toBe("fail");
      expect([row.tasks, row.tasks_scored, row.tasks_excluded]).toEqual([40, 40, 0]);
      for (let kk = 1; kk <= k; kk++) expect(Math.abs((row[`pass^${kk}`] as number) - tauBench(tau, kk))).toBeLessThan(1e-12);
      // pass@k over the same trials: 1 - C(N-c,k)/C(N,k) with N = num_trials.
      const c = new Map<string, number>();
      for (const r of tau) c.set(r.task, (c.get(r.task) ?? 0) + (r.success ? 1 : 0));
      const expected = [...c.values()].reduce((sum, cc) => sum + chenPassAtK(k, cc, 2), 0) / c.size;
      expect(Math.abs((row["pass@2"] as number) - expected)).toBeLessThan(1e-12);
      // Mean reward counts the missing trials as 0, like pass@1.
      expect(row.mean_reward as number).toBeCloseTo(row["pass@1"] as number, 12);
      // The same data excluded instead: fewer tasks scored, and the figure says so.
      const excluded = only(await passK(own.connection, pooled([1, 2, 3, 4], { missingTrials: "exclude" })));
      expect(excluded.tasks_scored as number).toBeLessThan(40);
      expect(excluded.tasks_excluded as number).toBe(40 - (excluded.tasks_scored as number));
    } finally {
      own.close();
    }
  });

  test("without recorded labels, --missing-trials fail counts the attempts registered", async () => {
    // A: attempts 0..5, one infra error → N = 6 (not n = 5); E: one infra error → N = 1, c = 0.
    const row = only(await passK(session.connection, pooled([1], { missingTrials: "fail" })));
    expect([row.tasks, row.tasks_scored]).toEqual([5, 5]);
    expect(row["pass@1"] as number).toBeCloseTo((2 / 6 + 0 + 1 + 1 + 0) / 5, 12);
  });
});

describe("Claw-Eval (score_summary.py)", () => {
  test("hand-checked: every graded trial, any status, threshold 0.75, padding, avg_pass", async () => {
    const recs = [
      // T1: 0.8, 0.7, 0.9 → any ✓, all ✗ (0.7), avg 0.8 ✓
      ...scored({ id: "t1a", task: "T1", attempt: 0 }, "ok", 0.8),
      ...scored({ id: "t1b", task: "T1", attempt: 1 }, "failed", 0.7),
      ...scored({ id: "t1c", task: "T1", attempt: 2 }, "timeout", 0.9),
      // T2: 0.75 (failed status still graded) and an infra error → padded [0.75, 0, 0]: any ✓, all ✗, avg 0.25 ✗
      ...scored({ id: "t2a", task: "T2", attempt: 0 }, "failed", 0.75),
      ...scored({ id: "t2b", task: "T2", attempt: 1 }, "infra_error", 0),
      // T3: four graded trials of 1.0 (a rerun): all ✓, avg 4/3 (sum over all graded / 3)
      ...["a", "b", "c", "d"].flatMap((s, i) => scored({ id: `t3${s}`, task: "T3", attempt: i }, "ok", 1)),
      // T4: only an infra error → a task with no graded trial: everything ✗, avg 0
      ...scored({ id: "t4a", task: "T4", attempt: 0 }, "infra_error", 0),
    ];
    const own = await sessionOf(recs);
    try {
      const row = only(await passK(own.connection, pooled([3], { convention: "claw" })));
      expect([row.tasks, row.tasks_scored, row.threshold]).toEqual([4, 4, 0.75]);
      expect(row["pass@3"]).toBe(3 / 4); // any_pass: T1, T2, T3
      expect(row["pass^3"]).toBe(1 / 4); // all_pass: T3
      expect(row["avg_pass@3"]).toBe(2 / 4); // avg_pass: T1, T3
      expect(row["avg_score@3"] as number).toBeCloseTo((0.8 + 0.25 + 4 / 3 + 0) / 4, 12);
      const ref = clawEval(new Map([["T1", [0.8, 0.7, 0.9]], ["T2", [0.75]], ["T3", [1, 1, 1, 1]], ["T4", []]]), 3);
      expect([row["pass@3"], row["pass^3"], row["avg_pass@3"]]).toEqual([ref.any_pass_rate, ref.all_pass_rate, ref.avg_pass_rate]);
      expect(row.mean_reward as number).toBeCloseTo(ref.overall_avg_score, 12);
      // A threshold given explicitly replaces 0.75.
      const strict = only(await passK(own.connection, pooled([3], { convention: "claw", threshold: 1 })));
      expect([strict["pass@3"], strict["pass^3"]]).toEqual([1 / 4, 1 / 4]);
    } finally {
      own.close();
    }
  });

  test("matches analyze_model on random data with errored and extra trials, for k = 1..4", async () => {
    const next = random(3);
    const recs: Record[] = [];
    const graded = new Map<string, number[]>();
    for (let t = 0; t < 120; t++) {
      const task = `T${t}`;
      graded.set(task, []);
      const trials = Math.floor(next() * 6); // 0..5, around EXPECTED_TRIALS
      for (let a = 0; a <= trials; a++) {
        const errored = next() < 0.15;
        const reward = Math.round(next() * 20) / 20; // 0, 0.05, …, 1: hits 0.75 exactly
        const status = errored ? "infra_error" : (["ok", "failed", "timeout"] as const)[Math.floor(next() * 3)]!;
        recs.push(...scored({ id: `${task}.${a}`, task, attempt: a }, status, errored ? 0 : reward));
        if (!errored) graded.get(task)!.push(reward);
      }
    }
    const own = await sessionOf(recs);
    try {
      const row = only(await passK(own.connection, pooled([1, 2, 3, 4], { convention: "claw" })));
      for (const k of [1, 2, 3, 4]) {
        const ref = clawEval(graded, k);
        expect(row[`pass@${k}`] as number).toBeCloseTo(ref.any_pass_rate, 12);
        expect(row[`pass^${k}`] as number).toBeCloseTo(ref.all_pass_rate, 12);
        expect(row[`avg_pass@${k}`] as number).toBeCloseTo(ref.avg_pass_rate, 12);
        expect(row[`avg_score@${k}`] as number).toBeCloseTo(ref.overall_avg_score, 12);
      }
    } finally {
      own.close();
    }
  });
});

describe("success rule and threshold", () => {
  test("success needs status ok; mean reward scores what pass@1 scores", async () => {
    const own = await sessionOf([
      ...scored({ id: "x0", task: "X", attempt: 0 }, "ok", 1),
      // The harness crashed after solving the task: a failure for pass@k and 0 for mean reward.
      ...scored({ id: "x1", task: "X", attempt: 1 }, "failed", 1),
      ...scored({ id: "x2", task: "X", attempt: 2 }, "timeout", 1),
    ]);
    try {
      const row = only(await passK(own.connection, pooled([1])));
      expect(row["pass@1"]).toBeCloseTo(1 / 3, 12);
      expect(row.mean_reward).toBeCloseTo(1 / 3, 12);
    } finally {
      own.close();
    }
  });

  test("each experiment's recorded threshold applies unless one is given", async () => {
    const loose = { "openforge.dev/pass-threshold": "0.5" };
    const own = await sessionOf([
      ...scored({ id: "x0", task: "X", attempt: 0, labels: loose }, "ok", 0.5),
      ...scored({ id: "x1", task: "X", attempt: 1, labels: loose }, "ok", 0.25),
    ]);
    try {
      const recorded = only(await passK(own.connection, pooled([1])));
      expect([recorded["pass@1"], recorded.threshold]).toEqual([0.5, 0.5]);
      const strict = only(await passK(own.connection, pooled([1], { threshold: 1 })));
      expect([strict["pass@1"], strict.threshold]).toEqual([0, 1]);
      // The override is per query: the next one is back to the recorded threshold.
      expect(only(await passK(own.connection, pooled([1])))["pass@1"]).toBe(0.5);
      expect(recorded.mean_reward).toBeCloseTo(0.375, 12);
    } finally {
      own.close();
    }
  });
});

describe("scope and grouping", () => {
  const runRecords = (run: string, experiment: string, labels: { [key: string]: string }, outcomes: [string, number, "ok" | "failed" | "infra_error"][]) =>
    outcomes.flatMap(([task, attempt, status]) => scored({ id: `${run}.i0.${task}.${attempt}`, task, attempt, experiment, labels: { ...labels, "openforge.dev/run": run } }, status, status === "ok" ? 1 : 0));

  test("runs are told apart by the run label (or the rollout id), scoped and never pooled by default", async () => {
    const own = await sessionOf([
      ...runRecords("q-1", "quick", { "openforge.dev/metrics-k": "1,2" }, [["a", 0, "ok"], ["a", 1, "failed"], ["b", 0, "ok"], ["b", 1, "ok"]]),
      ...runRecords("q-2", "quick", { "openforge.dev/metrics-k": "1,2" }, [["a", 0, "failed"], ["a", 1, "failed"], ["b", 0, "ok"], ["b", 1, "infra_error"]]),
      // No run label: the run comes from the executors' rollout id <run>.i<iteration>.<task>.<attempt>[.r<retry>].
      ...scored({ id: "old-run.i0.a.0", task: "a", experiment: "other" }, "infra_error", 0),
      ...scored({ id: "old-run.i0.a.0.r1", task: "a", experiment: "other" }, "ok", 1),
    ]);
    try {
      const all = await analyze(own.connection, {});
      expect(all.options.ks).toEqual([1, 2]); // the experiments' recorded metrics.k
      expect(all.options.ksFrom).toBe("experiment");
      expect(all.pass.map((r) => [r.experiment, r.run, r.iteration, r.tasks, r.tasks_scored, r["pass@1"]])).toEqual([
        ["other", "old-run", 0, 1, 0, null], // the retry is the one valid trial: n = 1 < k = 2, n/a rather than a silent 0
        ["quick", "q-1", 0, 2, 2, 0.75],
        ["quick", "q-2", 0, 2, 1, 0], // b has one valid trial left
      ]);
      const one = await analyze(own.connection, { scope: { run: "q-1" } });
      expect(one.pass).toEqual([all.pass[1]!]);
      expect(one.runs.map((r) => [r.experiment, r.run, r.rollouts])).toEqual([["quick", "q-1", 4]]);
      expect(one.passByTask.map((r) => [r.task, r["pass@1"], r["pass^2"]])).toEqual([["a", 0.5, 0], ["b", 1, 1]]);
      // Pooling is asked for, never implied.
      const poolRow = only((await analyze(own.connection, { by: [], scope: { experiment: "quick" } })).pass);
      expect(poolRow.rollouts).toBe(8);
    } finally {
      own.close();
    }
  });

  test("tasks whose experiments disagree on the missing-trial convention need a choice", async () => {
    const own = await sessionOf([
      ...runRecords("r-1", "e1", { "openforge.dev/missing-trials": "fail" }, [["a", 0, "ok"]]),
      ...runRecords("r-2", "e2", { "openforge.dev/missing-trials": "exclude" }, [["a", 0, "ok"]]),
    ]);
    try {
      expect(await passK(own.connection, pooled([1], { by: ["run"] }))).toHaveLength(2);
      await expect(passK(own.connection, pooled([1]))).rejects.toThrow(/different missing-trial conventions.*--missing-trials/);
      expect(only(await passK(own.connection, pooled([1], { missingTrials: "exclude" })))["pass@1"]).toBe(1);
    } finally {
      own.close();
    }
  });

  test("by harness and iteration, and by task", async () => {
    const own = await sessionOf([
      ...scored({ id: "h1", task: "T", harness: "codex", iteration: 0, attempt: 0 }, "ok", 1),
      ...scored({ id: "h2", task: "T", harness: "codex", iteration: 0, attempt: 1 }, "failed", 0),
      ...scored({ id: "h3", task: "T", harness: "codex", iteration: 1, attempt: 0 }, "ok", 1),
      ...scored({ id: "h4", task: "T", harness: "claude-code", iteration: 0, attempt: 0 }, "failed", 0),
      ...scored({ id: "h5", task: "S", harness: "claude-code", iteration: 0, attempt: 0 }, "ok", 1),
    ]);
    try {
      const rows = await passK(own.connection, pooled([1], { by: ["harness", "iteration"] }));
      expect(rows.map((r) => [r.harness, r.iteration, r.tasks, r["pass@1"]])).toEqual([
        ["claude-code", 0, 2, 0.5],
        ["codex", 0, 1, 0.5],
        ["codex", 1, 1, 1],
      ]);
      const byTask = await passK(own.connection, pooled([1], { by: ["task"] }));
      expect(byTask.map((r) => [r.task, r["pass@1"]])).toEqual([["S", 1], ["T", 0.5]]);
    } finally {
      own.close();
    }
  });
});
