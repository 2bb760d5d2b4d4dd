/**
 * Token-in mode's per-rollout state (docs/token-in.md): the rollout's chains, each the token
 * ids the policy has seen so far in one conversation — its last call's prompt and completion,
 * canonical — with what the next call's messages are compared against: the keys of that call's
 * messages (the model's view of each, proxy/token-in/keys.ts), of its settings (tools and
 * template variables), and of the answer the harness was sent.
 *
 * A chain moves on when a call that continued (or started) it is recorded with complete ids; a
 * call that failed leaves it where it was, so a harness's retry continues it the same way.
 * A rollout keeps its most recently used chains (MAX_CHAINS); a finished rollout none.
 * A restarted proxy restores an open rollout's chains from its recorded calls at the rollout's
 * first token-in call (`recorded`, read back by state/log-index.ts and folded by
 * proxy/token-in/restore.ts), so the call continues its chain as if the proxy had never
 * stopped; when the records cannot give them back, or the proxy's token budget dropped them,
 * the next call starts a chain recorded STATE_LOST, saying why (`lostWhy`).
 */
import type { TokenIds } from "../../records/index.ts";
import type { ModelCall } from "../../schemas/index.ts";

export interface Chain {
  /** The call that started it. */
  id: string;
  /** The chain's last recorded call. */
  lastCall: string;
  /** The call the last call's prompt continued (its parent), "" for the chain's first. */
  lastParent: string;
  /** The last call's prompt ids. */
  prompt: TokenIds;
  /** The last call's prompt and completion ids: what the next call's prompt begins with. */
  tokens: TokenIds;
  /** Keys of the last call's messages, as the template saw them. */
  keys: string[];
  /** Key of the last call's tools and template variables. */
  settings: string;
  /** The answer the harness was sent: what its echo is compared with (proxy/token-in/keys.ts, `sentAnswerKey`). */
  answer: ChainAnswer;
  /** Whether that answer was empty (no text, no calls): a harness may leave it out of its history. */
  answerEmpty: boolean;
}

/**
 * A chain's last answer: its keys (proxy/token-in/keys.ts), what the next call's echo is compared
 * with. A short answer is kept as it was sent and its keys made when the next call compares its
 * echo (not when the answer is recorded), the one with the reasoning as text only if the plain
 * one differs; a long one's keys are made at once and its text not kept (chain-after.ts).
 */
export interface ChainAnswer {
  /** The answer as the harness was sent it, until both its keys are made. */
  sent?: { content: string | null; reasoning: string | null; toolCalls: readonly { name: string; arguments: string }[] };
  /** Its key (keys.ts `answerKey`), once made. */
  key?: string;
  /** Its key with the reasoning as text (keys.ts `reasoningAsTextKey`), once made; null when it had no reasoning. */
  reasoningAsText?: string | null;
}

/** Chains kept per rollout, most recently used first. */
export const MAX_CHAINS = 8;

export interface RolloutChains {
  /** Most recently used first. */
  list: Chain[];
  /** The rollout's chains were dropped (the proxy's token budget, a restart they could not be restored from): its next call says so. */
  lost?: boolean;
  /** Why they were dropped (the next call's chain_start_detail). */
  lostWhy?: string;
  /**
   * A rollout open at a restart: its calls as recorded before it, read back when its first
   * token-in call comes (not at the start), to restore its chains from.
   */
  recorded?: () => Promise<RecordedCalls>;
  /** The restore from `recorded` under way: concurrent first calls wait for the same one. */
  restoring?: Promise<void>;
}

/** An open rollout's calls read back from the log at a restart. */
export interface RecordedCalls {
  /** Its ModelCall records, decoded whole, in log order. */
  calls: ModelCall[];
  /** Why the records may be missing one of its calls (a damaged frame, quarantined ranges), "" when nothing is. */
  damage: string;
}

/**
 * A new, empty chain set.
 *
 * @example
 * const chains = newRolloutChains();
 * useChain(chains, chain); chains.list[0] === chain // true
 */
export function newRolloutChains(): RolloutChains {
  return { list: [] };
}

/**
 * Puts `chain` first (replacing the chain of the same id), dropping the least recently used past MAX_CHAINS.
 *
 * @example
 * useChain(chains, { ...chain, lastCall: "call-2" });
 */
export function useChain(chains: RolloutChains, chain: Chain): void {
  const rest = chains.list.filter((c) => c.id !== chain.id);
  chains.list = [chain, ...rest].slice(0, MAX_CHAINS);
}

/** Tokens held by a chain set (for the proxy's metrics and tests). */
export function chainTokens(chains: RolloutChains | undefined): number {
  return chains ? chains.list.reduce((n, c) => n + c.tokens.length, 0) : 0;
}
