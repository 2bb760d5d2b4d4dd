/**
 * A shard's ceiling on the token ids its open token-in rollouts hold in memory
 * (docs/performance.md, "Memory per rollout").
 *
 * A token-in rollout keeps its chains' ids (state/chains.ts; one array per chain, shared with
 * the rollout's prompt-delta history) until it finishes. A shard serving thousands of rollouts
 * with long histories would grow until the process runs out of memory; instead, while the open
 * rollouts' chains hold `max` ids or more, a **new** rollout's first token-in call is refused
 * with a 503 saying so (the executor retries it later, or the experiment spreads rollouts over
 * more shards), and the rollouts already open go on: a rollout refused at its start loses
 * nothing, one cut in its middle would fork its trajectory. The registry's token budget
 * (state/rollouts.ts `maxRecentTokens`, 64 Mi ids) stays the last resort behind it: past that,
 * the least recently used rollout's history and chains are dropped (its next call starts
 * STATE_LOST).
 */
import { ProxyHttpError } from "../errors.ts";
import { chainTokens } from "../state/chains.ts";
import type { RolloutState } from "../state/rollouts.ts";

/**
 * Default ceiling: 48 Mi ids (192 MiB of ids; ~2,400 rollouts with 20k-token chains), three
 * quarters of the registry's 64 Mi budget, leaving the open rollouts a quarter to grow in.
 */
export const DEFAULT_MAX_HELD_TOKENS = 48 * 1024 * 1024;

export interface HeldTokens {
  readonly max: number;
  /** Ids held by the chains of the open rollouts counted (as of their last recorded call). */
  total(): number;
  /** Refuses (503) a rollout's first token-in call while the shard is at its ceiling. */
  admit(rollout: RolloutState): void;
  /** After a call was recorded: the rollout's chains now hold what they hold. */
  note(rollout: RolloutState): void;
}

/**
 * @example
 * const held = heldTokens(48 * 1024 * 1024);
 * held.admit(rollout); // throws ProxyHttpError(503, …, "shard_full") for a new rollout past the ceiling
 */
export function heldTokens(max: number): HeldTokens {
  const byRollout = new Map<RolloutState, number>();
  let total = 0;
  const set = (rollout: RolloutState, n: number) => {
    total += n - (byRollout.get(rollout) ?? 0);
    if (n > 0) byRollout.set(rollout, n);
    else byRollout.delete(rollout);
  };
  /** Finished rollouts' chains are released (registry.forgetHistory), dropped ones emptied: recount. */
  const sweep = () => {
    for (const rollout of [...byRollout.keys()]) set(rollout, rollout.result ? 0 : chainTokens(rollout.chains));
  };
  return {
    max,
    total: () => total,
    admit(rollout) {
      const isNew = rollout.calls === 0 && rollout.chains === undefined;
      if (!isNew || total < max) return;
      sweep();
      if (total < max) return;
      throw new ProxyHttpError(
        503,
        `this proxy shard is at its ceiling for token-in rollouts: the chains of its ${byRollout.size} open rollouts hold ${total} token ids, its limit is ${max} (--max-held-tokens; docs/performance.md, "Memory per rollout"); a new rollout starts once open ones finish: retry it later, or spread rollouts over more shards`,
        "service_unavailable",
        "shard_full",
        null,
        { "retry-after": "30" },
      );
    },
    note(rollout) {
      set(rollout, rollout.result ? 0 : chainTokens(rollout.chains));
    },
  };
}
