/** Serves the policy simulator with Bun.serve (loopback by default). */
import { createPolicySimulator } from "./app.ts";
import type { PolicySimulatorOptions } from "./options.ts";
import { loadTokenizer } from "./model.ts";
import type { SimSample } from "./types.ts";
import type { EngineSimState } from "./flavours/state.ts";

export interface StartedPolicySimulator {
  /** `http://127.0.0.1:PORT` (the OpenAI base URL is this + "/v1"). */
  url: string;
  stop(): Promise<void>;
  samples: SimSample[];
  /** The engine stand-in's state: weights served (path, version), pause, faults. */
  engine: EngineSimState;
}

/**
 * Starts the simulator; resolves once it listens and the tokenizer is loaded.
 *
 * @example
 * const sim = await startPolicySimulator({ seed: 7 });
 * const client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: "sim" });
 * await sim.stop();
 */
export async function startPolicySimulator(
  options: PolicySimulatorOptions & { hostname?: string; port?: number },
): Promise<StartedPolicySimulator> {
  const simulator = createPolicySimulator(options);
  await loadTokenizer();
  const server = Bun.serve({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 0,
    // Slow simulated streams (chunkDelayMs) must not hit Bun's default 10 s idle timeout.
    idleTimeout: 0,
    fetch: simulator.fetch,
  });
  const host = server.hostname?.includes(":") ? `[${server.hostname}]` : server.hostname;
  return {
    url: `http://${host}:${server.port}`,
    stop: () => server.stop(true),
    samples: simulator.samples,
    engine: simulator.engine,
  };
}
