/**
 * An experiment's token mode (`spec.policy.tokenMode`, docs/token-in.md) as the proxy is
 * started with it: the proxy's token-in options (in-process, `forge run`) or its flags (a proxy
 * process: local shards, the Argo proxy Deployment). Without upstreams (the policy simulator)
 * the model is the Qwen3 OpenForge ships, the simulator's.
 */
import type { Experiment } from "../schemas/index.ts";

type Policy = Experiment["spec"]["policy"];

/** Token-in settings of a policy, or undefined in engine mode. */
function settings(policy: Policy) {
  if (policy.tokenMode !== "token-in") return undefined;
  const t = policy.tokenIn;
  return { modelDir: t?.modelDir ?? "qwen3", toolParser: t?.toolParser ?? "hermes", reasoningParser: t?.reasoningParser ?? "qwen3", maxModelLen: t?.maxModelLen };
}

/**
 * `forge proxy` flags for the policy's token mode (none in engine mode).
 *
 * @example
 * tokenInFlags({ ...policy, tokenMode: "token-in" }) // ["--token-in", "--model-dir", "qwen3", "--tool-call-parser", "hermes", "--reasoning-parser", "qwen3"]
 */
export function tokenInFlags(policy: Policy): string[] {
  const s = settings(policy);
  if (!s) return [];
  return ["--token-in", "--model-dir", s.modelDir, "--tool-call-parser", s.toolParser, "--reasoning-parser", s.reasoningParser, ...(s.maxModelLen ? ["--max-model-len", String(s.maxModelLen)] : [])];
}

/**
 * The proxy's token-in options for the policy (undefined in engine mode).
 *
 * @example
 * const proxy = await startProxy({ ..., ...(await tokenInFor(policy)) });
 */
export async function tokenInFor(policy: Policy): Promise<{ tokenIn?: import("../proxy/index.ts").TokenInOptions }> {
  const s = settings(policy);
  if (!s) return {};
  const { tokenInOptions } = await import("../proxy/index.ts");
  return { tokenIn: tokenInOptions(s, { modelDir: "spec.policy.tokenIn.modelDir", toolParser: "spec.policy.tokenIn.toolParser", reasoningParser: "spec.policy.tokenIn.reasoningParser", maxModelLen: "spec.policy.tokenIn.maxModelLen" }) };
}
