/**
 * Analytics: parquet compaction of the segment log, DuckDB views and metric macros,
 * grouped metrics, reports. Other areas import from here only.
 */
export { analyzeCommand } from "./cli.ts";
export { analyze, type Analysis, type AnalysisOptions } from "./analysis.ts";
export { compactLog, compactRecords, listSegments, readManifest, recorderSegmentReader } from "./compact.ts";
export type { CompactOptions, CompactProgress, CompactSummary, Manifest, SegmentReader } from "./compact.ts";
export { extractCall, parseSse, type CallView, type ToolResult, type ToolUse } from "./extract/index.ts";
export { classifyTool, isShellTool, planStateOf, resultLooksLikeError, type ToolKind } from "./classify.ts";
export { macroSql } from "./macros.ts";
export { behaviour, groupKeys, parseGroupKeys, passK, passKSql, queryRows, rewardHistogram, tokenBudgets } from "./metrics.ts";
export type { Convention, GroupKey, Row } from "./metrics.ts";
export { renderReport } from "./report.ts";
export { openAnalytics, writeDatabase, type AnalyticsSession } from "./session.ts";
export { defineViews, viewSql } from "./views.ts";
