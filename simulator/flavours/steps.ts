/**
 * The decode steps of a streamed answer, shared by the flavours: each choice's deltas (as the
 * model's parsers split them, `deltas.ts`), interleaved across choices, with the simulated
 * decode delay between steps; and a choice's whole answer as the parsers read it.
 */
import type { ParsedMessage } from "../../model/index.ts";
import { planDeltas, type StreamDelta } from "../deltas.ts";
import { coveredBytes, visibleText } from "../generate.ts";
import { sleep } from "../sse.ts";
import type { FlavourContext, SampledChoice } from "./types.ts";

export interface Step<C extends SampledChoice> {
  choice: C;
  delta: StreamDelta;
  /** Step number of this choice (0 = its first delta). */
  k: number;
  /** The choice's last delta. */
  last: boolean;
}

/**
 * The steps of `choices`, in decode order.
 *
 * @example
 * for await (const step of decodeSteps(ctx, choices, signal)) yield chunkOf(step);
 */
export async function* decodeSteps<C extends SampledChoice>(ctx: FlavourContext, choices: C[], signal: AbortSignal): AsyncGenerator<Step<C>> {
  const plans = choices.map((c) => planDeltas(c.g, c.parser, ctx.tokensPerChunk));
  const longest = Math.max(0, ...plans.map((p) => p.length));
  for (let k = 0; k < longest; k++) {
    if (k > 0) await sleep(ctx.chunkDelayMs, signal);
    if (signal.aborted) return;
    for (let i = 0; i < choices.length; i++) {
      const d = plans[i]![k];
      if (!d) continue;
      yield { choice: choices[i]!, delta: d, k, last: k === plans[i]!.length - 1 };
    }
  }
}

const parsed = new WeakMap<SampledChoice, ParsedMessage>();

/** The non-streamed answer of a chat choice: its visible text read by the model's parsers (once). */
export function finalMessage(c: SampledChoice): ParsedMessage {
  let message = parsed.get(c);
  if (!message) {
    const text = visibleText(c.g, 0, coveredBytes(c.g));
    message = c.parser ? c.parser.parse(text) : { reasoning: null, content: text, toolCalls: [] };
    parsed.set(c, message);
  }
  return message;
}

/** vLLM's finish reason: "tool_calls" when the tool parser found calls and the model stopped by itself. */
export function finishReasonOf(c: SampledChoice): string {
  return c.parser ? c.parser.finishReason(c.g.finishReason, finalMessage(c).toolCalls.length > 0) : c.g.finishReason;
}

/**
 * The ids of a chunk's tokens, with holes when the test asked for them (every third chunk's
 * ids left out).
 *
 * @example
 * chunkIds(choice, 0, 3, {}) // choice.g.ids.slice(0, 3)
 */
export function chunkIds(c: SampledChoice, start: number, end: number, k: number, holey: boolean | undefined): number[] {
  return holey && k % 3 === 2 ? [] : c.g.ids.slice(start, end);
}
