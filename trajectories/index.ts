/**
 * Trajectories: recorded calls → token-level training samples (docs/trajectories.md), and their
 * export for veRL (docs/verl.md). Used by the proxy's trajectory route, `forge export`, analytics
 * and the veRL loop.
 */
export { assembleTrajectory } from "./assemble.ts";
export { collectRollouts } from "./resolve.ts";
export { requestMessages, responseMessage } from "./messages.ts";
export type { ChatMessage } from "./messages.ts";
export { exportTrajectories } from "./export.ts";
export { firstGroupRows, groupDatasetPath } from "./export-files.ts";
export { trajectoryOf, trajectoryWithImages } from "./trajectory-of.ts";
export { callImageRefs } from "./images.ts";
export { verlColumns } from "./row.ts";
export { OVERLONG_POLICIES, selectForTraining } from "./select.ts";
export type { OverlongPolicy, TrainingLimits } from "./select.ts";
export { withThinkDefaults } from "./types.ts";
export type { RolloutTrajectory } from "./types.ts";
