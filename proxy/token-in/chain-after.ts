/**
 * A chain's state after one of its calls is recorded (state/chains.ts): what the next call is
 * compared with and continues. The live proxy builds it when the call is recorded (call.ts); a
 * restarted one builds the same from the call's record (restore.ts).
 */
import type { TokenIds } from "../../records/index.ts";
import type { Chain } from "../state/chains.ts";
import { chainAnswer } from "./keys.ts";
import type { Plan } from "./plan.ts";
import type { SentAnswer } from "./chat-answer.ts";

/**
 * The chain's state after a recorded call: its prompt and completion, its messages' keys and
 * settings, the answer the harness was sent.
 *
 * @example
 * useChain(chains, chainAfter(chainId, call.callId, plan, joinIds(plan.prompt, call.completionTokenIds), answer));
 */
export function chainAfter(chainId: string, callId: string, plan: Pick<Plan, "prompt" | "parent" | "keys" | "settings">, tokens: TokenIds, answer: SentAnswer): Chain {
  return {
    id: chainId,
    lastCall: callId,
    lastParent: plan.parent,
    prompt: plan.prompt,
    tokens,
    keys: plan.keys,
    settings: plan.settings,
    answer: chainAnswer(answer),
    answerEmpty: (answer.content ?? "").trim() === "" && answer.toolCalls.length === 0,
  };
}
