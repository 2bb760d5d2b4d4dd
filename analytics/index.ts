/**
 * Analytics: parquet compaction of the segment log, DuckDB views and metric macros,
 * grouped metrics, reports and the trajectory viewer. Other areas import from here only.
 */
export { analyzeCommand, sqlCommand } from "./cli.ts";
export { analyze, defaultGroups, latestRun, recordedKs, type Analysis, type AnalysisOptions, type AnalysisRequest } from "./analysis.ts";
export { compactLog, compactRecords, listSegments, readManifest, recorderSegmentReader } from "./compact.ts";
export type { CompactOptions, CompactProgress, CompactSummary, Manifest, SegmentReader } from "./compact.ts";
export { extractCall, type CallView, type ToolResult, type ToolUse } from "./extract/index.ts";
export { classifyTool, isShellTool, patchPaths, planStateOf, resultError, scriptFacts, toolFacts, type ErrorSignal, type ResultError, type ToolFacts, type ToolKind } from "./classify.ts";
export { parseShell, type ParsedScript, type SimpleCommand } from "./shell.ts";
export { LABEL_COMMIT, LABEL_METRICS_K, LABEL_MISSING_TRIALS, LABEL_MODEL, LABEL_PASS_THRESHOLD, LABEL_ROLLOUTS_K, LABEL_RUN, runLabels, type RunLabelInput } from "./labels.ts";
export { macroSql } from "./macros.ts";
export { behaviour, groupKeys, parseGroupKeys, passK, passKSql, queryRows, rewardHistogram, scopeWhere, tokenBudgets } from "./metrics.ts";
export type { Convention, GroupKey, MissingTrials, Row, Scope } from "./metrics.ts";
export { renderReport, writeReport, type WriteReportOptions } from "./report.ts";
export { renderRolloutPage, type ViewerInput } from "./viewer/page.ts";
export { pageName, writeRolloutPages, type PageOptions, type PageSummary } from "./viewer/pages.ts";
export { idTexter, tokenTexter, type TokenTexter } from "./viewer/token-text.ts";
export { conventionText, formatPassSummary, scopeText } from "./summary.ts";
export { openAnalytics, writeDatabase, type AnalyticsSession } from "./session.ts";
export { defineViews, viewSql } from "./views.ts";
