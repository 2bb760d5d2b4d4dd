/**
 * The proxy area: the recording proxy — protocol front doors (`doors/`), engine adapters
 * (`engines/`: how each inference engine is asked for ids, detected and given new weights), token capture and call
 * recording (`capture/`), the upstream client, rollout state and the control API. It writes
 * through the records area; only the control API's trajectory route reads trajectories/ (loaded
 * on first use), and it never imports the simulator. Other areas import from here only; tests
 * reach createProxy and the engine request builders through proxy/testing.ts.
 */
export { startProxy } from "./server.ts";
export { detectEngine } from "./engines/detect.ts";
export type { TokenInOptions } from "./token-in/index.ts";
export { tokenInOptions } from "./token-in/spec.ts";
export { loadCheckpoint, servedWeights, versionCall, WeightSyncError, type ServedWeights } from "./engines/weight-sync.ts";
