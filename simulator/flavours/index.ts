/** The engine flavours of the simulator, by name. */
import type { EngineFlavourName } from "./state.ts";
import { sglangFlavour } from "./sglang.ts";
import type { EngineFlavour } from "./types.ts";
import { vllmFlavour } from "./vllm.ts";

/**
 * The flavour that writes answers as `name` does.
 *
 * @example
 * flavourOf("sglang").name // "sglang"
 */
export function flavourOf(name: EngineFlavourName): EngineFlavour {
  return name === "sglang" ? sglangFlavour : vllmFlavour;
}

export { createEngineSimState, ENGINE_FLAVOURS, FLAVOUR_VERSIONS, type EngineFlavourName, type EngineSimState, type SimFaults } from "./state.ts";
export { NamedEvent, type EngineFlavour } from "./types.ts";
export { mountEngineRoutes } from "./routes.ts";
