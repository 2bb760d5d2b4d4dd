/**
 * The policy simulator: an OpenAI-compatible server that behaves like vLLM serving Qwen3
 * (real token ids, logprobs, tool calls), playing scripted policies. It stands in for the
 * model in tests and the quickstart, nothing else.
 */
export { createPolicySimulator, type PolicySimulator } from "./app.ts";
export { startPolicySimulator, type StartedPolicySimulator } from "./server.ts";
export { DEFAULT_SIM_MODEL, type PolicySimulatorOptions } from "./options.ts";
export { loadTokenizer, IM_START, IM_END, type SimTokenizer } from "./model.ts";
export { loadSimModel, simModelSpec, SIM_MODEL, SIM_TOOL_PARSERS, type SimToolParser } from "./model.ts";
export { modelText } from "./generate.ts";
export { decideTurn, type TurnDecision } from "./policy.ts";
export type { SimSample, SimMessage, SimTool, PolicyTurn } from "./types.ts";
export { ENGINE_FLAVOURS, FLAVOUR_VERSIONS, type EngineFlavourName, type EngineSimState, type SimFaults } from "./flavours/state.ts";
