/**
 * Shapes of assembled trajectories: what veRL trains on (docs/trajectories.md).
 */
import type { ModelCall } from "../schemas/index.ts";
import type { AuxiliaryFingerprint, AuxiliaryKind } from "./auxiliary.ts";

/** A model call with its full prompt rebuilt from the delta chain (`resolvePrompts`). */
export type ResolvedCall = {
  call: ModelCall;
  /** The full prompt token ids, or undefined when they cannot be rebuilt (see `problem`). */
  readonly prompt: readonly number[] | undefined;
  /** Why the prompt could not be rebuilt (unknown prefix_of, prefix_len past the end, ...). */
  problem?: string;
};

/** How the samples other than a rollout's final one are rewarded. */
export type RewardPolicy = "final" | "same" | "discounted";

export type AssembleOptions = {
  /** `final`: only the final sample gets the reward (others 0); `same`: all get it; `discounted`: gamma^k for the k-th from the end. */
  rewardPolicy?: RewardPolicy;
  /** Discount for `discounted` (default 0.9). */
  gamma?: number;
  /**
   * Token ids that open and close a reasoning block the chat template may strip from earlier
   * turns (Qwen3: `<think>` 151667, `</think>` 151668). Without them no realign is possible.
   */
  thinkOpen?: number;
  thinkClose?: number;
  /** Separator tokens the template drops together with a stripped block (Qwen3: "\n" 198, "\n\n" 271). */
  thinkTrailing?: readonly number[];
  /** Realign only when the held tokens left after the stripped spans are at least this share of the held sample (default 0.5). */
  minRetainedFraction?: number;
  /** Realign only when at most this many held tokens were stripped in one call (default Infinity). */
  maxDriftTokens?: number;
  /** `score`: a timed-out rollout is the policy's failure (kept, default); `exclude`: treated like infra_error. */
  timeouts?: "score" | "exclude";
  /**
   * The auxiliary-call fingerprints to apply instead of those of the rollout's harness
   * (`fingerprintsFor(rollout.harness)`); `[]` leaves only the general rule.
   */
  fingerprints?: readonly AuxiliaryFingerprint[];
};

/**
 * What `exportTrajectories` and `trajectoryOf` assume when no reasoning ids are given: Qwen3's
 * `<think>` / `</think>` and the "\n" / "\n\n" its template drops with a stripped block. Pass
 * `thinkOpen: -1, thinkClose: -1` to turn realign off.
 */
export const QWEN3_THINK = { thinkOpen: 151667, thinkClose: 151668, thinkTrailing: [198, 271] } as const;

/** `options` with Qwen3's reasoning ids where none are set. */
export function withThinkDefaults<T extends AssembleOptions>(options: T): T {
  if (options.thinkOpen !== undefined || options.thinkClose !== undefined) return options;
  return { ...options, thinkOpen: QWEN3_THINK.thinkOpen, thinkClose: QWEN3_THINK.thinkClose, thinkTrailing: options.thinkTrailing ?? QWEN3_THINK.thinkTrailing };
}

/** One training sample: a prompt and a multi-turn response, token for token as served. */
export type TrajectorySample = {
  sample_id: string;
  rollout_id: string;
  task_id: string;
  /** GRPO group (task × policy version): veRL's `uid`. */
  group: string;
  experiment: string;
  iteration: number;
  /** Policy version of the sample's first call; `policy_versions` lists all when they differ. */
  policy_version: number;
  policy_versions: number[];
  /** Position of this sample in the rollout, in order of creation. */
  sample_index: number;
  prompt_ids: number[];
  response_ids: number[];
  /** 1 = sampled by the policy (trained), 0 = tool output, user turns, template tokens. */
  response_mask: number[];
  /** The policy's logprob for sampled tokens, 0 for the others. */
  response_logprobs: number[];
  reward: number;
  /** veRL's count: initial prompt + every assistant turn + every inserted span = 2 × calls. */
  num_turns: number;
  /** True for the agent sample that holds the rollout's last agent call (its final answer): it carries the rollout reward. */
  is_final: boolean;
  /**
   * What an auxiliary sample is (title, compaction, summary, classifier, quota, memory, or
   * `unchained` by the general rule); null for the agent's samples. Auxiliary samples never carry
   * the rollout's reward (0 under every reward policy) and are never final.
   */
  auxiliary: AuxiliaryKind | null;
  call_ids: string[];
  /** sha256 of the Blob records (images) this sample's calls refer to. */
  blob_refs: string[];
  realigns: number;
  drift_tokens: number;
};

export type CallKind = "start" | "clean" | "realign" | "fork" | "broken" | "auxiliary";

/** A call that ended the sample it belonged to instead of extending it. */
export type BrokenCall = { call_id: string; seq: number; token_status: string; reason: string };

export type RolloutStats = {
  calls: number;
  clean: number;
  realign: number;
  fork: number;
  broken: number;
  /** Auxiliary calls (also counted as broken when their tokens are incomplete). */
  auxiliary: number;
  drift_tokens: number;
};

export type RolloutTrajectory = {
  rollout_id: string;
  task_id: string;
  group: string;
  /** ok | failed | infra_error | timeout | unfinished (no result recorded). */
  status: string;
  reward: number;
  /** Counts in group statistics (not infra_error, not an excluded timeout, has a result and a sample). */
  valid: boolean;
  /** Why `valid` is false. */
  excluded?: string;
  samples: TrajectorySample[];
  stats: RolloutStats;
  broken: BrokenCall[];
  /**
   * Per call, in seq order: how it was classified. Auxiliary calls carry their kind and what
   * recognised them (`<harness>.<what>` for a fingerprint, `rule` for the general rule).
   */
  kinds: { call_id: string; seq: number; kind: CallKind; sample: number; auxiliary?: AuxiliaryKind; fingerprint?: string }[];
};
