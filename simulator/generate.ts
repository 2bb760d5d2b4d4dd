/**
 * From a policy turn to sampled tokens: the body text with its spans (reasoning, content, tool
 * names, tool arguments, markup), tokenized as one segment (exactly as a later prompt re-renders
 * it), `<|im_end|>` appended unless `max_tokens` cuts it short, and the byte offsets that let
 * the stream split the tokens into deltas without breaking a UTF-8 character.
 */
import { assistantBody } from "./chatml.ts";
import { IM_END, type SimTokenizer } from "./tokenizer.ts";
import type { PolicyTurn } from "./types.ts";

export type SpanKind = "markup" | "reasoning" | "content" | "toolName" | "toolArgs";
export interface Span {
  kind: SpanKind;
  /** UTF-8 byte offsets into the body. */
  start: number;
  end: number;
  call?: number;
}

export interface Generation {
  turn: PolicyTurn;
  ids: number[];
  /** Byte offset after each token. */
  byteEnds: number[];
  spans: Span[];
  bodyBytes: Uint8Array;
  /** Bytes of the body the caller sees (less than the tokens cover when a stop string matched). */
  visibleBytes: number;
  finishReason: "stop" | "tool_calls" | "length";
  /** The stop string that ended generation (vLLM's `stop_reason`), else null. */
  stopReason: string | null;
}

const utf8 = new TextEncoder();
const byteLength = (text: string) => utf8.encode(text).length;

/** Spans of the body, in the order `assistantBody` writes it. */
export function bodySpans(turn: PolicyTurn): Span[] {
  const spans: Span[] = [];
  let at = 0;
  const push = (kind: SpanKind, text: string, call?: number) => {
    const length = byteLength(text);
    if (length > 0) spans.push({ kind, start: at, end: at + length, call });
    at += length;
  };
  if (turn.reasoning !== undefined) {
    push("markup", "<think>\n");
    push("reasoning", turn.reasoning);
    push("markup", "\n</think>\n\n");
  }
  push("content", turn.content);
  turn.toolCalls.forEach((call, i) => {
    push("markup", `${i > 0 || turn.content ? "\n" : ""}<tool_call>\n{"name": "`);
    push("toolName", call.name, i);
    push("markup", '", "arguments": ');
    push("toolArgs", call.arguments, i);
    // The call parses once its JSON closes (hermes also accepts an unclosed <tool_call>).
    push("markup", "}", i);
    push("markup", "\n</tool_call>");
  });
  return spans;
}

/**
 * Tokenizes a turn as the simulated model's sample.
 *
 * @example
 * const g = generate(tokenizer, { content: "Hello", toolCalls: [] }, undefined);
 * g.ids; // [9707, 151645]
 */
export function generate(tokenizer: SimTokenizer, turn: PolicyTurn, maxTokens: number | undefined, stop: string[] = []): Generation {
  const body = assistantBody(turn);
  const bodyBytes = utf8.encode(body);
  let ids = [...tokenizer.encode(body), IM_END];
  let finishReason: Generation["finishReason"] = turn.toolCalls.length > 0 ? "tool_calls" : "stop";
  let byteEnds = ends(tokenizer, ids);
  let visibleBytes = bodyBytes.length;
  let stopReason: string | null = null;
  // vLLM checks stop strings on the detokenized output: generation ends with the token that
  // completes the string, and the text is cut where it starts.
  const hit = firstStop(body, stop);
  if (hit) {
    const startByte = byteLength(body.slice(0, hit.index));
    const endByte = startByte + byteLength(hit.stop);
    const last = byteEnds.findIndex((end) => end >= endByte);
    ids = ids.slice(0, last + 1);
    byteEnds = byteEnds.slice(0, last + 1);
    visibleBytes = startByte;
    stopReason = hit.stop;
    finishReason = "stop";
  }
  if (maxTokens !== undefined && ids.length > maxTokens) {
    ids = ids.slice(0, maxTokens);
    byteEnds = byteEnds.slice(0, maxTokens);
    visibleBytes = Math.min(visibleBytes, byteEnds.at(-1) ?? 0);
    stopReason = null;
    finishReason = "length";
  }
  return { turn, ids, byteEnds, spans: bodySpans(turn), bodyBytes, visibleBytes, finishReason, stopReason };
}

function ends(tokenizer: SimTokenizer, ids: number[]): number[] {
  const byteEnds: number[] = [];
  let at = 0;
  for (const id of ids) {
    at += tokenizer.tokenBytes(id).length;
    byteEnds.push(at);
  }
  return byteEnds;
}

function firstStop(body: string, stop: string[]): { index: number; stop: string } | undefined {
  let best: { index: number; stop: string } | undefined;
  for (const s of stop) {
    if (s === "") continue;
    const index = body.indexOf(s);
    if (index >= 0 && (!best || index < best.index)) best = { index, stop: s };
  }
  return best;
}

const decoder = new TextDecoder();

/** The text of `kind` spans that lies in bytes [from, to). */
export function spanText(g: Generation, from: number, to: number, kind: SpanKind, call?: number): string {
  let out = "";
  to = Math.min(to, g.visibleBytes);
  for (const span of g.spans) {
    if (span.kind !== kind || (call !== undefined && span.call !== call)) continue;
    const a = Math.max(from, span.start);
    const b = Math.min(to, span.end);
    if (b > a) out += decoder.decode(g.bodyBytes.subarray(a, b));
  }
  return out;
}

/** Bytes of the body the sampled tokens cover (less than the body when cut by max_tokens). */
export function coveredBytes(g: Generation): number {
  return Math.min(g.byteEnds.at(-1) ?? 0, g.visibleBytes);
}

/** True when byte offset `at` is not inside a multi-byte UTF-8 character of the body. */
export function atCharBoundary(g: Generation, at: number): boolean {
  if (at >= g.bodyBytes.length) return true;
  return (g.bodyBytes[at]! & 0xc0) !== 0x80;
}

/**
 * The non-streamed message vLLM's qwen3 reasoning parser and hermes tool parser would return.
 * A tool call cut short by max_tokens does not parse, so its text stays in `content`.
 */
export function finalMessage(g: Generation): { reasoning?: string; content: string; toolCalls: { name: string; arguments: string }[] } {
  const end = coveredBytes(g);
  const reasoning = g.turn.reasoning !== undefined ? spanText(g, 0, end, "reasoning") : undefined;
  const callsEnd = g.spans.filter((s) => s.kind === "markup" && s.call !== undefined).map((s) => s.end);
  const complete = g.turn.toolCalls.every((_, i) => (callsEnd[i] ?? Infinity) <= end);
  if (complete) return { reasoning, content: spanText(g, 0, end, "content"), toolCalls: g.turn.toolCalls };
  const from = g.turn.reasoning !== undefined ? thinkEnd(g) : 0;
  return { reasoning, content: end > from ? decoder.decode(g.bodyBytes.subarray(from, end)) : "", toolCalls: [] };
}

function thinkEnd(g: Generation): number {
  const markups = g.spans.filter((s) => s.kind === "markup");
  // The second markup span closes the think block.
  return markups[1]?.end ?? 0;
}
