/**
 * Turns records into rows of the compacted tables. Pure functions: the compactor feeds
 * them to DuckDB appenders, tests call them directly.
 */
import { requestBodyOf, StoredBodyError, type ContentStore } from "../records/index.ts";
import { CallStatus, Protocol, RolloutStatus, TokenStatus, type ModelCall, type Record, type Rollout, type RolloutResult } from "../schemas/index.ts";
import { isControlTool, isShellTool, resultError, toolFacts } from "./classify.ts";
import { extractCall } from "./extract/index.ts";
import type { TableName, Value } from "./tables.ts";

/** Tool results and verifier output are cut to this many characters: enough to read, not a copy of the log. */
export const resultTextLimit = 2000;
const assistantTextLimit = 4000;

export type Rows = { [table in TableName]?: Value[][] };

/** `PROTOCOL_CHAT` → `chat`, `ROLLOUT_STATUS_INFRA_ERROR` → `infra_error`. */
function enumName(names: { [value: number]: string }, value: number): string {
  return (names[value] ?? "UNSPECIFIED").toLowerCase();
}

function truncate(text: string, limit: number): string {
  return text.length > limit ? text.slice(0, limit) : text;
}

const decoder = new TextDecoder();

// The k rollouts of a task often send the same command (`pytest -q`, `cat app.py`): parse it once.
const factsCache = new Map<string, ReturnType<typeof toolFacts>>();
function cachedToolFacts(name: string, argumentsJson: string): ReturnType<typeof toolFacts> {
  const key = `${name}\u0000${argumentsJson}`;
  let facts = factsCache.get(key);
  if (!facts) {
    if (factsCache.size >= 20_000) factsCache.clear();
    facts = toolFacts(name, argumentsJson);
    factsCache.set(key, facts);
  }
  return facts;
}

function rolloutRow(r: Rollout, segment: string): Value[] {
  return [r.rolloutId, r.experiment, r.iteration, r.taskId, r.group, r.attempt, r.harness, r.createdUnixMs, r.policyVersion, JSON.stringify(r.labels), segment];
}

function resultRow(r: RolloutResult, segment: string): Value[] {
  return [r.rolloutId, r.reward, enumName(RolloutStatus, r.status), truncate(r.verifierOutput, resultTextLimit), r.finishedUnixMs, r.error, JSON.stringify(r.metrics), segment];
}

/**
 * Rows for one model call: the call, its bodies, its tool uses, and the tool results in its
 * request that `seen` (rollout, tool_call_id, occurrence) has not met yet — each request repeats
 * the whole history, so only first sightings are kept.
 */
function callRows(call: ModelCall, segment: string, seen: Set<string>, content: ContentStore): Rows {
  let requestBody: Uint8Array;
  try {
    requestBody = requestBodyOf(call, content);
  } catch (error) {
    // Only damage in the segment (already reported by the reader) leaves a body unrebuildable.
    if (!(error instanceof StoredBodyError)) throw error;
    requestBody = new Uint8Array(0);
  }
  const view = extractCall({ protocol: call.protocol, stream: call.stream, requestBody, responseBody: call.responseBody });
  const usage = call.usage;
  const calls: Value[] = [
    call.rolloutId,
    call.seq,
    call.callId,
    call.startUnixMs,
    call.endUnixMs,
    enumName(Protocol, call.protocol),
    call.model,
    call.upstream,
    call.policyVersion,
    call.stream,
    call.httpStatus,
    enumName(CallStatus, call.status),
    call.error,
    usage?.promptTokens ?? null,
    usage?.completionTokens ?? null,
    // proto3 has no "unset" for a uint32: a zero total with parts present means "not reported".
    usage ? usage.totalTokens || usage.promptTokens + usage.completionTokens : null,
    usage?.cachedTokens ?? null,
    call.latencyMs,
    call.ttftMs > 0 ? call.ttftMs : null,
    call.finishReason,
    enumName(TokenStatus, call.tokenStatus),
    call.promptLen || call.prefixLen + call.promptTokenIds.length,
    call.completionTokenIds.length,
    call.upstreamAttempts,
    [...new Set(view.toolsOffered)],
    // Tools that do something (not finish/submit): what tool coverage is over.
    [...new Set(view.toolsOffered)].filter((name) => !isControlTool(name)),
    view.toolUses.length,
    truncate(view.assistantText, assistantTextLimit),
    segment,
  ];
  const bodies: Value[] = [call.callId, call.rolloutId, call.seq, decoder.decode(requestBody), decoder.decode(call.responseBody)];
  const uses = view.toolUses.map((use, idx): Value[] => {
    const facts = cachedToolFacts(use.name, use.arguments);
    return [
      call.rolloutId, call.seq, idx, use.id, use.name, use.arguments, facts.kind, facts.isShell,
      facts.writes, facts.reads, facts.executes, facts.runsCheck, facts.verifiesOwnEdit, facts.intents,
      facts.plan?.total ?? null, facts.plan?.completed ?? null, facts.parseError ?? null,
    ];
  });
  const results: Value[][] = [];
  const occurrences = new Map<string, number>();
  for (const result of view.toolResults) {
    if (result.id === "") continue;
    const occurrence = occurrences.get(result.id) ?? 0;
    occurrences.set(result.id, occurrence + 1);
    const key = `${call.rolloutId}\u0000${result.id}\u0000${occurrence}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const error = resultError(result.text, result.isError, isShellTool(result.name));
    results.push([call.rolloutId, call.seq, result.id, occurrence, result.name, error.isError, error.signal, truncate(result.text, resultTextLimit)]);
  }
  return { call_records: [calls], call_bodies: [bodies], tool_use_records: uses, tool_result_records: results };
}

/**
 * The rows one record contributes to each table (blobs contribute none). `content` rebuilds
 * request bodies stored as references: one store for the records of a segment, fed in order.
 *
 * @example
 * const seen = new Set<string>();
 * const content = createContentStore();
 * rowsOf(record, "seg-00000001.forge", seen, content).tool_use_records // [[rolloutId, seq, 0, id, "bash", ...]]
 */
export function rowsOf(record: Record, segment: string, seen: Set<string>, content: ContentStore): Rows {
  switch (record.kind.case) {
    case "modelCall":
      return callRows(record.kind.value, segment, seen, content);
    case "rollout":
      return { rollout_records: [rolloutRow(record.kind.value, segment)] };
    case "rolloutResult":
      // The rollout's calls are done: its content is not needed again.
      content.forget(record.kind.value.rolloutId);
      return { result_records: [resultRow(record.kind.value, segment)] };
    default:
      return {};
  }
}
