/**
 * Assembles one rollout's calls into training samples: clean extensions grow a sample, re-rendered
 * reasoning is realigned, rewritten history forks a new sample (docs/trajectories.md).
 */
import type { ContentStore } from "../records/index.ts";
import { RolloutStatus, TokenStatus, type ModelCall, type Rollout, type RolloutResult } from "../schemas/index.ts";
import { commonPrefix } from "../lib/index.ts";
import { matchWithStrippedThink } from "./align.ts";
import { fingerprintsFor, matchFingerprint, type AuxiliaryFingerprint, type AuxiliaryKind } from "./auxiliary.ts";
import { continuesConversation, type RequestView } from "./request-view.ts";
import { RequestBodies } from "./request-bodies.ts";
import type {
  AssembleOptions,
  BrokenCall,
  CallKind,
  ResolvedCall,
  RolloutStats,
  RolloutTrajectory,
  TrajectorySample,
} from "./types.ts";

type Held = {
  index: number;
  tokens: number[];
  promptLen: number;
  mask: number[];
  logprobs: number[];
  open: boolean;
  calls: string[];
  lastSeq: number;
  /** call_id of the last call grown into this sample. */
  lastCall: string;
  /** Whether `tokens` equal tokens(lastCall) (true until a realign keeps tokens the prompt dropped). */
  exact: boolean;
  policyVersions: number[];
  blobRefs: Set<string>;
  realigns: number;
  drift: number;
  /** Set for a sample of auxiliary calls (a fingerprint's kind, or `unchained` by the rule). */
  auxiliary: AuxiliaryKind | null;
};

const statusName: Record<number, string> = {
  [RolloutStatus.OK]: "ok",
  [RolloutStatus.FAILED]: "failed",
  [RolloutStatus.INFRA_ERROR]: "infra_error",
  [RolloutStatus.TIMEOUT]: "timeout",
};

/** The name of a RolloutResult status, or `unfinished` without a result. */
export function rolloutStatusName(result: RolloutResult | undefined): string {
  if (!result) return "unfinished";
  return statusName[result.status] ?? "unspecified";
}

/** The group a rollout belongs to: its registered group, else task × policy version. */
export function groupOf(rollout: Rollout | undefined, rolloutId: string): string {
  if (rollout?.group) return rollout.group;
  if (rollout) return `${rollout.taskId}@v${rollout.policyVersion}`;
  return `unregistered:${rolloutId}`;
}

/**
 * Why a rollout does not count in group statistics, or undefined when it does. A zero from a
 * crashed container is not the policy's failure: it would bias group-relative advantages.
 */
export function exclusionOf(result: RolloutResult | undefined, timeouts: "score" | "exclude"): string | undefined {
  if (!result) return "unfinished (no RolloutResult)";
  if (result.status === RolloutStatus.INFRA_ERROR) return "infra_error";
  if (result.status === RolloutStatus.TIMEOUT) {
    // An executor marks a timeout caused by the infrastructure (pod never scheduled, image pull) this way.
    if (timeouts === "exclude" || result.metrics["infra"] === 1 || /^infra/i.test(result.error)) return "timeout (infrastructure)";
  }
  if (result.status === RolloutStatus.UNSPECIFIED) return "result without status";
  return undefined;
}

const tokenStatusName = (s: TokenStatus): string => TokenStatus[s]?.toLowerCase() ?? String(s);

/**
 * Assembles a rollout. Calls are taken in seq order; each is matched to the held sample with the
 * longest common prefix (so parallel sub-agents separate by prefix, not arrival order).
 * `bodies`: the rollout's request bodies (a `RequestBodies`, shared with what reads them next,
 * or its content store), looked at for auxiliary calls.
 *
 * @example
 * const t = assembleTrajectory(collected.calls, collected.rollout, collected.result, { rewardPolicy: "final" }, collected.content);
 * t.samples[0].response_mask; // 1 where the policy sampled
 */
export function assembleTrajectory(
  calls: readonly ResolvedCall[],
  rollout: Rollout | undefined,
  result: RolloutResult | undefined,
  options: AssembleOptions = {},
  bodies?: ContentStore | RequestBodies,
): RolloutTrajectory {
  const assembler = new Assembler(rollout, options, bodies instanceof RequestBodies ? bodies : new RequestBodies(bodies));
  const ordered = [...calls].sort((a, b) => a.call.seq - b.call.seq);
  for (const resolved of ordered) assembler.add(resolved);
  assembler.finishClassifying(ordered);
  const rolloutId = rollout?.rolloutId ?? result?.rolloutId ?? calls[0]?.call.rolloutId ?? "";
  return assembler.trajectory(rolloutId, result);
}

/** The state of one rollout's assembly: the samples held so far and how each call was classified. */
class Assembler {
  private readonly held: Held[] = [];
  private readonly stats: RolloutStats = { calls: 0, clean: 0, realign: 0, fork: 0, broken: 0, auxiliary: 0, drift_tokens: 0 };
  private readonly broken: BrokenCall[] = [];
  private readonly kinds: RolloutTrajectory["kinds"] = [];
  /** The call that created each agent sample, labelled start / fork once auxiliary samples are known. */
  private readonly created: { sample: Held; entry: RolloutTrajectory["kinds"][number] }[] = [];
  private readonly fingerprints: readonly AuxiliaryFingerprint[];
  private readonly trailing: Set<number>;

  constructor(
    private readonly rollout: Rollout | undefined,
    private readonly options: AssembleOptions,
    private readonly bodies: RequestBodies,
  ) {
    this.fingerprints = options.fingerprints ?? fingerprintsFor(rollout?.harness ?? "");
    this.trailing = new Set(options.thinkTrailing ?? []);
  }

  /** Classifies the next call (in seq order) and grows, forks or closes samples with it. */
  add(resolved: ResolvedCall): void {
    const call = resolved.call;
    this.stats.calls++;
    const fingerprint = this.fingerprintOf(call);
    if (fingerprint) return this.addAuxiliary(resolved, fingerprint);
    if (call.tokenStatus === TokenStatus.COMPLETE && call.prefixOf && !resolved.problem) {
      // Fast path: the delta already says "all of the held tokens, then this suffix". The proxy
      // picks the call with the longest common prefix, so this is the longest clean extension.
      const s = this.held.find((x) => x.open && x.exact && !x.auxiliary && x.lastCall === call.prefixOf && x.tokens.length === call.prefixLen);
      if (s) {
        this.grow(s, resolved, call.promptTokenIds);
        this.stats.clean++;
        this.kinds.push({ call_id: call.callId, seq: call.seq, kind: "clean", sample: s.index });
        return;
      }
    }
    const prompt = call.tokenStatus === TokenStatus.COMPLETE ? resolved.prompt : undefined;
    if (!prompt) return this.addBroken(resolved);
    const candidates = this.held.filter((s) => s.open && !s.auxiliary);
    const ranked = candidates.map((s) => ({ s, lcp: commonPrefix(s.tokens, prompt) })).sort((a, b) => b.lcp - a.lcp || b.s.lastSeq - a.s.lastSeq);
    const clean = ranked.find((r) => r.lcp === r.s.tokens.length);
    if (clean) {
      this.grow(clean.s, resolved, prompt.slice(clean.s.tokens.length));
      this.stats.clean++;
      this.kinds.push({ call_id: call.callId, seq: call.seq, kind: "clean", sample: clean.s.index });
      return;
    }
    if (this.realign(resolved, prompt, ranked.map((r) => r.s))) return;
    const s = this.newSample(prompt, call, null);
    this.grow(s, resolved, []);
    const entry = { call_id: call.callId, seq: call.seq, kind: "fork" as CallKind, sample: s.index };
    this.kinds.push(entry);
    this.created.push({ sample: s, entry });
  }

  /** The fingerprint the call's request holds, if any (its body is only searched, parsed on a hit). */
  private fingerprintOf(call: ModelCall): AuxiliaryFingerprint | undefined {
    if (this.fingerprints.length === 0) return undefined;
    let body: Uint8Array;
    try {
      body = this.bodies.bytes(call);
    } catch {
      // A body that cannot be rebuilt tells nothing about the call; its tokens still count.
      return undefined;
    }
    return matchFingerprint(body, this.fingerprints, () => this.bodies.view(call));
  }

  /**
   * An auxiliary call: never part of an agent sample, even where its tokens extend one (a
   * compaction request that appends "summarize" to the agent's history): the agent's sample goes
   * on without it. It grows the open auxiliary sample of its kind it extends, else starts one.
   */
  private addAuxiliary(resolved: ResolvedCall, fingerprint: AuxiliaryFingerprint): void {
    const call = resolved.call;
    this.stats.auxiliary++;
    const entry = { call_id: call.callId, seq: call.seq, kind: "auxiliary" as CallKind, sample: -1, auxiliary: fingerprint.kind, fingerprint: fingerprint.name };
    this.kinds.push(entry);
    const prompt = call.tokenStatus === TokenStatus.COMPLETE ? resolved.prompt : undefined;
    if (!prompt) {
      // Reported like any broken call, but it closes no agent sample: it continued none.
      this.broken.push({ call_id: call.callId, seq: call.seq, token_status: tokenStatusName(call.tokenStatus), reason: resolved.problem ?? `token_status ${tokenStatusName(call.tokenStatus)}` });
      this.stats.broken++;
      return;
    }
    const same = this.held.find((x) => x.open && x.auxiliary === fingerprint.kind && commonPrefix(x.tokens, prompt) === x.tokens.length);
    const s = same ?? this.newSample(prompt, call, fingerprint.kind);
    this.grow(s, resolved, same ? prompt.slice(same.tokens.length) : []);
    entry.sample = s.index;
  }

  /** A call without a usable full prompt. Never retokenize: the sample it belongs to cannot be continued token-exactly. */
  private addBroken(resolved: ResolvedCall): void {
    const call = resolved.call;
    const reason = resolved.problem ?? `token_status ${tokenStatusName(call.tokenStatus)}`;
    this.broken.push({ call_id: call.callId, seq: call.seq, token_status: tokenStatusName(call.tokenStatus), reason });
    this.stats.broken++;
    const candidates = this.held.filter((s) => s.open && !s.auxiliary);
    const partial = call.tokenStatus !== TokenStatus.COMPLETE ? resolved.prompt : undefined;
    const known = partial && partial.length > 0 ? partial : undefined;
    if (known && candidates.length > 0) {
      // The prompt ids are there (PARTIAL): close only the sample it continues.
      best(candidates, known).s.open = false;
    } else {
      // No ids at all: which sample it continued is unknown, so none is continued.
      for (const s of candidates) s.open = false;
    }
    this.kinds.push({ call_id: call.callId, seq: call.seq, kind: "broken", sample: -1 });
  }

  /** Grows the first of `ranked` whose tokens the prompt repeats with reasoning blocks stripped; whether one was. */
  private realign(resolved: ResolvedCall, prompt: readonly number[], ranked: readonly Held[]): boolean {
    const { thinkOpen, thinkClose } = this.options;
    if (thinkOpen === undefined || thinkClose === undefined) return false;
    const minRetained = this.options.minRetainedFraction ?? 0.5;
    const maxDrift = this.options.maxDriftTokens ?? Number.POSITIVE_INFINITY;
    for (const s of ranked) {
      const match = matchWithStrippedThink(s.tokens, prompt, { thinkOpen, thinkClose, thinkTrailing: this.trailing, responseStart: s.promptLen, mask: s.mask });
      if (!match || match.stripped === 0) continue;
      if (match.stripped > maxDrift || (s.tokens.length - match.stripped) / s.tokens.length < minRetained) continue;
      this.grow(s, resolved, prompt.slice(match.consumed));
      s.realigns++;
      s.exact = false;
      s.drift += match.stripped;
      this.stats.realign++;
      this.stats.drift_tokens += match.stripped;
      this.kinds.push({ call_id: resolved.call.callId, seq: resolved.call.seq, kind: "realign", sample: s.index });
      return true;
    }
    return false;
  }

  private newSample(prompt: readonly number[], call: ModelCall, auxiliary: AuxiliaryKind | null): Held {
    const s: Held = {
      index: this.held.length,
      tokens: [...prompt],
      promptLen: prompt.length,
      mask: [],
      logprobs: [],
      open: true,
      calls: [],
      lastSeq: call.seq,
      lastCall: call.callId,
      exact: true,
      policyVersions: [],
      blobRefs: new Set(),
      realigns: 0,
      drift: 0,
      auxiliary,
    };
    this.held.push(s);
    return s;
  }

  private grow(s: Held, resolved: ResolvedCall, newTokens: readonly number[]): void {
    const call = resolved.call;
    for (const t of newTokens) {
      s.tokens.push(t);
      s.mask.push(0);
      s.logprobs.push(0);
    }
    appendCompletion(s, resolved);
    s.calls.push(call.callId);
    s.lastSeq = call.seq;
    s.lastCall = call.callId;
    if (!s.policyVersions.includes(call.policyVersion)) s.policyVersions.push(call.policyVersion);
    for (const b of call.blobRefs) s.blobRefs.add(b);
  }

  /** After the last call: the general rule for unchained side calls, then start / fork labels. */
  finishClassifying(ordered: readonly ResolvedCall[]): void {
    labelUnchained(this.held, ordered, (c) => this.bodies.view(c.call), this.kinds, this.stats);
    // The first agent sample starts the rollout; every later one is a fork.
    let agentSamples = 0;
    for (const { sample, entry } of this.created) {
      if (sample.auxiliary) continue;
      entry.kind = agentSamples++ === 0 ? "start" : "fork";
      if (entry.kind === "fork") this.stats.fork++;
    }
  }

  /** The assembled trajectory: samples rewarded by the reward policy, validity, stats. */
  trajectory(rolloutId: string, result: RolloutResult | undefined): RolloutTrajectory {
    const rollout = this.rollout;
    const group = groupOf(rollout, rolloutId);
    const excluded = exclusionOf(result, this.options.timeouts ?? "score");
    const reward = result?.reward ?? 0;
    // The reward goes to the agent's final answer: the agent sample holding the last agent call.
    const byEnd = this.held.filter((s) => !s.auxiliary).sort((a, b) => b.lastSeq - a.lastSeq);
    const rank = new Map(byEnd.map((s, k) => [s, k]));
    const policy = this.options.rewardPolicy ?? "final";
    const gamma = this.options.gamma ?? 0.9;
    const rewardOf = (k: number) => (k < 0 ? 0 : k === 0 || policy === "same" ? reward : policy === "discounted" ? reward * gamma ** k : 0);
    const samples = this.held.map((s) => sampleOf(s, rolloutId, group, rollout, rewardOf(rank.get(s) ?? -1), rank.get(s) === 0));
    const noSamples = samples.length === 0 ? "no usable model call" : byEnd.length === 0 ? "no agent call (auxiliary calls only)" : undefined;
    const trajectory: RolloutTrajectory = {
      rollout_id: rolloutId,
      task_id: rollout?.taskId ?? "",
      group,
      status: rolloutStatusName(result),
      reward,
      valid: !excluded && !noSamples,
      samples,
      stats: this.stats,
      broken: this.broken,
      kinds: this.kinds,
    };
    const why = excluded ?? noSamples;
    if (why) trajectory.excluded = why;
    return trajectory;
  }
}

function sampleOf(s: Held, rolloutId: string, group: string, rollout: Rollout | undefined, reward: number, isFinal: boolean): TrajectorySample {
  return {
    sample_id: `${rolloutId}#${s.index}`,
    rollout_id: rolloutId,
    task_id: rollout?.taskId ?? "",
    group,
    experiment: rollout?.experiment ?? "",
    iteration: rollout?.iteration ?? 0,
    policy_version: s.policyVersions[0] ?? rollout?.policyVersion ?? 0,
    policy_versions: s.policyVersions,
    sample_index: s.index,
    prompt_ids: s.tokens.slice(0, s.promptLen),
    response_ids: s.tokens.slice(s.promptLen),
    response_mask: s.mask,
    response_logprobs: s.logprobs,
    reward,
    num_turns: 2 * s.calls.length,
    is_final: isFinal,
    auxiliary: s.auxiliary,
    call_ids: s.calls,
    blob_refs: [...s.blobRefs],
    realigns: s.realigns,
    drift_tokens: s.drift,
  };
}

/**
 * The general rule: a sample of one call that offers no tools while another call of the rollout
 * does, whose conversation extends no earlier call's and is extended by no later call's, continues
 * no agent chain — a side call (a title, a summary, a classifier) whatever the harness. Calls a
 * fingerprint already named are left as they are. Requests are parsed only for such samples.
 */
function labelUnchained(
  held: Held[],
  ordered: readonly ResolvedCall[],
  viewOf: (c: ResolvedCall) => RequestView | undefined,
  kinds: RolloutTrajectory["kinds"],
  stats: RolloutStats,
): void {
  const byId = new Map(ordered.map((c) => [c.call.callId, c]));
  const agentCalls = (): ResolvedCall[] => ordered.filter((c) => !kinds.some((k) => k.call_id === c.call.callId && k.kind === "auxiliary"));
  let others: ResolvedCall[] | undefined;
  for (const s of held) {
    if (s.auxiliary || s.calls.length !== 1) continue;
    const self = byId.get(s.calls[0]!)!;
    const view = viewOf(self);
    if (!view || view.tools > 0) continue;
    others ??= agentCalls();
    const rest = others.filter((c) => c !== self);
    if (!rest.some((c) => (viewOf(c)?.tools ?? 0) > 0)) continue;
    const chained = rest.some((c) => {
      const v = viewOf(c);
      if (!v) return false;
      return c.call.seq < self.call.seq ? continuesConversation(view, v) : continuesConversation(v, view);
    });
    if (chained) continue;
    s.auxiliary = "unchained";
    stats.auxiliary++;
    const entry = kinds.find((k) => k.call_id === self.call.callId)!;
    entry.kind = "auxiliary";
    entry.auxiliary = "unchained";
    entry.fingerprint = "rule";
  }
}

function appendCompletion(s: Held, resolved: ResolvedCall): void {
  const { completionTokenIds: ids, completionLogprobs: lps } = resolved.call;
  for (let k = 0; k < ids.length; k++) {
    s.tokens.push(ids[k]!);
    s.mask.push(1);
    // float32 as recorded; a missing logprob (server sent fewer) is 0, like veRL's padding.
    s.logprobs.push(lps[k] ?? 0);
  }
}

function best(candidates: Held[], prompt: readonly number[]): { s: Held; lcp: number } {
  return candidates
    .map((s) => ({ s, lcp: commonPrefix(s.tokens, prompt) }))
    .sort((a, b) => b.lcp - a.lcp || b.s.lastSeq - a.s.lastSeq)[0]!;
}
