/**
 * Rollouts the proxy knows: their Rollout record, key digest, seq counter, result, call
 * counts and the recent token sequences used for prompt deltas. Rebuilt from the log on start,
 * so a restarted proxy continues its rollouts.
 */
import type { ModelCall, Rollout, RolloutResult } from "../../schemas/index.ts";
import { TokenStatus } from "../../schemas/index.ts";
import { fullPrompt, isViewPrefix, joinIds, startsWithIds, type PastCall, type TokenIds } from "../../records/index.ts";
import { keyMatchesSha256, keySha256 } from "./keys.ts";
import type { IdsMemo } from "../capture/answer-json.ts";
import { servingOf, type RolloutServing } from "./serving.ts";
import type { RecordedCalls, RolloutChains } from "./chains.ts";

export interface RolloutState {
  rollout: Rollout;
  result: RolloutResult | undefined;
  /** Last seq handed out. */
  seq: number;
  calls: number;
  tokenStatusCounts: Record<string, number>;
  /** The last few calls' full token sequences (newest last). */
  recent: PastCall[];
  /** The last prompt-id array an answer carried, as text: the next answer's shared part is not parsed again. */
  idsMemo: IdsMemo;
  /** The rollout's own servers, version and sampling (registered with `upstreams`), if any. */
  serving?: RolloutServing;
  /** Token-in mode: the rollout's chains of canonical token ids (state/chains.ts). */
  chains?: RolloutChains;
  /** Its calls in flight and their abort switch, once it had a call (state/cancel.ts). */
  live?: RolloutLive;
}

/** A rollout's calls in flight and their abort switch (state/cancel.ts keeps them). */
export interface RolloutLive {
  /** Model calls of the rollout admitted and not yet recorded. */
  inFlight: number;
  /** Aborts the rollout's upstream requests. */
  controller: AbortController;
  /** Set once a cancel began: why. New calls are refused from then on. */
  cancelling: string | undefined;
  /** Resolved when inFlight falls to 0. */
  idle: (() => void)[];
}

export interface RolloutRegistry {
  get(id: string): RolloutState | undefined;
  /** The rollout whose key this is (constant-time digest compare). */
  byKey(key: string): RolloutState | undefined;
  add(rollout: Rollout): RolloutState;
  /**
   * Adds a rollout known from a segment index: what lookups need now (id, key digest, the try
   * it retries), the Rollout record decoded on first use (`load`), so a restart does not decode
   * thousands of records it may never be asked about.
   */
  addRestored(known: { rolloutId: string; keySha256: string; retryOf: string; policyVersion: number }, load: () => Rollout): RolloutState;
  /** Every registered try of a rollout (its first try and the retries naming it), in registration order. */
  tries(firstId: string): RolloutState[];
  /** Next seq of the rollout. */
  nextSeq(state: RolloutState): number;
  /**
   * Folds a written ModelCall into the rollout's counters and recent tokens; `knownPrefix`: a
   * prefix of its prompt the caller made it from (records/prompt-delta.ts, `isViewPrefix`).
   */
  noteCall(state: RolloutState, call: ModelCall, fullPromptIds: TokenIds | undefined, knownPrefix?: TokenIds): void;
  /** Replays a logged ModelCall (on start): rebuilds the full prompt from its delta. */
  replayCall(call: ModelCall): void;
  /**
   * Gives a restored open rollout its token history on first use (its next call), from `load`
   * (state/history.ts reading its calls' token fields back), so a restart does not rebuild the
   * history of every open rollout before it serves. A failing `load` leaves the history empty:
   * the next call then stores its whole prompt instead of a delta. `recorded` reads its calls
   * back whole for token-in mode, which restores the rollout's chains from them at its first
   * token-in call (state/chains.ts); without it the chains are lost.
   */
  deferHistory(state: RolloutState, load: () => PastCall[], recorded?: () => Promise<RecordedCalls>): void;
  /** Calls kept per rollout in its history. */
  readonly recentCalls: number;
  /** Drops a finished rollout's token history (its calls are done; memory goes to live ones). */
  forgetHistory(state: RolloutState): void;
  size(): number;
  /** The highest policy_version seen in the log. */
  maxPolicyVersion(): number;
  /** Takes a policy version seen in the log without its records (a segment index's summary). */
  notePolicyVersion(version: number): void;
}

export interface RegistryOptions {
  /** Calls kept per rollout to pick a delta parent. Default 4. */
  recentCalls?: number;
  /** Token budget of the recent sequences over all rollouts; oldest rollouts' history dropped. Default 64 Mi tokens. */
  maxRecentTokens?: number;
}

/**
 * An in-memory registry of rollouts.
 *
 * @example
 * const registry = createRolloutRegistry();
 * registry.add(create(RolloutSchema, { rolloutId: "ro-1", keySha256: keySha256(key) }));
 * registry.byKey(key)?.rollout.rolloutId // "ro-1"
 */
export function createRolloutRegistry(options: RegistryOptions = {}): RolloutRegistry {
  const recentCalls = options.recentCalls ?? 4;
  const maxRecentTokens = options.maxRecentTokens ?? 64 * 1024 * 1024;
  const rollouts = new Map<string, RolloutState>();
  // By sha256 of the key: looking up a digest tells a timing observer nothing about any key.
  const byDigest = new Map<string, RolloutState>();
  // First try's id → its tries (a retry registers a new rollout naming the first in retry_of).
  const triesOf = new Map<string, RolloutState[]>();
  const history = new HistoryBudget(maxRecentTokens, rollouts);
  let policyVersion = 0;

  const register = (state: RolloutState, known: { rolloutId: string; keySha256: string; retryOf: string; policyVersion: number }): RolloutState => {
    rollouts.set(known.rolloutId, state);
    if (known.keySha256 !== "") byDigest.set(known.keySha256, state);
    policyVersion = Math.max(policyVersion, known.policyVersion);
    const first = known.retryOf || known.rolloutId;
    const tries = triesOf.get(first) ?? [];
    tries.push(state);
    triesOf.set(first, tries);
    return state;
  };

  const registry: RolloutRegistry = {
    get: (id) => rollouts.get(id),
    byKey(key) {
      const state = byDigest.get(keySha256(key));
      return state && keyMatchesSha256(key, state.rollout.keySha256) ? state : undefined;
    },
    add(rollout) {
      const state: RolloutState = { rollout, result: undefined, seq: 0, calls: 0, tokenStatusCounts: {}, recent: [], idsMemo: {} };
      const serving = servingOf(rollout);
      if (serving) state.serving = serving;
      return register(state, rollout);
    },
    addRestored: (known, load) => register(restoredState(load), known),
    tries: (firstId) => triesOf.get(firstId) ?? [],
    nextSeq: (state) => ++state.seq,
    noteCall(state, call, prompt, knownPrefix) {
      state.calls++;
      state.seq = Math.max(state.seq, call.seq);
      const status = TokenStatus[call.tokenStatus] ?? String(call.tokenStatus);
      state.tokenStatusCounts[status] = (state.tokenStatusCounts[status] ?? 0) + 1;
      policyVersion = Math.max(policyVersion, call.policyVersion);
      if (prompt && (call.tokenStatus === TokenStatus.COMPLETE || call.tokenStatus === TokenStatus.PARTIAL)) {
        const tokens = joinIds(prompt, call.completionTokenIds);
        state.recent.push({ callId: call.callId, tokens });
        if (state.recent.length > recentCalls) state.recent.shift();
        shareIds(state.recent, tokens, knownPrefix);
        history.touch(state);
      }
    },
    replayCall(call) {
      const state = rollouts.get(call.rolloutId);
      if (!state) return;
      const prompt = call.promptLen > 0 || call.promptTokenIds.length > 0 ? fullPrompt(call.prefixOf, call.prefixLen, call.promptTokenIds, state.recent) : undefined;
      registry.noteCall(state, call, prompt);
    },
    deferHistory(state, load, recorded) {
      // A restored open rollout: its token-in chains are restored from its records at its first
      // token-in call (proxy/token-in/restore.ts), or, without them, lost and said so.
      state.chains = recorded ? { list: [], recorded } : { list: [], lost: true, lostWhy: "the proxy restarted and the rollout's chains were not kept" };
      deferRecent(state, () => load().slice(-recentCalls), (s) => history.touch(s));
    },
    recentCalls,
    forgetHistory(state) {
      history.forget(state.rollout.rolloutId);
      state.recent = [];
      state.idsMemo = {};
      state.chains = undefined;
    },
    size: () => rollouts.size,
    maxPolicyVersion: () => policyVersion,
    notePolicyVersion(version) {
      policyVersion = Math.max(policyVersion, version);
    },
  };
  return registry;
}

/**
 * The token budget of the rollouts' histories: the least recently used rollout's history (and
 * its token-in chains) is dropped while the total is over `maxTokens`.
 */
class HistoryBudget {
  /** Rollout id → ids held; insertion order = least recently used first. */
  private readonly held = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly maxTokens: number,
    private readonly rollouts: Map<string, RolloutState>,
  ) {}

  /** The rollout's history changed (or was read): counted again, made most recent, the oldest dropped past the budget. */
  touch(state: RolloutState): void {
    const id = state.rollout.rolloutId;
    const size = heldIds(state.recent);
    this.total += size - (this.held.get(id) ?? 0);
    this.held.delete(id);
    this.held.set(id, size);
    for (const [oldId, oldSize] of this.held) {
      if (this.total <= this.maxTokens || oldId === id) break;
      const old = this.rollouts.get(oldId);
      if (old) {
        old.recent = [];
        old.idsMemo = {};
        // Token-in chains hold the same kind of tokens: they go with the history.
        if (old.chains) old.chains = { list: [], lost: true, lostWhy: "the proxy's token budget (maxRecentTokens) dropped the rollout's token history and chains" };
      }
      this.held.delete(oldId);
      this.total -= oldSize;
    }
  }

  forget(id: string): void {
    this.total -= this.held.get(id) ?? 0;
    this.held.delete(id);
  }
}

/**
 * A rollout known from a segment index: its Rollout record decoded on first use (`load`), its
 * serving read from the record's labels when first asked for (the pipeline asks at a call).
 */
function restoredState(load: () => Rollout): RolloutState {
  let rollout: Rollout | undefined;
  let serving: { value: RolloutServing | undefined } | undefined;
  const state = {
    get rollout() {
      return (rollout ??= load());
    },
    set rollout(value: Rollout) {
      rollout = value;
    },
    get serving() {
      return (serving ??= { value: servingOf(state.rollout) }).value;
    },
    set serving(value: RolloutServing | undefined) {
      serving = { value };
    },
    result: undefined,
    seq: 0,
    calls: 0,
    tokenStatusCounts: {},
    recent: [],
    idsMemo: {},
  } as RolloutState;
  return state;
}

/**
 * `state.recent` read from `load` on first use (then a plain field again); `touched` counts it
 * into the token budget. A failing `load` leaves it empty, with a warning.
 */
function deferRecent(state: RolloutState, load: () => PastCall[], touched: (state: RolloutState) => void): void {
  const settle = (recent: PastCall[]) => Object.defineProperty(state, "recent", { value: recent, writable: true, enumerable: true, configurable: true });
  Object.defineProperty(state, "recent", {
    configurable: true,
    enumerable: true,
    get() {
      let recent: PastCall[] = [];
      try {
        recent = load();
      } catch (error) {
        console.warn(`forge proxy: WARNING: the token history of rollout ${state.rollout.rolloutId} could not be read back (${(error as Error).message}); its next prompt is stored whole`);
      }
      settle(recent);
      touched(state);
      return recent;
    },
    set(recent: PastCall[]) {
      settle(recent);
    },
  });
}

/**
 * Earlier calls whose tokens the newest call's begin with (a growing conversation: each call's
 * prompt + completion is the start of the next one's) become views of the newest call's array,
 * so that a rollout holds its ids once rather than once per recent call (docs/performance.md,
 * "Memory per rollout"); the arrays they held are freed. A view of `knownPrefix` (a prefix the
 * newest call's prompt was made from) is one without comparing.
 */
function shareIds(recent: PastCall[], tokens: Uint32Array, knownPrefix: TokenIds | undefined): void {
  for (let i = recent.length - 2; i >= 0; i--) {
    const earlier = recent[i]!;
    if (earlier.tokens instanceof Uint32Array && earlier.tokens.buffer === tokens.buffer) continue;
    if (isViewPrefix(earlier.tokens, knownPrefix) || startsWithIds(tokens, earlier.tokens)) recent[i] = { callId: earlier.callId, tokens: tokens.subarray(0, earlier.tokens.length) };
  }
}

/** Ids a rollout's recent calls hold in memory: each array once, however many views share it. */
export function heldIds(recent: readonly PastCall[]): number {
  const seen = new Set<ArrayBufferLike>();
  let n = 0;
  for (const { tokens } of recent) {
    if (!(tokens instanceof Uint32Array)) {
      n += tokens.length;
      continue;
    }
    if (seen.has(tokens.buffer)) continue;
    seen.add(tokens.buffer);
    n += tokens.buffer.byteLength / 4;
  }
  return n;
}
