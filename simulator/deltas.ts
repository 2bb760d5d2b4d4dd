/**
 * Splits a generation into stream deltas the way vLLM's streaming parsers see it: chunks of
 * `tokensPerChunk` tokens (widened to whole UTF-8 characters, as vLLM's detokenizer holds a
 * partial character back) fed to the model's streaming output parser (none for
 * /v1/completions: raw text). Tokens that show nothing yet (`<tool_call>`, `{"name": "`) are
 * carried into the next delta, so every sampled token lands in exactly one chunk. Each delta
 * carries the reasoning-token count after its step, as vLLM's chat route asks the parser for
 * it after every step (`count_reasoning_tokens` of the ids so far).
 */
import type { ChatOutputParser } from "../model/index.ts";
import { atCharBoundary, visibleText, type Generation } from "./generate.ts";

export interface StreamDelta {
  /** Token range [start, end) of the generation this delta carries. */
  start: number;
  end: number;
  reasoning?: string;
  content?: string;
  toolCalls?: { index: number; id?: string; type?: "function"; function: { name?: string; arguments?: string } }[];
  /** On the last delta: vLLM's chat finish_reason. */
  finishReason?: string;
  /** The reasoning tokens so far (`completion_tokens_details.reasoning_tokens`); null without a reasoning parser or a parser. */
  reasoningTokens: number | null;
}

/**
 * @example
 * planDeltas(generation, model.outputParser({ tools }), 1).map((d) => d.content ?? "");
 */
export function planDeltas(g: Generation, parser: ChatOutputParser | null, tokensPerChunk: number): StreamDelta[] {
  const per = Math.max(1, Math.floor(tokensPerChunk));
  const deltas: StreamDelta[] = [];
  let toolCallsMade = false;
  let start = 0;
  let pending = 0;
  // The ids so far, as the route keeps them for the count (`generated_token_ids`).
  const generated: number[] = [];
  while (pending < g.ids.length) {
    let end = Math.min(pending + per, g.ids.length);
    while (end < g.ids.length && !atCharBoundary(g, g.byteEnds[end - 1]!)) end++;
    const from = pending === 0 ? 0 : g.byteEnds[pending - 1]!;
    const last = end === g.ids.length;
    const text = visibleText(g, from, g.byteEnds[end - 1]!);
    const ids = g.ids.slice(pending, end);
    const parsed = parser ? parser.parseDelta(text, ids, last) : { content: text };
    for (const id of ids) generated.push(id);
    pending = end;
    if (!parsed && !last) continue;
    const delta: StreamDelta = { start, end, reasoningTokens: parser ? parser.reasoningTokens(generated) : null };
    if (parsed?.reasoning != null) delta.reasoning = parsed.reasoning;
    if (parsed?.content != null) delta.content = parsed.content;
    if (parsed?.toolCalls?.length) {
      toolCallsMade = true;
      delta.toolCalls = parsed.toolCalls.map((c) => ({ index: c.index, ...(c.id !== undefined ? { id: c.id, type: "function" as const } : {}), function: { ...c.function } }));
    }
    if (last) delta.finishReason = parser ? parser.finishReason(g.finishReason, toolCallsMade) : g.finishReason;
    deltas.push(delta);
    start = end;
  }
  return deltas;
}
