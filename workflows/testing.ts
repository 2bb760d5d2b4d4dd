/**
 * The workflows area's names that only test code uses outside the area (docs/architecture.md: a
 * face exports what other areas' source uses; tests reach the rest here).
 */
export type { RolloutOutcome } from "./local/rollout.ts";
