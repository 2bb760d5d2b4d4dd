/**
 * The proxy area: the recording proxy — protocol front doors (`doors/`), engine adapters
 * (`engines/`: how each inference engine is asked for ids, detected and given new weights), token capture and call
 * recording (`capture/`), the upstream client, rollout state and the control API. It writes
 * through the records area; it reads trajectories only to serve a rollout's trajectory
 * (`GET /control/rollouts/:id/trajectory`, routes/control.ts), and never imports the simulator
 * or workflows. Other areas import from here only.
 */
export { createProxy, type Proxy, type ProxyState } from "./app.ts";
export { startProxy, parseListen, type StartedProxy } from "./server.ts";
export { DEFAULTS as PROXY_DEFAULTS, type ProxyOptions } from "./options.ts";
export { DEFAULT_FRONT_DOORS, chatFrontDoor, completionsFrontDoor, translatedFrontDoor, type FrontDoor, type PreparedCall, type StreamTranslator, type TranslatedCall } from "./doors/index.ts";
export { runModelCall, type PipelineContext } from "./doors/index.ts";
export { ProxyHttpError, openAiErrorBody } from "./errors.ts";
export { keySha256, newApiKey } from "./state/keys.ts";
export type { EngineAdapter } from "./engines/adapter.ts";
export { adapterFor } from "./engines/adapters.ts";
export { ENGINE_SETTINGS, engineName, type EngineInfo, type EngineKind, type EngineSetting } from "./engines/kinds.ts";
export { detectEngine, type Detection } from "./engines/detect.ts";
export { MINIMUM_TRAIN_VERSION, PINNED_VERSIONS, atLeast } from "./engines/versions.ts";
export { vllmTokenCompletionRequest } from "./engines/vllm.ts";
export { createTokenIn, DEFAULT_MAX_HELD_TOKENS, type TokenIn, type TokenInOptions } from "./token-in/index.ts";
export { tokenInOptions, TokenInSettingsError, type TokenInSettings } from "./token-in/spec.ts";
export { sglangGenerateRequest, type SglangSamplingParams } from "./engines/sglang.ts";
export { loadCalls, loadCheckpoint, servedWeights, versionCall, WeightSyncError, type EngineCall, type ServedWeights } from "./engines/weight-sync.ts";
