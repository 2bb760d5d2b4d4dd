/**
 * The proxy area: the recording proxy (front doors, upstream client, control API), the
 * recorder (segment log) and the policy simulator. Other areas import from here only.
 */
export { createProxy, type Proxy, type ProxyState } from "./app.ts";
export { startProxy, parseListen, type StartedProxy } from "./server.ts";
export { DEFAULTS as PROXY_DEFAULTS, type ProxyOptions } from "./options.ts";
export { DEFAULT_FRONT_DOORS, chatFrontDoor, completionsFrontDoor, translatedFrontDoor, type FrontDoor, type PreparedCall, type TranslatedCall } from "./frontdoors/index.ts";
export { runModelCall, type PipelineContext } from "./frontdoors/pipeline.ts";
export { upstreamRequestOf } from "./record/upstream-request.ts";
export { ProxyHttpError, openAiErrorBody } from "./errors.ts";
export { keySha256, newApiKey } from "./state/keys.ts";
export { fullPrompt, promptDelta, type PastCall } from "./capture/delta.ts";
export * from "./recorder/index.ts";
export * from "./simulator/index.ts";
export * from "./trajectory/index.ts";
