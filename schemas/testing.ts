/**
 * The schemas' names that only test code uses outside the area (docs/architecture.md: a face
 * exports what other areas' source uses; tests reach the rest here).
 */
export { ExperimentSchema, HARNESS_NAMES } from "./experiment.ts";
export { parsePolicyScriptText } from "./policy-script.ts";
