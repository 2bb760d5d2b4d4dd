/**
 * Trajectories: recorded calls → token-level training samples (docs/trajectories.md), and their
 * export for veRL (docs/verl.md). Used by the proxy's trajectory route, `forge export`, analytics
 * and the veRL loop.
 */
export { assembleTrajectory, exclusionOf, groupOf, rolloutStatusName } from "./assemble.ts";
export { collectRollouts, promptResolver, resolvePrompts } from "./resolve.ts";
export type { CollectedRollout, CollectStats } from "./resolve.ts";
export { matchWithStrippedThink } from "./align.ts";
export { requestMessages, responseMessage } from "./messages.ts";
export type { ChatMessage, ToolCall } from "./messages.ts";
export { exportTrajectories } from "./export.ts";
export { blobDirPath, firstGroupRows, groupDatasetPath, manifestPath, sidecarPath } from "./export-files.ts";
export type { ExportFormat, ExportOptions } from "./export-options.ts";
export type { ExportManifest } from "./export-manifest.ts";
export { trajectoryOf, trajectoryWithImages } from "./trajectory-of.ts";
export type { TrajectoryWithImages } from "./trajectory-of.ts";
export { bodyImageRefs, callImageRefs } from "./images.ts";
export { verlColumns } from "./row.ts";
export { exportCommand } from "./cli.ts";
export { QWEN3_THINK, withThinkDefaults } from "./types.ts";
export { AUXILIARY_FINGERPRINTS, fingerprintsFor, matchFingerprint } from "./auxiliary.ts";
export type { AuxiliaryFingerprint, AuxiliaryKind } from "./auxiliary.ts";
export { continuesConversation, requestView } from "./request-view.ts";
export type { RequestView } from "./request-view.ts";
export type * from "./types.ts";
