/**
 * The self-contained HTML report: inline SVG charts, tables, the analysis as embedded JSON.
 * Nothing is fetched at view time.
 */
import type { Analysis } from "./analysis.ts";
import type { Row } from "./metrics.ts";
import { barChart, escapeXml, lineChart, type Series } from "./svg.ts";
import { formatTable } from "./table.ts";

const behaviourMetrics = ["tool_coverage", "self_verification", "error_recovery", "plan_completion", "shell_share"] as const;

function label(row: Row, keys: string[]): string {
  return keys.length === 0 ? "all" : keys.map((key) => String(row[key] ?? "–")).join(" · ");
}

function num(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

function passTrendChart(analysis: Analysis, k: number): string {
  const rows = analysis.passByIterationHarness;
  const iterations = [...new Set(rows.map((r) => Number(r.iteration)))].sort((a, b) => a - b);
  const harnesses = [...new Set(rows.map((r) => String(r.harness)))].sort();
  const series: Series[] = harnesses.flatMap((harness) => {
    const at = (metric: string) => iterations.map((it) => num(rows.find((r) => r.harness === harness && Number(r.iteration) === it)?.[metric]));
    return [
      { name: `${harness} pass@${k}`, values: at(`pass@${k}`) },
      { name: `${harness} pass^${k}`, values: at(`pass^${k}`), dashed: true },
    ];
  });
  return lineChart({ id: `pass-trend-${k}`, title: `pass@${k} (solid) and pass^${k} (dashed) by iteration and harness`, categories: iterations.map((i) => `iter ${i}`), series, yMax: 1 });
}

function passGroupChart(analysis: Analysis): string {
  const keys = analysis.options.by;
  const series: Series[] = analysis.options.ks.flatMap((k) => [
    { name: `pass@${k}`, values: analysis.pass.map((r) => num(r[`pass@${k}`])) },
    { name: `pass^${k}`, values: analysis.pass.map((r) => num(r[`pass^${k}`])) },
  ]);
  return barChart({ id: "pass-groups", title: `pass@k and pass^k by ${keys.join(", ") || "all"}`, categories: analysis.pass.map((r) => label(r, keys)), series, yMax: 1 });
}

function behaviourChart(analysis: Analysis): string {
  const rows = analysis.behaviourByHarness;
  const series: Series[] = rows.map((r) => ({ name: String(r.harness), values: behaviourMetrics.map((m) => num(r[m])) }));
  return barChart({ id: "behaviour", title: "Behaviour metrics by harness (shares, 0–1)", categories: behaviourMetrics.map((m) => m.replace("_", " ")), series, yMax: 1 });
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

/**
 * Renders the analysis as one HTML page.
 *
 * @example
 * await Bun.write("report.html", renderReport(analysis));
 */
export function renderReport(analysis: Analysis, title = "OpenForge analysis"): string {
  const charts = [
    ...analysis.options.ks.map((k) => passTrendChart(analysis, k)),
    passGroupChart(analysis),
    behaviourChart(analysis),
    rewardChart(analysis),
    tokenChart(analysis),
  ];
  const section = (heading: string, rows: Row[]) => `<h2>${escapeXml(heading)}</h2><pre>${escapeXml(formatTable(rows))}</pre>`;
  const { convention, threshold, ks, by } = analysis.options;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeXml(title)}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
svg.chart { border: 1px solid #eee; background: #fff; }
pre { background: #f7f7f7; padding: 8px; overflow-x: auto; font-size: 12px; }
</style></head>
<body>
<h1>${escapeXml(title)}</h1>
<p>Convention: <b>${escapeXml(convention)}</b>, k = ${ks.join(", ")}, success threshold ${threshold}, grouped by ${escapeXml(by.join(", ") || "nothing")}.
Infra-error rollouts are excluded from n. Definitions: docs/metrics.md.</p>
<div class="charts">${charts.join("\n")}</div>
${section("Totals", [analysis.totals])}
${section("pass@k / pass^k", analysis.pass)}
${section("Behaviour", analysis.behaviour)}
${section("Token budgets", analysis.tokenBudgets)}
<script type="application/json" id="analysis">${JSON.stringify(analysis).replaceAll("<", "\\u003c")}</script>
<script>${renderCheck}</script>
</body></html>
`;
}

/**
 * Writes the report to `path`.
 *
 * @example
 * await writeReport(connection, "data", analysis, "report.html")
 */
export async function writeReport(_connection: unknown, _dataDir: string, analysis: Analysis, path: string): Promise<{ pages: number; pagesDir: string }> {
  await Bun.write(path, renderReport(analysis));
  return { pages: 0, pagesDir: path };
}
