/**
 * Completion token ids → the chat answer vLLM 0.33.0's chat server gives for them, streamed
 * and not: what token-in mode (docs/token-in.md) answers a harness with after the engine
 * sampled from token ids. vLLM's own path for exactly this is its disaggregated derender
 * (`OnlineDerenderer.derender_chat` / `derender_chat_stream`), which runs what its chat server
 * runs on an engine output:
 *
 * - the output detokenized incrementally (`vllm/v1/engine/detokenizer.py`): a token ending
 *   inside a UTF-8 character is held back until the character completes; special tokens are
 *   skipped as the request says (`skip_special_tokens`, default true) unless the parsers keep
 *   them (Qwen3's do: `keepsSpecialTokens`); a sequence that ended on a
 *   stop token (the end-of-turn token, `stop_token_ids`) leaves that token's text out; stop
 *   strings cut the text where they start (`include_stop_str_in_output: false`), and while
 *   streaming the last `max(len(stop)) - 1` characters are held back until the end;
 * - the text and ids of each step handed to the model's output parsers (parsers/chat-output.ts);
 * - the reasoning-token count of the usage (`completion_tokens_details.reasoning_tokens`), asked
 *   of the parsers where the chat route asks it (`ChatOutputParser.reasoningTokens`).
 *
 * `tests/reference/token-in.test.ts` compares both with vLLM's derender on the parsing corpus.
 */
import type { Model, OutputParserOptions } from "./model.ts";
import type { DeltaMessage } from "./parsers/types.ts";
import type { ParsedMessage } from "./parsers/chat-output.ts";
import { completeUtf8, wholeText, wholeTextsOf } from "./token-texts.ts";

/** How the engine ended the sequence. */
export interface EngineFinish {
  /** The engine's finish reason: "stop", "length", "abort". */
  reason: string;
  /** The last token is a stop token (the end-of-turn token or one of `stop_token_ids`), not text. */
  stopToken: boolean;
}

export interface DerenderOptions extends OutputParserOptions {
  /** The request's stop strings. */
  stop?: string | readonly string[] | null;
  include_stop_str_in_output?: boolean | null;
  /** vLLM's chat default is true. */
  skip_special_tokens?: boolean | null;
}

export interface DerenderedMessage {
  message: ParsedMessage;
  /** The chat finish_reason (`tool_calls` when calls came and the model stopped by itself). */
  finishReason: string;
  /** The stop string that cut the text, else null (vLLM's `stop_reason` for a string). */
  stopString: string | null;
  /** `usage.completion_tokens_details.reasoning_tokens`; null without a reasoning parser (the details are null). */
  reasoningTokens: number | null;
}

export interface StreamStep {
  /** The parser's delta for this step (null: nothing to send yet). */
  delta: DeltaMessage | null;
  /** On the last step: the chat finish_reason. */
  finishReason?: string;
  /** On the last step: the stop string that cut the text, else null. */
  stopString?: string | null;
}

export interface ChatStreamDerenderer {
  /** One engine step's ids; `finish` on the last one. */
  push(ids: readonly number[], finish?: EngineFinish): StreamStep;
  /**
   * `usage.completion_tokens_details.reasoning_tokens` after the steps pushed so far (what the
   * chat route writes in each chunk's usage with `continuous_usage_stats`, and after the last
   * step in the usage chunk); null without a reasoning parser (the details are null).
   */
  reasoningTokens(): number | null;
}

/**
 * The non-streamed answer for a whole completion.
 *
 * @example
 * derenderChat(model, { tools, promptTokenIds }, completionIds, { reason: "stop", stopToken: true }).message.toolCalls
 */
export function derenderChat(model: Model, options: DerenderOptions, ids: readonly number[], finish: EngineFinish): DerenderedMessage {
  const parser = model.outputParser(options);
  const detok = incrementalDetokenizer(model, options, parser.keepsSpecialTokens);
  const stopString = detok.update(ids, finish.stopToken);
  const text = detok.next(true);
  const message = parser.parse(text);
  return { message, finishReason: parser.finishReason(engineReason(finish, stopString), message.toolCalls.length > 0), stopString, reasoningTokens: parser.reasoningTokens(ids) };
}

/**
 * A streamed answer, step by step, as vLLM's chat server streams it for the same steps.
 *
 * @example
 * const s = chatStreamDerenderer(model, { tools, promptTokenIds });
 * s.push([151667]); s.push([198, 151668], { reason: "stop", stopToken: false });
 */
export function chatStreamDerenderer(model: Model, options: DerenderOptions): ChatStreamDerenderer {
  const parser = model.outputParser(options);
  const detok = incrementalDetokenizer(model, options, parser.keepsSpecialTokens);
  let toolCallsMade = false;
  let stopString: string | null = null;
  // The ids so far, as the route keeps them for the count (`generated_token_ids`).
  const generated: number[] = [];
  return {
    push(ids, finish) {
      for (const id of ids) generated.push(id);
      const finished = finish !== undefined;
      stopString ??= detok.update(ids, finished && finish.stopToken);
      const delta = parser.parseDelta(detok.next(finished), ids, finished);
      if (delta?.toolCalls?.length) toolCallsMade = true;
      if (!finished) return { delta };
      return { delta, finishReason: parser.finishReason(engineReason(finish, stopString), toolCallsMade), stopString };
    },
    reasoningTokens: () => parser.reasoningTokens(generated),
  };
}

/** A stop string that cut the text is a "stop" whatever the engine said. */
function engineReason(finish: EngineFinish, stopString: string | null): string {
  return stopString !== null ? "stop" : finish.reason;
}

interface Detokenizer {
  /** Adds a step's ids; returns the stop string found, if any (the text is cut there). */
  update(ids: readonly number[], stopTerminated: boolean): string | null;
  /** The text not handed out yet (held back: the stop buffer, unless finished). */
  next(finished: boolean): string;
}

/** Each tokenizer's special token ids, built once (not per answer). */
const specialIdSets = new WeakMap<Model["tokenizer"], ReadonlySet<number>>();

/** vLLM's IncrementalDetokenizer (its byte-level fast path), with stop strings. */
function incrementalDetokenizer(model: Model, options: DerenderOptions, keepsSpecialTokens: boolean): Detokenizer {
  const tokenizer = model.tokenizer;
  const skipSpecial = !keepsSpecialTokens && (options.skip_special_tokens ?? true);
  let specialIds = specialIdSets.get(tokenizer);
  if (!specialIds) specialIdSets.set(tokenizer, (specialIds = new Set(tokenizer.specialTokens.values())));
  const stops = (typeof options.stop === "string" ? [options.stop] : (options.stop ?? [])).filter((s) => s !== "");
  const includeStop = options.include_stop_str_in_output === true;
  const stopBuffer = stops.length > 0 && !includeStop ? Math.max(...stops.map((s) => s.length)) - 1 : 0;
  // A character that is U+FEFF stays (TextDecoder drops a leading byte-order mark by default).
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  const texts = wholeTextsOf(tokenizer);
  let held: number[] = [];
  let text = "";
  let handedOut = 0;
  let stopped = false;
  return {
    update(ids, stopTerminated) {
      if (stopped) return null;
      const before = text.length;
      const n = stopTerminated ? ids.length - 1 : ids.length;
      for (let i = 0; i < n; i++) {
        const id = ids[i]!;
        if (skipSpecial && specialIds.has(id)) continue;
        if (held.length === 0) {
          // A token that is whole characters on its own: its text, decoded once per tokenizer.
          const whole = wholeText(tokenizer, texts, id);
          if (whole !== undefined) {
            text += whole;
            continue;
          }
        }
        for (const b of tokenizer.tokenBytes(id)) held.push(b);
        if (completeUtf8(held)) {
          text += decoder.decode(new Uint8Array(held));
          held = [];
        }
      }
      if (stops.length === 0) return null;
      // vllm/v1/engine/detokenizer.py check_stop_strings: only where new text could complete one.
      const added = text.length - before;
      if (added === 0) return null;
      for (const stop of stops) {
        const from = Math.max(0, before - stop.length + 1);
        const at = text.indexOf(stop, from);
        if (at < 0) continue;
        stopped = true;
        text = includeStop ? text.slice(0, at + stop.length) : text.slice(0, at);
        handedOut = Math.min(handedOut, text.length);
        return stop;
      }
      return null;
    },
    next(finished) {
      // Without stop strings nothing handed out is looked at again: the text starts afresh, so
      // each step's text is its own, not the whole answer's made again (a string per step).
      if (stops.length === 0) {
        const out = text;
        text = "";
        return out;
      }
      const end = finished || stopped ? text.length : Math.max(handedOut, text.length - stopBuffer);
      const out = text.slice(handedOut, end);
      handedOut = end;
      return out;
    },
  };
}
