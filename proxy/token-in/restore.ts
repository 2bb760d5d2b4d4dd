/**
 * An open rollout's chains restored from its records after a restart (docs/token-in.md,
 * "Restart"), at its first token-in call: the rollout's calls are read back (state/log-index.ts)
 * and folded as the live proxy folded them when they were recorded — a call recorded `OK` with
 * `COMPLETE` ids and the answer it was sent moves its chain (`chain_id`) to itself and puts it
 * first, at most MAX_CHAINS kept; a call that started a chain `STATE_LOST` found none — and each
 * kept chain's state is rebuilt from its last call's record as call.ts built it: the prompt and
 * completion ids from the token view (along the prompt-delta chain), the keys of its messages and
 * settings from the Chat request its prompt was rendered from (the recorded upstream body,
 * prepared by the model again), the answer key from `chain_answer`, the parent from
 * `chain_parent`. Nothing beyond fields 50-57 and the token view is needed.
 *
 * Records that cannot give the chains back leave them lost, and the next call starts a chain
 * `STATE_LOST` saying why: damage in the log where a call of the rollout may have been, calls
 * recorded without token-in fields (engine mode, or a proxy from before token-in mode), a body
 * or token view that does not rebuild, a request the model no longer prepares.
 */
import { CallStatus, ChainStart, Protocol, TokenMode, TokenStatus, type ModelCall } from "../../schemas/index.ts";
import { createContentStore, joinIds, upstreamRequestOf } from "../../records/index.ts";
import type { Model } from "../../model/index.ts";
import { MAX_CHAINS, type Chain, type RecordedCalls, type RolloutChains } from "../state/chains.ts";
import { callTokens } from "../state/history.ts";
import { chainAfter } from "./chain-after.ts";
import { messageKey, settingsKey } from "./keys.ts";
import type { SentAnswer } from "./chat-answer.ts";

/** How every restore that fails begins its reason (the next call's chain_start_detail). */
export const RESTART_LOST = "the proxy restarted and the rollout's chains could not be restored from its records";

const decoder = new TextDecoder();

/** The chains a rollout's records give back, or why they give none. */
export type Restored = { chains: Chain[]; lost: false } | { chains: []; lost: true; why: string };

/** Thrown for a record the chains cannot be rebuilt from. */
class Unrestorable extends Error {}

/**
 * Restores `chains` (a restarted rollout's, with `recorded` set) from its records: its list
 * becomes what the live proxy held, or it is marked lost with the reason. Never throws: a
 * failure to read is a reason too.
 *
 * @example
 * if (chains.recorded) await (chains.restoring ??= restoreChains(model, chains, rolloutId));
 */
export async function restoreChains(model: Model, chains: RolloutChains, rolloutId: string): Promise<void> {
  const load = chains.recorded;
  if (!load) return;
  let restored: Restored;
  try {
    restored = chainsFromRecords(model, await load());
  } catch (error) {
    restored = { chains: [], lost: true, why: `${RESTART_LOST}: reading them back failed (${(error as Error).message})` };
  }
  delete chains.recorded;
  chains.list = restored.chains;
  if (restored.lost) {
    chains.lost = true;
    chains.lostWhy = restored.why;
    console.warn(`forge proxy: WARNING: rollout ${rolloutId}: ${restored.why}; its next token-in call starts a chain (STATE_LOST)`);
  } else {
    chains.lost = false;
    delete chains.lostWhy;
  }
}

/** A call that may have been token-in had the proxy run in token-in mode (a Chat call or one translated to Chat). */
const chatLike = (call: ModelCall) => call.protocol === Protocol.CHAT || call.protocol === Protocol.RESPONSES || call.protocol === Protocol.ANTHROPIC_MESSAGES;

/**
 * The chains a rollout's recorded calls leave, as the live proxy held them after the last one.
 *
 * @example
 * chainsFromRecords(model, { calls, damage: "" }) // { chains: [the main chain, a title chain], lost: false }
 */
export function chainsFromRecords(model: Model, recorded: RecordedCalls): Restored {
  const lost = (why: string): Restored => ({ chains: [], lost: true, why: `${RESTART_LOST}: ${why}` });
  if (recorded.damage !== "") return lost(`a call of the rollout may be in damaged records (${recorded.damage})`);
  const calls = recorded.calls;
  const tokenIn = calls.filter((c) => c.tokenMode === TokenMode.TOKEN_IN);
  if (tokenIn.length === 0) {
    const untagged = calls.filter(chatLike).length;
    // No calls yet: the rollout's first call is its first, as it would have been.
    return untagged === 0 ? { chains: [], lost: false } : lost(`its ${untagged} recorded call(s) carry no token-in fields (recorded in engine mode, or by a proxy from before token-in mode)`);
  }

  // The live fold (call.ts `recorded`): which calls the kept chains ended at, most recently used first.
  let heads: ModelCall[] = [];
  let stateLost: string | undefined;
  for (const call of tokenIn) {
    // A chain started STATE_LOST found the rollout's chains empty.
    if (call.chainStart === ChainStart.STATE_LOST) {
      heads = [];
      stateLost = call.chainStartDetail;
    }
    if (call.status !== CallStatus.OK || call.tokenStatus !== TokenStatus.COMPLETE || call.chainAnswer.length === 0) continue;
    stateLost = undefined;
    heads = [call, ...heads.filter((h) => h.chainId !== call.chainId)].slice(0, MAX_CHAINS);
  }
  if (heads.length === 0) return stateLost === undefined ? { chains: [], lost: false } : { chains: [], lost: true, why: stateLost };

  const byId = new Map(calls.map((c) => [c.callId, c]));
  const store = createContentStore();
  for (const call of calls) store.add(call);
  try {
    return { chains: heads.map((head) => chainOf(model, head, byId, store)), lost: false };
  } catch (error) {
    if (error instanceof Unrestorable) return lost(error.message);
    return lost(`${(error as Error).name}: ${(error as Error).message}`);
  }
}

/** A chain's state from its last call's record (what call.ts built when it was recorded). */
function chainOf(model: Model, head: ModelCall, byId: Map<string, ModelCall>, store: ReturnType<typeof createContentStore>): Chain {
  const where = `chain ${head.chainId}, call ${head.callId} (seq ${head.seq})`;
  const tokens = callTokens(byId, head);
  if (!tokens) throw new Unrestorable(`${where}: its prompt ids do not rebuild along their delta chain (a call it refers to is missing)`);
  const promptLength = head.promptLen || head.promptTokenIds.length;
  let chat: Record<string, unknown>;
  try {
    chat = upstreamRequestOf(head, store);
  } catch (error) {
    throw new Unrestorable(`${where}: the Chat request its prompt was rendered from does not rebuild (${(error as Error).message})`);
  }
  let prepared;
  try {
    prepared = model.prepare(chat as never);
  } catch (error) {
    throw new Unrestorable(`${where}: ${model.spec.name} does not prepare its recorded Chat request (${(error as Error).message})`);
  }
  let answer: SentAnswer;
  try {
    const sent = JSON.parse(decoder.decode(head.chainAnswer)) as { content?: unknown; reasoning?: unknown; tool_calls?: unknown };
    if (!Array.isArray(sent.tool_calls) || !sent.tool_calls.every((c) => typeof c?.name === "string" && typeof c?.arguments === "string")) throw new Error("tool_calls is not a list of {name, arguments}");
    answer = { content: typeof sent.content === "string" ? sent.content : null, reasoning: typeof sent.reasoning === "string" ? sent.reasoning : null, toolCalls: sent.tool_calls };
  } catch (error) {
    throw new Unrestorable(`${where}: its chain_answer is not the answer JSON token-in mode writes (${(error as Error).message})`);
  }
  const keys = prepared.conversation.map(messageKey);
  if (prepared.images.length > 0 && model.images) {
    // Recorded as the engine ran them (each image's pads expanded); the chain holds one pad per image (images.ts).
    const prompt = Uint32Array.from(model.images.collapse(tokens.subarray(0, promptLength)));
    const all = joinIds(prompt, Array.from(tokens.subarray(promptLength)));
    return chainAfter(head.chainId, head.callId, { prompt: all.subarray(0, prompt.length), parent: head.chainParent, keys, settings: settingsKey(prepared) }, all, answer);
  }
  const plan = { prompt: tokens.subarray(0, promptLength), parent: head.chainParent, keys, settings: settingsKey(prepared) };
  return chainAfter(head.chainId, head.callId, plan, tokens, answer);
}
