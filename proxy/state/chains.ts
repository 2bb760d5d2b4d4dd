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
 * A proxy that restarts keeps no chains: a rollout's next token-in call starts a new chain
 * (ChainStart STATE_LOST when the state was dropped while the proxy ran, FIRST after a restart).
 */
import type { TokenIds } from "../../records/index.ts";

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
  /** Key of the answer the harness was sent (what its echo is compared with). */
  answer: string;
  /** Key of that answer with its reasoning sent back as text (keys.ts), when it had reasoning. */
  answerReasoningAsText?: string;
  /** Whether that answer was empty (no text, no calls): a harness may leave it out of its history. */
  answerEmpty: boolean;
}

/** Chains kept per rollout, most recently used first. */
export const MAX_CHAINS = 8;

export interface RolloutChains {
  /** Most recently used first. */
  list: Chain[];
  /** The rollout's chains were dropped (the proxy's token budget): its next call says so. */
  lost?: boolean;
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
