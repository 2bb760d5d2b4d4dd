/**
 * An open rollout's token history rebuilt from its calls' records at a restart: the full token
 * sequences of its last few calls, which the next call's prompt delta is taken against
 * (records/prompt-delta.ts). Replaying every call in turn materializes every full prompt,
 * O(calls × prompt length) per rollout; here each wanted sequence is assembled once from the
 * pieces of its delta chain (tokens(c)[0:n] = tokens(prefix_of)[0:min(n, prefix_len)] ++ its own
 * prompt ids ++ its completion), which costs what the result holds.
 */
import { TokenStatus, type ModelCall } from "../../schemas/index.ts";
import type { PastCall } from "../../records/index.ts";

/** Whether the live recorder keeps this call in the history (rollouts.ts noteCall does the same). */
const kept = (call: ModelCall) =>
  (call.tokenStatus === TokenStatus.COMPLETE || call.tokenStatus === TokenStatus.PARTIAL) && (call.promptLen > 0 || call.promptTokenIds.length > 0);

/**
 * The first `n` tokens of tokens(call) = full prompt ++ completion, walking its delta chain;
 * undefined when a link is missing or its lengths do not add up (as fullPrompt would refuse).
 */
function leadingTokens(byId: Map<string, ModelCall>, call: ModelCall, n: number): Uint32Array | undefined {
  const pieces: number[][] = [];
  let current: ModelCall | undefined = call;
  let want = n;
  while (want > 0) {
    if (!current) return undefined;
    const full = current.promptLen || current.promptTokenIds.length;
    if (want > full + current.completionTokenIds.length) return undefined;
    if (want > full) pieces.push(current.completionTokenIds.slice(0, want - full));
    const fromPrompt = Math.min(want, full);
    if (!current.prefixOf) {
      if (current.promptTokenIds.length < fromPrompt) return undefined;
      pieces.push(current.promptTokenIds.slice(0, fromPrompt));
      break;
    }
    const fromParent = Math.min(fromPrompt, current.prefixLen);
    if (current.prefixLen + current.promptTokenIds.length !== full) return undefined;
    if (fromPrompt > fromParent) pieces.push(current.promptTokenIds.slice(0, fromPrompt - fromParent));
    current = byId.get(current.prefixOf);
    want = fromParent;
  }
  // One Uint32Array, as the live recorder keeps a call's tokens (records/prompt-delta.ts joinIds).
  const out = new Uint32Array(n);
  let at = 0;
  for (let i = pieces.length - 1; i >= 0; i--) {
    out.set(pieces[i]!, at);
    at += pieces[i]!.length;
  }
  return out;
}

/**
 * The full tokens of `call` (its prompt, rebuilt along its delta chain, then its completion),
 * `byId` holding its rollout's calls; undefined when a link is missing or its lengths do not add up.
 *
 * @example
 * callTokens(new Map(calls.map((c) => [c.callId, c])), calls.at(-1)!) // Uint32Array [151644, …]
 */
export function callTokens(byId: Map<string, ModelCall>, call: ModelCall): Uint32Array | undefined {
  return leadingTokens(byId, call, (call.promptLen || call.promptTokenIds.length) + call.completionTokenIds.length);
}

/**
 * The history a live proxy would hold for a rollout after `calls` (in log order): the last
 * `recentCalls` calls with a complete or partial token view, each as its full tokens.
 *
 * @example
 * historyOf(calls, 4).at(-1) // { callId: "r-1-20", tokens: [151644, …] }
 */
export function historyOf(calls: ModelCall[], recentCalls: number): PastCall[] {
  const byId = new Map(calls.map((call) => [call.callId, call]));
  const wanted = calls.filter(kept).slice(-recentCalls);
  const history: PastCall[] = [];
  for (const call of wanted) {
    const full = call.promptLen || call.promptTokenIds.length;
    const tokens = leadingTokens(byId, call, full + call.completionTokenIds.length);
    if (tokens) history.push({ callId: call.callId, tokens });
  }
  return history;
}
