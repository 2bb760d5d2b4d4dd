/**
 * From a policy turn to sampled tokens: the turn written in the model's output format (Qwen3:
 * a think block in thinking mode, the content, then one `<tool_call>` block per call with its
 * arguments as the chat template's `tojson` writes them, which is how Qwen3 samples them;
 * Qwen3-Coder: the content, then one XML `<tool_call>` block per call, as its template writes them),
 * tokenized as one text, `<|im_end|>` appended unless `max_tokens` or a stop string cuts it
 * short, and the byte offsets that let the stream split the tokens without breaking a UTF-8
 * character. What the caller sees of it comes from the model's output parsers (model/).
 */
import { pyDumps, pyFloatRepr, PyFloat, tryPyLoads, type PyValue } from "../model/index.ts";
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
export function modelText(turn: PolicyTurn, thinking: boolean, format: ToolCallFormat = "hermes"): string {
  if (format === "qwen3_coder") return coderText(turn);
  let text = thinking ? `<think>\n${turn.reasoning ?? ""}\n</think>\n\n${turn.content}` : turn.content;
  turn.toolCalls.forEach((call, i) => {
    if (i > 0 || turn.content) text += "\n";
    // The template writes arguments with tojson; the model samples them that way.
    const parsed = tryPyLoads(call.arguments);
    text += `<tool_call>\n{"name": "${call.name}", "arguments": ${parsed instanceof Map ? pyDumps(parsed) : call.arguments}}\n</tool_call>`;
  });
  return text;
}

/** How the model writes tool calls: the name of the vLLM tool parser that reads them. */
export type ToolCallFormat = "hermes" | "qwen3_coder";

/**
 * The turn as Qwen3-Coder writes it: exactly what its chat template renders for an assistant
 * message after `<|im_start|>assistant\n` (the model is trained on that): the content trimmed and
 * a blank line when there are calls, then each call as
 * `<tool_call>\n<function=NAME>\n<parameter=ARG>\nVALUE\n</parameter>\n</function>\n</tool_call>`,
 * one after another. A string value is written as it is, a dict or list with `tojson`, anything
 * else with Python's `str()` (`True`, `None`, `1.0`), as the template's `| string` does. It does
 * not think: no think block.
 *
 * @example
 * modelText({ content: "", toolCalls: [{ name: "bash", arguments: '{"command":"ls"}' }] }, false, "qwen3_coder");
 * // '<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>'
 */
function coderText(turn: PolicyTurn): string {
  if (turn.toolCalls.length === 0) return turn.content;
  const content = turn.content.trim();
  let text = content ? `${content}\n\n` : "";
  turn.toolCalls.forEach((call, i) => {
    if (i > 0) text += "\n";
    text += `<tool_call>\n<function=${call.name}>\n`;
    // vLLM parses the arguments before the template sees them (anything but an object is {}).
    const parsed = tryPyLoads(call.arguments);
    if (parsed instanceof Map) for (const [name, value] of parsed) text += `<parameter=${name}>\n${templateString(value)}\n</parameter>\n`;
    text += "</function>\n</tool_call>";
  });
  return text;
}

/** A value as Qwen3-Coder's template writes an argument: strings as they are, dicts and lists with tojson, else Python's str(). */
function templateString(value: PyValue): string {
  if (typeof value === "string") return value;
  if (value instanceof Map || Array.isArray(value)) return pyDumps(value);
  if (value === null) return "None";
  if (typeof value === "boolean") return value ? "True" : "False";
  if (value instanceof PyFloat) return pyFloatRepr(value.value);
  return String(value);
}

/**
 * Tokenizes a turn as the simulated model's sample.
 *
 * @example
 * const g = generate(tokenizer, { content: "Hello", toolCalls: [] }, { thinking: false });
 * g.ids; // [9707, 151645]
 */
export function generate(tokenizer: SimTokenizer, turn: PolicyTurn, options: { thinking: boolean; format?: ToolCallFormat; maxTokens?: number; stop?: string[] }): Generation {
  const text = modelText(turn, options.thinking, options.format);
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
