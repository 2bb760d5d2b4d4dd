/**
 * Analytics: parquet compaction of the segment log, DuckDB views and metric macros,
 * grouped metrics, reports and the trajectory viewer. Other areas import from here only.
 */
export { analyze } from "./analysis.ts";
export { runLabels } from "./labels.ts";
export { writeReport } from "./report.ts";
export { formatPassSummary } from "./summary.ts";
export { openAnalytics } from "./session.ts";
