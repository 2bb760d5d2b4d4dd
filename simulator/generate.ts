/**
 * From a policy turn to sampled tokens: the turn written in the model's output format (Qwen3:
 * a think block in thinking mode, the content, then one `<tool_call>` block per call with its
 * arguments as the chat template's `tojson` writes them, which is how Qwen3 samples them),
 * tokenized as one text, `<|im_end|>` appended unless `max_tokens` or a stop string cuts it
 * short, and the byte offsets that let the stream split the tokens without breaking a UTF-8
 * character. What the caller sees of it comes from the model's output parsers (model/).
 */
import { pyDumps, tryPyLoads } from "../model/index.ts";
import { IM_END, type SimTokenizer } from "./model.ts";
import type { PolicyTurn } from "./types.ts";

export interface Generation {
  turn: PolicyTurn;
  /** The sampled text (without the end-of-turn token). */
  text: string;
  ids: number[];
  /** Byte offset after each token. */
  byteEnds: number[];
  bodyBytes: Uint8Array;
  /** Bytes of the text the caller sees (less than the tokens cover when a stop string matched). */
  visibleBytes: number;
  /** The engine's finish reason: the end-of-turn token or a stop string, or max_tokens. */
  finishReason: "stop" | "length";
  /** The stop string that ended generation (vLLM's `stop_reason`), else null. */
  stopReason: string | null;
}

const utf8 = new TextEncoder();
const decoder = new TextDecoder();
const byteLength = (text: string) => utf8.encode(text).length;

/**
 * The turn as Qwen3 writes it. In thinking mode (the default) the answer opens with a think
 * block, empty when the policy does not think; with `enable_thinking: false` the prompt
 * already holds the empty block and the answer starts with the content.
 *
 * @example
 * modelText({ content: "", toolCalls: [{ name: "bash", arguments: '{"command":"ls"}' }] }, true);
 * // '<think>\n\n</think>\n\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
 */
export function modelText(turn: PolicyTurn, thinking: boolean): string {
  let text = thinking ? `<think>\n${turn.reasoning ?? ""}\n</think>\n\n${turn.content}` : turn.content;
  turn.toolCalls.forEach((call, i) => {
    if (i > 0 || turn.content) text += "\n";
    // The template writes arguments with tojson; the model samples them that way.
    const parsed = tryPyLoads(call.arguments);
    text += `<tool_call>\n{"name": "${call.name}", "arguments": ${parsed instanceof Map ? pyDumps(parsed) : call.arguments}}\n</tool_call>`;
  });
  return text;
}

/**
 * Tokenizes a turn as the simulated model's sample.
 *
 * @example
 * const g = generate(tokenizer, { content: "Hello", toolCalls: [] }, { thinking: false });
 * g.ids; // [9707, 151645]
 */
export function generate(tokenizer: SimTokenizer, turn: PolicyTurn, options: { thinking: boolean; maxTokens?: number; stop?: string[] }): Generation {
  const text = modelText(turn, options.thinking);
  const bodyBytes = utf8.encode(text);
  let ids = [...tokenizer.encode(text), IM_END];
  let finishReason: Generation["finishReason"] = "stop";
  let byteEnds = ends(tokenizer, ids);
  let visibleBytes = bodyBytes.length;
  let stopReason: string | null = null;
  // vLLM checks stop strings on the detokenized output: generation ends with the token that
  // completes the string, and the text is cut where it starts.
  const hit = firstStop(text, options.stop ?? []);
  if (hit) {
    const startByte = byteLength(text.slice(0, hit.index));
    const endByte = startByte + byteLength(hit.stop);
    const last = byteEnds.findIndex((end) => end >= endByte);
    ids = ids.slice(0, last + 1);
    byteEnds = byteEnds.slice(0, last + 1);
    visibleBytes = startByte;
    stopReason = hit.stop;
  }
  const maxTokens = options.maxTokens;
  if (maxTokens !== undefined && ids.length > maxTokens) {
    ids = ids.slice(0, maxTokens);
    byteEnds = byteEnds.slice(0, maxTokens);
    visibleBytes = Math.min(visibleBytes, byteEnds.at(-1) ?? 0);
    stopReason = null;
    finishReason = "length";
  }
  return { turn, text, ids, byteEnds, bodyBytes, visibleBytes, finishReason, stopReason };
}

/** Byte offset after each token; the appended end-of-turn token adds no text. */
function ends(tokenizer: SimTokenizer, ids: number[]): number[] {
  const byteEnds: number[] = [];
  let at = 0;
  ids.forEach((id, i) => {
    if (i < ids.length - 1) at += tokenizer.tokenBytes(id).length;
    byteEnds.push(at);
  });
  return byteEnds;
}

function firstStop(text: string, stop: string[]): { index: number; stop: string } | undefined {
  let best: { index: number; stop: string } | undefined;
  for (const s of stop) {
    if (s === "") continue;
    const index = text.indexOf(s);
    if (index >= 0 && (!best || index < best.index)) best = { index, stop: s };
  }
  return best;
}

/** The text the caller sees of bytes [from, to) (cut at a stop string). */
export function visibleText(g: Generation, from = 0, to = g.bodyBytes.length): string {
  const end = Math.min(to, g.visibleBytes);
  return end > from ? decoder.decode(g.bodyBytes.subarray(from, end)) : "";
}

/** Bytes of the text the sampled tokens cover (less than the text when cut by max_tokens). */
export function coveredBytes(g: Generation): number {
  return Math.min(g.byteEnds.at(-1) ?? 0, g.visibleBytes);
}

/** True when byte offset `at` is not inside a multi-byte UTF-8 character of the text. */
export function atCharBoundary(g: Generation, at: number): boolean {
  if (at >= g.bodyBytes.length) return true;
  return (g.bodyBytes[at]! & 0xc0) !== 0x80;
}
