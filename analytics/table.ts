/** Plain-text tables for the terminal. */
import type { Row } from "./metrics.ts";

function cell(value: Row[string]): string {
  if (value === null || value === undefined) return "n/a";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toFixed(3);
  if (Array.isArray(value)) return value.join(",");
  return String(value);
}

/**
 * Formats rows as an aligned table (numbers right-aligned, no value as "n/a").
 *
 * @example
 * formatTable([{ harness: "codex", "pass@1": 0.4 }])
 * // harness  pass@1
 * // codex     0.400
 */
export function formatTable(rows: Row[], columns: string[] = Object.keys(rows[0] ?? {})): string {
  if (rows.length === 0) return "(no rows)";
  const cells = rows.map((row) => columns.map((column) => cell(row[column] ?? null)));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((r) => r[i]!.length)));
  const numeric = columns.map((column) => rows.every((row) => row[column] === null || typeof row[column] === "number"));
  const line = (values: string[]) => values.map((v, i) => (numeric[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!))).join("  ").trimEnd();
  return [line(columns), line(widths.map((w) => "-".repeat(w))), ...cells.map(line)].join("\n");
}
