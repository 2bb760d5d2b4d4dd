/**
 * Splits a generation into stream deltas the way vLLM's streaming parsers do: reasoning and
 * content text as it comes, a tool call first as {id, type, name} once its name is complete,
 * then its argument fragments; markup tokens (`<tool_call>`, `{"name": "`) show nothing and are
 * carried into the next delta, so every sampled token lands in exactly one chunk.
 */
import { atCharBoundary, spanText, type Generation } from "./generate.ts";

export interface StreamDelta {
  /** Token range [start, end) of the generation this delta carries. */
  start: number;
  end: number;
  reasoning?: string;
  content?: string;
  toolCalls?: { index: number; id?: string; type?: "function"; function: { name?: string; arguments?: string } }[];
}

/**
 * @example
 * planDeltas(generation, 1, (i) => `call_${i}`).map((d) => d.content ?? "");
 */
export function planDeltas(g: Generation, tokensPerChunk: number, callId: (index: number) => string): StreamDelta[] {
  const per = Math.max(1, Math.floor(tokensPerChunk));
  const nameSpans = g.spans.filter((s) => s.kind === "toolName");
  const named = new Set<number>();
  const deltas: StreamDelta[] = [];
  let start = 0;
  while (start < g.ids.length) {
    let end = Math.min(start + per, g.ids.length);
    for (;;) {
      while (end < g.ids.length && !atCharBoundary(g, g.byteEnds[end - 1]!)) end++;
      const delta = deltaFor(g, start, end, nameSpans, named, callId);
      if (delta || end === g.ids.length) {
        const d = delta ?? { start, end };
        for (const call of d.toolCalls ?? []) if (call.function.name !== undefined) named.add(call.index);
        deltas.push(d);
        break;
      }
      end = Math.min(end + per, g.ids.length);
    }
    start = end;
  }
  return deltas;
}

function deltaFor(
  g: Generation,
  start: number,
  end: number,
  nameSpans: Generation["spans"],
  named: Set<number>,
  callId: (index: number) => string,
): StreamDelta | undefined {
  const from = start === 0 ? 0 : g.byteEnds[start - 1]!;
  const to = g.byteEnds[end - 1]!;
  const delta: StreamDelta = { start, end };
  const reasoning = spanText(g, from, to, "reasoning");
  if (reasoning) delta.reasoning = reasoning;
  const content = spanText(g, from, to, "content");
  if (content) delta.content = content;
  const calls: NonNullable<StreamDelta["toolCalls"]> = [];
  g.turn.toolCalls.forEach((call, index) => {
    const nameSpan = nameSpans.find((s) => s.call === index);
    const nameDone = nameSpan !== undefined && nameSpan.end <= to;
    if (!nameDone) return;
    const args = spanText(g, Math.max(from, nameSpan.end), to, "toolArgs", index);
    if (!named.has(index)) {
      calls.push({ index, id: callId(index), type: "function", function: args ? { name: call.name, arguments: args } : { name: call.name } });
    } else if (args) {
      calls.push({ index, function: { arguments: args } });
    }
  });
  if (calls.length > 0) delta.toolCalls = calls;
  return delta.reasoning !== undefined || delta.content !== undefined || delta.toolCalls ? delta : undefined;
}
