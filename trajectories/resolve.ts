/**
 * Rebuilds each call's full prompt from the delta chain (docs/contracts.md):
 *   full prompt of c = tokens(prefix_of)[0:prefix_len] ++ prompt_token_ids,  tokens(c) = full prompt of c ++ completion of c.
 * Calls are held as nodes pointing at their prefix, so a rollout costs in memory what its records
 * cost on disk (the deltas); a full prompt is materialized only when asked for.
 */
import { createContentStore, type ContentStore } from "../records/index.ts";
import type { ModelCall, Record, Rollout, RolloutResult } from "../schemas/index.ts";
import type { ResolvedCall } from "./types.ts";

type TokenNode = {
  prefix: TokenNode | undefined;
  prefixLen: number;
  suffix: readonly number[];
  completion: readonly number[];
  /** Length of tokens(node) = prefixLen + suffix + completion. */
  length: number;
};

/** The first `n` tokens of tokens(node), walking the chain without recursion. */
function take(node: TokenNode, n: number): number[] {
  const stack: [TokenNode, number][] = [];
  let current = node;
  let count = n;
  for (;;) {
    const fromPrefix = current.prefix ? Math.min(count, current.prefixLen) : 0;
    stack.push([current, count - fromPrefix]);
    if (!current.prefix || fromPrefix === 0) break;
    current = current.prefix;
    count = fromPrefix;
  }
  const out: number[] = [];
  for (let i = stack.length - 1; i >= 0; i--) {
    const [n2, own] = stack[i]!;
    const fromSuffix = Math.min(own, n2.suffix.length);
    for (let k = 0; k < fromSuffix; k++) out.push(n2.suffix[k]!);
    for (let k = 0; k < own - fromSuffix; k++) out.push(n2.completion[k]!);
  }
  return out;
}

/**
 * A resolver for one rollout's calls: add calls in log order, read their full prompts.
 *
 * @example
 * const r = promptResolver();
 * const first = r.add(call1);            // first.prompt: call1.promptTokenIds
 * const second = r.add(call2);           // second.prompt: tokens(call1)[0:prefix_len] ++ call2.promptTokenIds
 */
export function promptResolver(): { add(call: ModelCall): ResolvedCall } {
  const nodes = new Map<string, TokenNode>();
  // The last prompt materialized: assembly reads a call's prompt several times in a row, and
  // this keeps that to one walk of the chain without holding every full prompt (the nodes stay
  // deltas, as on disk).
  let last: { node: TokenNode; prompt: number[] } | undefined;
  const promptOf = (node: TokenNode, length: number): number[] => {
    if (last?.node !== node) last = { node, prompt: take(node, length) };
    return last.prompt;
  };
  return {
    add(call) {
      let problem: string | undefined;
      let prefix: TokenNode | undefined;
      if (call.prefixOf) {
        prefix = nodes.get(call.prefixOf);
        if (!prefix) problem = `prefix_of "${call.prefixOf}" is not an earlier call of rollout ${call.rolloutId}`;
        else if (call.prefixLen > prefix.length)
          problem = `prefix_len ${call.prefixLen} is past the end of call ${call.prefixOf} (${prefix.length} tokens)`;
      }
      const usable = !problem;
      const node: TokenNode = {
        prefix: usable ? prefix : undefined,
        prefixLen: usable && prefix ? call.prefixLen : 0,
        suffix: call.promptTokenIds,
        completion: call.completionTokenIds,
        length: (usable && prefix ? call.prefixLen : 0) + call.promptTokenIds.length + call.completionTokenIds.length,
      };
      if (call.callId) nodes.set(call.callId, node);
      const promptLength = node.prefixLen + node.suffix.length;
      const resolved: ResolvedCall = {
        call,
        get prompt() {
          return usable ? promptOf(node, promptLength) : undefined;
        },
      };
      if (problem) resolved.problem = problem;
      return resolved;
    },
  };
}

/** Everything recorded about one rollout, handed over once its result is in (or the log ends). */
export type CollectedRollout = {
  rolloutId: string;
  rollout: Rollout | undefined;
  result: RolloutResult | undefined;
  calls: ResolvedCall[];
  /** The rollout's request content: `requestBodyOf(call, content)` rebuilds any of its calls' bodies. */
  content: ContentStore;
  /** Calls recorded after the result (not assembled, reported). */
  lateCalls: number;
};

export type CollectStats = { records: number; maxOpenRollouts: number; lateCalls: number; blobs: number };

type Open = { rollout?: Rollout; calls: ResolvedCall[]; resolver: ReturnType<typeof promptResolver>; content: ContentStore };

/**
 * Streams a record log into complete rollouts. Holds only open rollouts (registered or with
 * calls, no result yet): their call records with prompts as deltas. A rollout is handed over when
 * its RolloutResult arrives; those still open when the log ends come last with `result` undefined.
 *
 * @example
 * for await (const r of collectRollouts(readRecords("data"))) console.log(r.rolloutId, r.calls.length);
 */
export async function* collectRollouts(
  records: AsyncIterable<Record | { record: Record }> | Iterable<Record | { record: Record }>,
  stats: CollectStats = { records: 0, maxOpenRollouts: 0, lateCalls: 0, blobs: 0 },
): AsyncGenerator<CollectedRollout> {
  const open = new Map<string, Open>();
  const finished = new Set<string>();
  const openOf = (id: string): Open => {
    let entry = open.get(id);
    if (!entry) {
      entry = { calls: [], resolver: promptResolver(), content: createContentStore() };
      open.set(id, entry);
      if (open.size > stats.maxOpenRollouts) stats.maxOpenRollouts = open.size;
    }
    return entry;
  };
  for await (const item of records as AsyncIterable<Record | { record: Record }>) {
    const record = "kind" in item ? item : item.record;
    stats.records++;
    const kind = record.kind;
    if (kind.case === "modelCall") {
      const id = kind.value.rolloutId;
      if (finished.has(id)) {
        stats.lateCalls++;
        continue;
      }
      const entry = openOf(id);
      entry.calls.push(entry.resolver.add(kind.value));
      try {
        // In log order, as stored bodies need; a body that cannot be rebuilt (damage in its
        // segment) throws again, naming what is missing, when a reader asks for it.
        entry.content.add(kind.value);
      } catch {
        // reported where the body is read
      }
    } else if (kind.case === "rollout") {
      openOf(kind.value.rolloutId).rollout = kind.value;
    } else if (kind.case === "rolloutResult") {
      const id = kind.value.rolloutId;
      const entry = open.get(id) ?? { calls: [], resolver: promptResolver(), content: createContentStore() };
      open.delete(id);
      finished.add(id);
      yield { rolloutId: id, rollout: entry.rollout, result: kind.value, calls: entry.calls, content: entry.content, lateCalls: 0 };
    } else if (kind.case === "blob") {
      stats.blobs++;
    }
  }
  for (const [id, entry] of open) yield { rolloutId: id, rollout: entry.rollout, result: undefined, calls: entry.calls, content: entry.content, lateCalls: 0 };
}

/**
 * The full prompt of every call, streaming: a thin view over `collectRollouts` for readers that
 * want calls rather than rollouts (yields when each rollout completes).
 *
 * @example
 * for await (const { call, prompt } of resolvePrompts(readRecords("data"))) console.log(call.callId, prompt?.length);
 */
export async function* resolvePrompts(
  records: AsyncIterable<Record | { record: Record }> | Iterable<Record | { record: Record }>,
): AsyncGenerator<ResolvedCall> {
  for await (const rollout of collectRollouts(records)) yield* rollout.calls;
}
