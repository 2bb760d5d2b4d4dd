/**
 * The simulator's names that only test code uses outside the area (docs/architecture.md: a face
 * exports what other areas' source uses; tests reach the rest here).
 */
export { createPolicySimulator } from "./app.ts";
export type { StartedPolicySimulator } from "./server.ts";
export type { PolicySimulatorOptions } from "./options.ts";
export type { SimSample } from "./types.ts";
