/**
 * pass@k and pass^k per task, with the unbiased estimators (Chen et al. 2021 for pass@k:
 * 1 − C(n−c, k)/C(n, k); pass^k = C(c, k)/C(n, k), the chance that k draws all pass), used by
 * `forge run` when the analytics area is not available. infra_error rollouts are not scored.
 */
import type { RolloutOutcome } from "./rollout.ts";

/** C(a, k) / C(b, k) as a running product, stable for large n. */
function ratio(a: number, b: number, k: number): number {
  if (a < k) return 0;
  let r = 1;
  for (let i = 0; i < k; i++) r *= (a - i) / (b - i);
  return r;
}

/**
 * @example
 * passAtK(4, 1, 2); // 0.5
 */
export function passAtK(n: number, c: number, k: number): number {
  if (k > n) return Number.NaN;
  return 1 - ratio(n - c, n, k);
}

/**
 * @example
 * passHatK(4, 2, 2); // 1/6
 */
export function passHatK(n: number, c: number, k: number): number {
  if (k > n) return Number.NaN;
  return ratio(c, n, k);
}

export type PassRow = { task_id: string; n: number; passed: number; pass_at: Record<number, number>; pass_hat: Record<number, number> };

/**
 * @example
 * passTable(outcomes, [1, 2], 1).at(-1)!.task_id; // "(mean)"
 */
export function passTable(outcomes: RolloutOutcome[], ks: number[], threshold: number): PassRow[] {
  const byTask = new Map<string, { n: number; c: number }>();
  for (const o of outcomes) {
    if (o.status === "infra_error") continue;
    const entry = byTask.get(o.task_id) ?? { n: 0, c: 0 };
    entry.n++;
    if (o.reward >= threshold) entry.c++;
    byTask.set(o.task_id, entry);
  }
  const rows: PassRow[] = [...byTask.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([task_id, { n, c }]) => ({
      task_id,
      n,
      passed: c,
      pass_at: Object.fromEntries(ks.map((k) => [k, passAtK(n, c, k)])),
      pass_hat: Object.fromEntries(ks.map((k) => [k, passHatK(n, c, k)])),
    }));
  if (rows.length > 0) {
    const mean = (pick: (row: PassRow) => number) => {
      const values = rows.map(pick).filter((v) => !Number.isNaN(v));
      return values.length ? values.reduce((a, b) => a + b, 0) / values.length : Number.NaN;
    };
    rows.push({
      task_id: "(mean)",
      n: rows.reduce((a, r) => a + r.n, 0),
      passed: rows.reduce((a, r) => a + r.passed, 0),
      pass_at: Object.fromEntries(ks.map((k) => [k, mean((r) => r.pass_at[k]!)])),
      pass_hat: Object.fromEntries(ks.map((k) => [k, mean((r) => r.pass_hat[k]!)])),
    });
  }
  return rows;
}

/** A plain-text table of passTable's rows. */
export function formatPassTable(rows: PassRow[], ks: number[]): string {
  const header = ["task", "n", "passed", ...ks.map((k) => `pass@${k}`), ...ks.map((k) => `pass^${k}`)];
  const cells = rows.map((r) => [r.task_id, String(r.n), String(r.passed), ...ks.map((k) => fmt(r.pass_at[k]!)), ...ks.map((k) => fmt(r.pass_hat[k]!))]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...cells.map(line)].join("\n");
}

const fmt = (v: number) => (Number.isNaN(v) ? "-" : v.toFixed(3));
