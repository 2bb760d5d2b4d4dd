/**
 * Precision and recall of each behaviour signal on the labelled set (set.ts), measured through
 * the whole analytics path: the trajectories become ModelCall records in their protocol's shape,
 * are compacted to parquet and read back through the views `forge analyze` uses.
 *
 *   bun analytics/labelled/evaluate.ts [--verbose]    prints the table docs/metrics.md shows
 */
import { rm } from "node:fs/promises";
import { episode, scored } from "../../../analytics/testing.ts";
import { queryRows, type Row } from "../../../analytics/metrics.ts";
import { openAnalytics } from "../../../analytics/session.ts";
import { fakeLog } from "../../../analytics/testing.ts";
import { labelledSet, type LabelledTrajectory } from "./set.ts";

export type Score = { metric: string; items: number; tp: number; fp: number; fn: number; precision: number | null; recall: number | null; misses: string[] };

type Counter = { items: number; tp: number; fp: number; fn: number; misses: string[] };

function counter(): Counter {
  return { items: 0, tp: 0, fp: 0, fn: 0, misses: [] };
}

function count(c: Counter, predicted: boolean, actual: boolean, what: string): void {
  c.items++;
  if (predicted && actual) c.tp++;
  else if (predicted) {
    c.fp++;
    c.misses.push(`FP ${what}`);
  } else if (actual) {
    c.fn++;
    c.misses.push(`FN ${what}`);
  }
}

const keyOf = (row: Row) => (Number(row.occurrence) > 0 ? `${row.tool_call_id}#${row.occurrence}` : String(row.tool_call_id));

/**
 * Runs the labelled set through analytics and scores each signal.
 *
 * @example
 * const scores = await evaluateLabelledSet();
 * scores.find((s) => s.metric === "tool error")!.precision // 0.9…
 */
export async function evaluateLabelledSet(set: LabelledTrajectory[] = labelledSet): Promise<Score[]> {
  const log = await fakeLog();
  await log.addSegment(set.flatMap((t) => [...scored({ id: t.id, task: t.id, harness: t.harness }, "ok", 1), ...episode(t.id, t.protocol, t.tools, t.turns, t.stream ?? false)]));
  const session = await openAnalytics(log.dir, { readSegment: log.readSegment });
  try {
    const calls = await queryRows(session.connection, "SELECT rollout_id, tool_call_id, occurrence, kind, runs_check, has_result, is_error FROM tool_calls ORDER BY rollout_id, ordinal");
    const errors = await queryRows(session.connection, "SELECT rollout_id, tool_call_id, occurrence, recovered FROM tool_errors");
    const rollouts = new Map(
      (await queryRows(session.connection, "SELECT rollout_id, edited, self_verified, plan_items, plan_items_evidenced, tools_used, capability_tools_offered FROM rollout_behaviour")).map((r) => [
        String(r.rollout_id),
        r,
      ]),
    );
    const c = { error: counter(), edit: counter(), check: counter(), verified: counter(), recovered: counter(), plan: counter(), coverage: counter() };
    for (const t of set) {
      const labels = t.labels;
      const own = calls.filter((r) => r.rollout_id === t.id);
      const recovered = new Set(errors.filter((r) => r.rollout_id === t.id && r.recovered).map(keyOf));
      const predictedErrors = new Set(own.filter((r) => r.is_error === true).map(keyOf));
      for (const row of own) {
        const key = keyOf(row);
        const what = `${t.id} ${key}`;
        if (row.has_result) count(c.error, row.is_error === true, labels.errors.includes(key), what);
        // A file written: an edit whose result does not report an error (as the views count it).
        count(c.edit, row.kind === "edit" && row.is_error !== true, labels.edits.includes(key), what);
        count(c.check, row.runs_check === true, labels.checks.includes(key), what);
        if (predictedErrors.has(key) || labels.errors.includes(key)) count(c.recovered, recovered.has(key), labels.recovered.includes(key), what);
      }
      const r = rollouts.get(t.id);
      if (!r) throw new Error(`labelled set: ${t.id} has no rollout_behaviour row`);
      if (labels.verified !== null || r.edited) count(c.verified, r.self_verified === true, labels.verified === true, t.id);
      if (labels.evidenced !== undefined || r.plan_items !== null) {
        const predicted = Number(r.plan_items_evidenced ?? 0);
        const actual = labels.evidenced ?? 0;
        c.plan.items++;
        c.plan.tp += Math.min(predicted, actual);
        if (predicted > actual) c.plan.misses.push(`FP ${t.id} ${predicted - actual} item(s)`);
        if (actual > predicted) c.plan.misses.push(`FN ${t.id} ${actual - predicted} item(s)`);
        c.plan.fp += Math.max(0, predicted - actual);
        c.plan.fn += Math.max(0, actual - predicted);
      }
      const used = new Set((r.tools_used as string[] | null) ?? []);
      for (const tool of (r.capability_tools_offered as string[] | null) ?? []) count(c.coverage, used.has(tool), labels.used.includes(tool), `${t.id} ${tool}`);
    }
    const names: [keyof typeof c, string][] = [
      ["error", "tool error"],
      ["edit", "edit (files written)"],
      ["check", "the task's checks run"],
      ["verified", "self-verification"],
      ["recovered", "error recovery"],
      ["plan", "plan steps with evidence"],
      ["coverage", "tool coverage (tools used)"],
    ];
    return names.map(([key, metric]) => {
      const { items, tp, fp, fn, misses } = c[key];
      return { metric, items, tp, fp, fn, precision: tp + fp ? tp / (tp + fp) : null, recall: tp + fn ? tp / (tp + fn) : null, misses };
    });
  } finally {
    session.close();
    await rm(log.dir, { recursive: true, force: true });
  }
}

/** The markdown table docs/metrics.md shows. */
export function formatScores(scores: Score[], set: LabelledTrajectory[] = labelledSet): string {
  const protocols = ["chat", "responses", "anthropic"].map((p) => `${set.filter((t) => t.protocol === p).length} ${p}`).join(", ");
  const f = (x: number | null) => (x === null ? "n/a" : x.toFixed(2));
  return [
    `${set.length} trajectories (${protocols}); ${set.filter((t) => t.note.startsWith("hard")).length} marked hard.`,
    "",
    "| signal | items | TP | FP | FN | precision | recall |",
    "|---|---:|---:|---:|---:|---:|---:|",
    ...scores.map((s) => `| ${s.metric} | ${s.items} | ${s.tp} | ${s.fp} | ${s.fn} | ${f(s.precision)} | ${f(s.recall)} |`),
  ].join("\n");
}

if (import.meta.main) {
  const scores = await evaluateLabelledSet();
  console.log(formatScores(scores));
  if (process.argv.includes("--verbose")) for (const s of scores) for (const miss of s.misses) console.log(`${s.metric}: ${miss}`);
}
