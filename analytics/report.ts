/**
 * The HTML report a researcher opens first: which experiment, run, commit, model and date; the
 * pass@k / pass^k curves with the number of tasks each scores; per-task and per-rollout tables
 * (status, reward, calls, tokens, time, drift, forks) linked to each rollout's trajectory page;
 * the failing rollouts with their verifier output; infra errors counted; behaviour metrics with
 * their n; "n/a" wherever there is no data. Self-contained: inline SVG, nothing fetched.
 */
import { basename as pathBasename } from "node:path";
import { writeFile } from "node:fs/promises";
import type { DuckDBConnection } from "@duckdb/node-api";
import { readRecords } from "../records/index.ts";
import type { Record } from "../schemas/index.ts";
import type { Analysis } from "./analysis.ts";
import type { Row } from "./metrics.ts";
import { conventionText, groupColumns, scopeText, taskColumns } from "./summary.ts";
import { barChart, escapeXml, lineChart, palette, type Series } from "./svg.ts";
import { writeRolloutPages, type PageOptions, type PageSummary } from "./viewer/pages.ts";

/** Behaviour shares in the chart, each with the column that holds its n. */
const behaviourMetrics = [
  ["tool_coverage", "tool_coverage_n"],
  ["self_verification", "self_verification_n"],
  ["error_recovery", "error_recovery_n"],
  ["plan_completion", "plan_completion_n"],
  ["ran_checks", "rollouts"],
  ["shell_share", "tool_results"],
] as const;

function num(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

function cell(value: Row[string] | undefined): string {
  if (value === null || value === undefined || (typeof value === "number" && !Number.isFinite(value))) return `<span class="na">n/a</span>`;
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toFixed(3);
  if (Array.isArray(value)) return escapeXml(value.join(", "));
  return escapeXml(String(value));
}

/**
 * An HTML table: numbers right-aligned, missing values as n/a; `render` overrides a column's cell.
 */
function htmlTable(id: string, rows: Row[], columns: string[], render: { [column: string]: (row: Row) => string } = {}): string {
  if (rows.length === 0) return `<p class="na" id="${id}">n/a: no rows</p>`;
  const head = columns.map((c) => `<th>${escapeXml(c)}</th>`).join("");
  const body = rows
    .map((row) => `<tr>${columns.map((c) => `<td class="${typeof row[c] === "number" ? "num" : ""}">${render[c] ? render[c]!(row) : cell(row[c])}</td>`).join("")}</tr>`)
    .join("\n");
  return `<table id="${id}"><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

function groupLabel(row: Row, keys: string[]): string {
  return keys.length === 0 ? "all" : keys.map((key) => String(row[key] ?? "n/a")).join(" · ");
}

/** pass@k (solid) and pass^k (dashed) against k, one colour per group, each named with its task count. */
function passCurveChart(analysis: Analysis): string {
  const { by } = analysis.options;
  const kmax = Math.max(...analysis.options.ks);
  const groups = analysis.passCurve.slice(0, 8);
  const series: Series[] = groups.flatMap((row, i) => {
    const color = palette[i % palette.length]!;
    const label = `${groupLabel(row, by)} (${row.tasks_scored ?? 0} of ${row.tasks ?? 0} tasks)`;
    const at = (metric: string) => Array.from({ length: kmax }, (_, k) => num(row[`${metric}${k + 1}`]));
    return [
      { name: `pass@k ${label}`, values: at("pass@"), color },
      { name: `pass^k ${label}`, values: at("pass^"), color, dashed: true },
    ];
  });
  const more = analysis.passCurve.length > groups.length ? ` (first ${groups.length} of ${analysis.passCurve.length} groups)` : "";
  return lineChart({ id: "pass-curve", title: `pass@k (solid) and pass^k (dashed) by k${more}`, categories: Array.from({ length: kmax }, (_, k) => `k=${k + 1}`), series, yMax: 1 });
}

/** Only when there is a trend to see: more than one iteration. */
function trendCharts(analysis: Analysis): string[] {
  const rows = analysis.passByIterationHarness;
  const iterations = [...new Set(rows.map((r) => Number(r.iteration)))].sort((a, b) => a - b);
  if (iterations.length < 2) return [];
  const harnesses = [...new Set(rows.map((r) => String(r.harness)))].sort();
  return analysis.options.ks.map((k) => {
    const series: Series[] = harnesses.flatMap((harness, i) => {
      const at = (metric: string) => iterations.map((it) => num(rows.find((r) => r.harness === harness && Number(r.iteration) === it)?.[metric]));
      const color = palette[i % palette.length]!;
      return [
        { name: `${harness} pass@${k}`, values: at(`pass@${k}`), color },
        { name: `${harness} pass^${k}`, values: at(`pass^${k}`), color, dashed: true },
      ];
    });
    return lineChart({ id: `pass-trend-${k}`, title: `pass@${k} (solid) and pass^${k} (dashed) by iteration and harness`, categories: iterations.map((i) => `iter ${i}`), series, yMax: 1 });
  });
}

function behaviourChart(analysis: Analysis): string {
  const rows = analysis.behaviourByHarness;
  const series: Series[] = rows.map((r) => ({ name: `${String(r.harness)} (${r.rollouts} rollouts)`, values: behaviourMetrics.map(([m]) => num(r[m])) }));
  return barChart({ id: "behaviour", title: "Behaviour metrics by harness (shares, 0–1; n in the table)", categories: behaviourMetrics.map(([m]) => m.replaceAll("_", " ")), series, yMax: 1 });
}

function rewardChart(analysis: Analysis): string {
  const bins = analysis.rewardHistogram;
  return barChart({
    id: "reward-distribution",
    title: "Reward distribution (valid rollouts)",
    categories: bins.map((b) => `${num(b.lo)?.toFixed(2)}–${num(b.hi)?.toFixed(2)}`),
    series: [{ name: "rollouts", values: bins.map((b) => num(b.rollouts)) }],
    yLabel: "rollouts",
  });
}

function tokenChart(analysis: Analysis): string {
  const rows = analysis.tokenBudgets;
  const metrics = ["mean_prompt_tokens", "mean_completion_tokens", "p50_tokens", "p95_tokens"];
  return barChart({
    id: "token-budgets",
    title: "Token budgets per rollout by harness",
    categories: rows.map((r) => String(r.harness)),
    series: metrics.map((m) => ({ name: m.replaceAll("_", " "), values: rows.map((r) => num(r[m])) })),
    yLabel: "tokens",
  });
}

// Marks each chart with its laid-out size, so a headless browser's DOM dump shows it was drawn.
const renderCheck = `document.querySelectorAll("svg.chart").forEach(function (svg) {
  var box = svg.getBBox();
  svg.setAttribute("data-rendered", box.width > 0 && box.height > 0 ? "true" : "false");
  svg.setAttribute("data-marks", String(svg.querySelectorAll(".bar, .line, .point").length));
});`;

const date = (ms: unknown) => (typeof ms === "number" && ms > 0 ? new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC") : "n/a");

export type ReportPages = { dir: string; byRollout: Map<string, PageSummary> };

/**
 * Renders the analysis as one HTML page; with `pages`, rollout ids link to their trajectory pages
 * and the rollout table shows each trajectory's samples, forks and drift.
 *
 * @example
 * await Bun.write("report.html", renderReport(analysis));
 */
export function renderReport(analysis: Analysis, pages?: ReportPages, title = "OpenForge report"): string {
  const t = analysis.totals;
  const link = (row: Row) => {
    const id = String(row.rollout_id);
    const page = pages?.byRollout.get(id);
    return page ? `<a href="${escapeXml(`${pathBasename(pages!.dir)}/${page.file}`)}">${escapeXml(id)}</a>` : escapeXml(id);
  };
  const rollouts = analysis.rollouts.map((row) => {
    const page = pages?.byRollout.get(String(row.rollout_id));
    return { ...row, samples: page?.samples ?? null, forks: page?.forks ?? null, drift_tokens: page?.drift_tokens ?? null, broken_calls: page?.broken ?? null };
  });
  const rolloutColumns = ["rollout_id", "task_id", "attempt", "harness", "status", "reward", "success", "calls", "total_tokens", "duration_ms", "model_ms", "tool_calls", "tool_errors", "samples", "forks", "drift_tokens", "broken_calls"];
  const failing = analysis.failing.map(
    (row) => `<div class="failing" data-status="${escapeXml(String(row.status))}">
<h4>${link(row)} · task ${escapeXml(String(row.task_id))} · attempt ${cell(row.attempt)} · <b>${escapeXml(String(row.status))}</b> · reward ${cell(row.reward)}</h4>
${row.error ? `<p class="error">${escapeXml(String(row.error))}</p>` : ""}
<pre class="verifier-output">${row.verifier_output ? escapeXml(String(row.verifier_output)) : "(no verifier output)"}</pre></div>`,
  );
  const runs = analysis.runs.map((r) => ({ ...r, started: date(r.started_unix_ms), finished: date(r.finished_unix_ms) }));
  const behaviourColumns = [...analysis.options.by, "rollouts", "tool_coverage", "tool_coverage_n", "self_verification", "self_verification_n", "error_recovery", "error_recovery_n", "plan_completion", "plan_completion_n", "ran_checks", "error_signal_share", "tool_results", "turns", "tokens", "latency_ms", "ttft_ms"];
  const passCharts = [passCurveChart(analysis), ...trendCharts(analysis)];
  const otherCharts = [behaviourChart(analysis), rewardChart(analysis), tokenChart(analysis)];
  const card = (label: string, value: unknown, id: string) => `<div class="card" id="${id}"><div class="value">${cell(value as Row[string])}</div><div>${escapeXml(label)}</div></div>`;
  const scored = analysis.pass.reduce((s, r) => s + Number(r.tasks_scored ?? 0), 0);
  const tasks = analysis.pass.reduce((s, r) => s + Number(r.tasks ?? 0), 0);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeXml(title)}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
svg.chart { border: 1px solid #eee; background: #fff; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0 16px; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.na { color: #999; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px; min-width: 110px; }
.card .value { font-size: 22px; font-weight: bold; }
#infra-errors .value { color: #b00; }
pre { background: #f7f7f7; padding: 8px; white-space: pre-wrap; word-break: break-word; font-size: 12px; max-height: 300px; overflow: auto; }
.error { color: #b00; }
.failing h4 { margin: 12px 0 2px; }
</style></head>
<body>
<header id="report-header">
<h1>${escapeXml(title)}</h1>
${htmlTable("runs", runs, ["experiment", "run", "commit", "model", "harness", "started", "finished", "rollouts", "tasks", "iterations"])}
<p id="conventions">Scope: ${escapeXml(scopeText(analysis))}. ${escapeXml(conventionText(analysis))}. Definitions: docs/metrics.md.</p>
</header>
<section class="cards" id="summary">
${card("rollouts", t.rollouts, "rollout-count")}
${card("finished", t.finished, "finished-count")}
${card("infra errors (not scored)", t.infra_errors, "infra-errors")}
${card("unfinished", t.unfinished, "unfinished-count")}
${card("tasks scored", `${scored} of ${tasks}`, "tasks-scored")}
${card("model calls", t.calls, "call-count")}
</section>
<h2>pass@k / pass^k</h2>
<div class="charts">${passCharts.join("\n")}</div>
${htmlTable("pass-table", analysis.pass, groupColumns(analysis))}
<h2>Per task</h2>
${htmlTable("task-table", analysis.passByTask, taskColumns(analysis))}
<h2>Rollouts</h2>
<p>${analysis.rollouts.length} of ${analysis.rolloutCount} rollout(s) listed; each id opens its trajectory (calls, messages, tool calls and results, tokens by mask and logprob, drift and forks, timings).</p>
${htmlTable("rollout-table", rollouts, rolloutColumns, { rollout_id: link })}
<h2>Failing rollouts</h2>
<p>${analysis.failing.length} rollout(s) that are not successes (infra errors first, then by task), with what the verifier said.</p>
<div id="failing">${failing.join("\n") || `<p class="na">n/a: every rollout succeeded</p>`}</div>
<h2>Behaviour</h2>
${htmlTable("behaviour-table", analysis.behaviour, behaviourColumns)}
<div class="charts">${otherCharts.join("\n")}</div>
${htmlTable("token-table", analysis.tokenBudgets, Object.keys(analysis.tokenBudgets[0] ?? { harness: null }))}
<script type="application/json" id="analysis">${JSON.stringify(analysis).replaceAll("<", "\\u003c")}</script>
<script>${renderCheck}</script>
</body></html>
`;
}

export type WriteReportOptions = PageOptions & {
  /** Where the rollouts' records come from (default: the log in `dataDir`). */
  records?: AsyncIterable<Record | { record: Record }>;
};

/**
 * Writes the report to `path` and a trajectory page per listed rollout into `<path>.rollouts/`.
 *
 * @example
 * await writeReport(connection, "data", analysis, "report.html")
 */
export async function writeReport(
  _connection: DuckDBConnection,
  dataDir: string,
  analysis: Analysis,
  path: string,
  options: WriteReportOptions = {},
): Promise<{ pages: number; pagesDir: string; byRollout: Map<string, PageSummary> }> {
  const dir = `${path.replace(/\.html?$/i, "")}.rollouts`;
  const ids = new Set(analysis.rollouts.map((row) => String(row.rollout_id)));
  const byRollout = await writeRolloutPages(options.records ?? readRecords(dataDir), ids, dir, { ...options, reportHref: `../${pathBasename(path)}` });
  await writeFile(path, renderReport(analysis, { dir, byRollout }));
  return { pages: byRollout.size, pagesDir: dir, byRollout };
}
