/**
 * Which chain a token-in call continues, and its prompt ids (docs/token-in.md).
 *
 * A call continues a chain when its conversation holds the chain's last call's messages,
 * message for message (keys.ts), then that call's answer (the assistant turn the harness was
 * sent, compared as keys.ts says), then new messages, with the same tools and template
 * variables. Its prompt is then the chain's last prompt and completion ids, the end-of-turn
 * token where the completion lacks it (cut by max_tokens or a stop string), and what the
 * template writes after that turn for the new messages (`appendedAfter`). A call whose
 * conversation is the chain's last call's again (a retry) gets that call's prompt again. Any
 * other call starts a new chain, its prompt rendered whole as the engine would render it, and
 * says why (ChainStart).
 */
import { ChainStart } from "../../schemas/index.ts";
import { AppendError, type Model, type PreparedChat } from "../../model/index.ts";
import { joinIds, type TokenIds } from "../../records/index.ts";
import type { Chain, RolloutChains } from "../state/chains.ts";
import { echoKey, echoedReasoningAsText, messageKey, sentAnswerKey, settingsKey } from "./keys.ts";
import { wholePrompt } from "./whole-prompts.ts";

export interface Plan {
  /** The prompt ids sent to the engine. */
  prompt: TokenIds;
  /** The chain the call continues, or undefined when it starts one (the call's own id). */
  chain: Chain | undefined;
  /** The call whose prompt + completion the prompt begins with ("" at a chain's start). */
  parent: string;
  start: ChainStart;
  /** Why a chain was not continued (the message that differed). */
  detail: string;
  /** Prompt tokens the proxy rendered (all of them at a chain's start). */
  rendered: number;
  /** The conversation's keys and settings: the chain's state once the call is recorded. */
  keys: string[];
  settings: string;
}

/**
 * Plans a call's prompt against the rollout's chains; `lost` says why they are gone when the
 * rollout's chains were dropped (a chain then starts STATE_LOST with it as its detail).
 *
 * @example
 * const plan = planCall(model, rollout.chains, model.prepare(chatRequest));
 * plan.start === ChainStart.UNSPECIFIED // it continues plan.chain: plan.prompt begins with plan.chain.tokens
 */
export function planCall(model: Model, chains: RolloutChains, prepared: PreparedChat, lost?: string): Plan {
  const conversation = prepared.conversation;
  const keys = conversation.map(messageKey);
  const settings = settingsKey(prepared);
  const fresh = (start: ChainStart, detail: string): Plan => {
    const prompt = wholePrompt(model, prepared, settings);
    return { prompt, chain: undefined, parent: "", start, detail, rendered: prompt.length, keys, settings };
  };
  const appendable = prepared.variables.get("add_generation_prompt") !== false && !prepared.continueFinalMessage;
  if (!appendable) return fresh(ChainStart.NOT_APPENDABLE, prepared.continueFinalMessage ? "continue_final_message: the prompt ends inside its last message" : "add_generation_prompt is false: the prompt does not end where the model answers");
  if (chains.list.length === 0) return lost === undefined ? fresh(ChainStart.FIRST, "") : fresh(ChainStart.STATE_LOST, lost);

  // Why no chain is continued, from the chain that came closest.
  let closest: { chain: Chain; shared: number; why: ChainStart; detail: string } | undefined;
  const note = (chain: Chain, shared: number, why: ChainStart, detail: string) => {
    if (!closest || shared > closest.shared || (shared === closest.shared && rank(why) > rank(closest.why))) closest = { chain, shared, why, detail };
  };
  for (const chain of chains.list) {
    const held = chain.keys.length;
    let shared = 0;
    while (shared < held && shared < keys.length && keys[shared] === chain.keys[shared]) shared++;
    if (shared < held) {
      const where = shared < keys.length ? `message ${shared} (${String(conversation[shared]!.get("role"))}) differs from the chain's` : `the call has ${keys.length} messages, the chain's last call had ${held}`;
      note(chain, shared, shared === 0 ? ChainStart.NEW_CONVERSATION : ChainStart.HISTORY_REWRITTEN, `chain ${chain.id}: ${where}`);
      continue;
    }
    if (keys.length === held) {
      // The chain's last call again (a retry): its prompt again.
      if (settings !== chain.settings) {
        note(chain, shared, ChainStart.SETTINGS_CHANGED, `chain ${chain.id}: the same messages with other tools or template variables`);
        continue;
      }
      return { prompt: chain.prompt, chain, parent: chain.lastParent, start: ChainStart.UNSPECIFIED, detail: "", rendered: 0, keys, settings };
    }
    // The assistant turn after the held messages: the echo of the chain's answer.
    let end = held;
    while (end < conversation.length && conversation[end]!.get("role") === "assistant") end++;
    const echoed = end > held ? echoKey(conversation, keys, held, end) === sentAnswerKey(chain.answer) || echoedReasoningAsText(chain.answer, conversation.slice(held, end)) : chain.answerEmpty;
    if (!echoed) {
      note(chain, shared, ChainStart.ANSWER_CHANGED, `chain ${chain.id}: message ${held} is not the answer the harness was sent (${end > held ? "its text or tool calls differ" : "it is missing"})`);
      continue;
    }
    if (settings !== chain.settings) {
      note(chain, shared + 1, ChainStart.SETTINGS_CHANGED, `chain ${chain.id}: the tools or template variables changed`);
      continue;
    }
    const plan = extend(model, prepared, chain, end > held ? end - 1 : -held - 1, keys, settings);
    return typeof plan === "string" ? fresh(ChainStart.NOT_APPENDABLE, `chain ${chain.id}: ${plan}`) : plan;
  }
  const c = closest!;
  return fresh(c.why, c.detail);
}

/** Among equally close chains, the most specific reason. */
function rank(why: ChainStart): number {
  return [ChainStart.NEW_CONVERSATION, ChainStart.HISTORY_REWRITTEN, ChainStart.ANSWER_CHANGED, ChainStart.SETTINGS_CHANGED].indexOf(why);
}

/**
 * The prompt continuing `chain`: its tokens, the end-of-turn token if they lack it, and what
 * the template writes after the answer at `answerIndex` (negative: the harness left an empty
 * answer out of its history; -answerIndex-1 is where it goes).
 */
function extend(model: Model, prepared: PreparedChat, chain: Chain, answerIndex: number, keys: string[], settings: string): Plan | string {
  let target = prepared;
  let at = answerIndex;
  if (answerIndex < 0) {
    at = -answerIndex - 1;
    const conversation = prepared.conversation.slice();
    conversation.splice(at, 0, new Map([["role", "assistant"], ["content", ""]]));
    target = { ...prepared, conversation };
  }
  let appended;
  try {
    appended = model.appendedAfter(target, at);
  } catch (error) {
    if (!(error instanceof AppendError)) throw error;
    return error.message;
  }
  const closed = chain.tokens.length > 0 && chain.tokens[chain.tokens.length - 1] === appended.closerId;
  const added = closed ? appended.ids : [appended.closerId, ...appended.ids];
  return { prompt: joinIds(chain.tokens, added), chain, parent: chain.lastCall, start: ChainStart.UNSPECIFIED, detail: "", rendered: added.length, keys, settings };
}
