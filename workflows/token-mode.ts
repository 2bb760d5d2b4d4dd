/**
 * An experiment's token mode (`spec.policy.tokenMode`, docs/token-in.md) as the proxy is
 * started with it: the proxy's token-in options (in-process, `forge run`) or its flags (a proxy
 * process: local shards, the Argo proxy Deployment). Without upstreams (the policy simulator)
 * the model is the Qwen3 OpenForge ships, the simulator's.
 */
import type { Experiment } from "../schemas/index.ts";

type Policy = Experiment["spec"]["policy"];

/**
 * The tool-call parser of the server the policy simulator stands in for: the experiment's, else
 * Qwen3-Coder's when token-in renders with qwen3-coder (so proxy and simulator agree), else hermes.
 *
 * @example
 * simulatorToolParser({ ...policy, tokenMode: "token-in", tokenIn: { modelDir: "qwen3-coder" } }) // "qwen3_coder"
 */
export function simulatorToolParser(policy: Policy): "hermes" | "qwen3_coder" {
  return policy.simulator.toolCallParser ?? (policy.tokenMode === "token-in" && policy.tokenIn?.modelDir === "qwen3-coder" ? "qwen3_coder" : "hermes");
}

/**
 * Token-in settings of a policy, or undefined in engine mode. Without a model directory: the
 * model the simulator plays. Parsers left unset take the model's defaults (proxy/token-in/spec.ts).
 */
function settings(policy: Policy) {
  if (policy.tokenMode !== "token-in") return undefined;
  const t = policy.tokenIn;
  const modelDir = t?.modelDir ?? (simulatorToolParser(policy) === "qwen3_coder" ? "qwen3-coder" : "qwen3");
  return { modelDir, toolParser: t?.toolParser, reasoningParser: t?.reasoningParser, maxModelLen: t?.maxModelLen, route: t?.route };
}

/**
 * `forge proxy` flags for the policy's token mode (none in engine mode).
 *
 * @example
 * tokenInFlags({ ...policy, tokenMode: "token-in" }) // ["--token-in", "--model-dir", "qwen3"]
 */
export function tokenInFlags(policy: Policy): string[] {
  const s = settings(policy);
  if (!s) return [];
  return [
    "--token-in",
    "--model-dir",
    s.modelDir,
    ...(s.toolParser ? ["--tool-call-parser", s.toolParser] : []),
    ...(s.reasoningParser ? ["--reasoning-parser", s.reasoningParser] : []),
    ...(s.maxModelLen ? ["--max-model-len", String(s.maxModelLen)] : []),
    ...(s.route ? ["--token-in-route", s.route] : []),
  ];
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
