/**
 * A model's output as vLLM 0.33.0's chat server answers it, non-streamed and streamed: the
 * reasoning parser first, then the tool parser on what is left (`DelegatingParser` in
 * `vllm/parser/abstract_parser.py`), then the server's choice of fields
 * (`vllm/entrypoints/openai/chat_completion/message_assembly.py`, `stream_processor.py`,
 * `vllm/entrypoints/serve/utils/tool_calls_utils.py`): tool calls are kept only for
 * `tool_choice` "auto" with tools (the default when tools are sent), "required" or a named
 * tool; `parallel_tool_calls: false` keeps the first; `include_reasoning: false` drops reasoning.
 * The server runs with `--enable-auto-tool-choice`.
 */
import { pyStrip } from "../pystr.ts";
import type { DeltaMessage, ParseRequest, ReasoningParser, StreamArgs, ToolCall, ToolCallParser } from "./types.ts";

export interface ParsedMessage {
  reasoning: string | null;
  content: string | null;
  toolCalls: ToolCall[];
}

export interface ChatOutputParser {
  /** The whole output (vLLM's non-streaming answer). */
  parse(text: string): ParsedMessage;
  /** One chunk of the output; `finished` on the last. Null when nothing is sent for it yet. */
  parseDelta(deltaText: string, deltaIds: readonly number[], finished: boolean): DeltaMessage | null;
  /** vLLM's chat `finish_reason` for an engine finish reason. */
  finishReason(engineFinish: "stop" | "length" | string, toolCallsMade: boolean): string;
  /**
   * `usage.completion_tokens_details.reasoning_tokens` for the generated `ids` (all of them,
   * the stop token included), asked where vLLM's chat route asks `Parser.count_reasoning_tokens`:
   * after `parse`, or after `parseDelta` steps (then what the reasoning parser counted while
   * streaming). Null when there is no reasoning parser: the route then writes
   * `completion_tokens_details: null` (`_include_reasoning_tokens_details = bool(reasoning_parser)`).
   */
  reasoningTokens(ids: readonly number[]): number | null;
  /**
   * Whether the parsers make vLLM detokenize with special tokens kept (`adjust_request` sets
   * `skip_special_tokens = False`): an engine-based parser always does, hermes when tools are
   * offered and tool_choice is not "none". The chat server calls it when a reasoning parser is
   * set or tool_choice is not "none" (`vllm/renderers/online_renderer.py`).
   */
  readonly keepsSpecialTokens: boolean;
}

export interface ChatOutputParserOptions {
  request: ParseRequest;
  reasoningParser: ReasoningParser | null;
  toolParser: ToolCallParser | null;
  /** The rendered prompt, as vLLM passes it to the parser (a prompt that closes reasoning starts in content). */
  promptTokenIds?: ArrayLike<number>;
}

const isNamedChoice = (choice: unknown) => typeof choice === "object" && choice !== null && (choice as { type?: unknown }).type === "function";

/**
 * @example
 * const out = chatOutputParser({ request: { tools }, reasoningParser, toolParser });
 * out.parse("<think>\nhm\n</think>\n\n<tool_call>\n{...}\n</tool_call>"); // { reasoning: "\nhm\n", content: null, toolCalls: [...] }
 */
export function chatOutputParser(options: ChatOutputParserOptions): ChatOutputParser {
  return new VllmChatOutputParser(options);
}

/** One streamed chunk while it is worked on: the texts and ids the parsers see, and the delta so far. */
type Chunk = { deltaText: string; currentText: string; currentIds: number[]; delta: DeltaMessage | null; transitioned: boolean };

/** The parsers of one choice of one request, with vLLM's streaming state (its StreamState). */
class VllmChatOutputParser implements ChatOutputParser {
  readonly keepsSpecialTokens: boolean;
  private readonly rp: ReasoningParser | null;
  private readonly tp: ToolCallParser | null;
  private readonly req: ParseRequest;
  private readonly promptTokenIds: ArrayLike<number> | undefined;
  private readonly toolChoice: ParseRequest["tool_choice"];
  private readonly includeReasoning: boolean;
  private readonly forced: boolean;
  private readonly keepsToolCalls: boolean;
  private readonly engineBased: boolean;
  private readonly parseRequest: ParseRequest;
  // Streaming state (vLLM's StreamState).
  private reasoningEnded = false;
  private promptChecked = false;
  private toolTextStarted = false;
  private previousText = "";
  private previousIds: number[] = [];
  private outputTokens = 0;

  constructor(options: ChatOutputParserOptions) {
    const { reasoningParser: rp, toolParser: tp } = options;
    const req = options.request;
    this.rp = rp;
    this.tp = tp;
    this.req = req;
    this.promptTokenIds = options.promptTokenIds;
    const hasTools = Boolean(req.tools && req.tools.length > 0);
    // vLLM's request default: "auto" when tools are sent and no choice is, else "none".
    const toolChoice = req.tool_choice === undefined ? (hasTools ? "auto" : "none") : req.tool_choice;
    this.toolChoice = toolChoice;
    this.includeReasoning = req.include_reasoning ?? true;
    this.forced = isNamedChoice(toolChoice) || toolChoice === "required";
    this.keepsToolCalls = this.forced || (tp !== null && toolChoice === "auto" && hasTools);
    this.engineBased = (rp === null || rp.engineBased) && (tp === null || tp.engineBased);
    this.parseRequest = { ...req, tool_choice: toolChoice };
    if (options.promptTokenIds && rp?.setPromptTokenIds) rp.setPromptTokenIds(options.promptTokenIds);
    const adjusted = rp !== null || toolChoice !== "none";
    this.keepsSpecialTokens = adjusted && (rp?.engineBased === true || (tp !== null && (tp.engineBased || (hasTools && toolChoice !== "none"))));
  }

  parse(text: string): ParsedMessage {
    const { rp, req } = this;
    let [reasoning, content] = rp ? rp.extractReasoning(text, this.parseRequest) : [null, text];
    const [calls, rest] = this.extractToolCalls(content);
    content = rest;
    if (!this.includeReasoning) reasoning = null;
    if (!this.keepsToolCalls) return { reasoning, content, toolCalls: [] };
    if (this.forced) content = content ?? "";
    const toolCalls = req.parallel_tool_calls === false ? (calls ?? []).slice(0, 1) : (calls ?? []);
    return { reasoning, content, toolCalls };
  }

  parseDelta(deltaText: string, deltaIds: readonly number[], finished: boolean): DeltaMessage | null {
    let delta: DeltaMessage | null;
    if (!deltaText && deltaIds.length === 0 && this.outputTokens === 0) delta = {};
    else {
      delta = this.streamDelta(deltaText, deltaIds, finished);
      if (delta?.toolCalls?.length && !this.keepsToolCalls) {
        delta.toolCalls = [];
        if (!delta.content && !delta.reasoning) delta = null;
      }
    }
    this.outputTokens += deltaIds.length;
    if (delta?.toolCalls) delta.toolCalls = this.filterParallel(delta.toolCalls);
    return delta;
  }

  reasoningTokens(ids: readonly number[]): number | null {
    const rp = this.rp;
    if (rp === null) return null;
    return rp.countReasoningTokens ? rp.countReasoningTokens(ids) : 0;
  }

  finishReason(engineFinish: "stop" | "length" | string, toolCallsMade: boolean): string {
    const reason = engineFinish || "stop";
    return toolCallsMade && reason === "stop" && !isNamedChoice(this.toolChoice) ? "tool_calls" : reason;
  }

  private filterParallel<T extends { index: number }>(calls: T[]): T[] {
    return this.req.parallel_tool_calls === false ? calls.filter((c) => c.index === 0) : calls;
  }

  private extractToolCalls(content: string | null): [ToolCall[] | null, string | null] {
    const { tp, toolChoice, engineBased, parseRequest } = this;
    if (!tp) return [[], content];
    if (toolChoice === "none") {
      if (engineBased) return [[], tp.extractToolCalls(content ?? "", parseRequest).content];
      return [[], content];
    }
    // Hermes and Qwen3-Coder have xgrammar structural tags, so vLLM parses "required" and
    // named choices as "auto" (supports_required_and_named is false for them).
    const info = tp.extractToolCalls(content ?? "", parseRequest);
    if (info.toolsCalled) {
      let out = info.content;
      if (out && pyStrip(out) === "") out = null;
      return [info.toolCalls, out];
    }
    if (this.forced && (content === null || !pyStrip(content))) return [[], null];
    if (engineBased) return [null, info.content || null];
    return [null, content];
  }

  private toolStreaming(args: StreamArgs): DeltaMessage | null {
    const tp = this.tp!;
    if (this.toolChoice === "none") {
      if (this.engineBased) {
        const delta = tp.extractToolCallsStreaming(args, this.parseRequest);
        if (delta) delta.toolCalls = [];
        return delta;
      }
      return args.deltaText ? { content: args.deltaText } : null;
    }
    return tp.extractToolCallsStreaming(args, this.parseRequest);
  }

  /** One chunk through the reasoning parser, then (once reasoning ended) the tool parser. */
  private streamDelta(deltaText: string, deltaIds: readonly number[], finished: boolean): DeltaMessage | null {
    const { rp, tp, engineBased } = this;
    // The server passes the prompt with every chunk; the first decides whether it closed reasoning.
    if (!this.promptChecked) {
      this.promptChecked = true;
      if (rp === null || rp.isReasoningEnd(this.promptTokenIds ?? [])) this.reasoningEnded = true;
    }
    const chunk: Chunk = {
      deltaText,
      currentText: engineBased ? deltaText : this.previousText + deltaText,
      // Fresh arrays, as vLLM's lists are (concat: native copies, not spread arguments).
      currentIds: engineBased ? deltaIds.slice() : this.previousIds.concat(deltaIds),
      delta: null,
      transitioned: false,
    };
    if (rp !== null && !this.reasoningEnded) this.reasoningStep(rp, chunk, deltaIds);
    if (tp !== null && this.reasoningEnded) this.toolStep(chunk, deltaIds);
    if (chunk.delta === null && !chunk.transitioned && !(rp !== null && !this.reasoningEnded) && !(tp !== null && this.reasoningEnded)) chunk.delta = { content: chunk.deltaText };

    if (engineBased) {
      this.previousText = "";
      this.previousIds = [];
    } else {
      this.previousText = chunk.currentText;
      this.previousIds = chunk.currentIds;
    }

    let delta = finished ? this.finishStream(chunk.delta) : chunk.delta;
    if (delta && !this.includeReasoning) {
      delta.reasoning = null;
      if (!delta.content && !delta.toolCalls?.length) delta = null;
    }
    return delta;
  }

  /** The reasoning parser's part of a chunk; where reasoning ends, what follows goes on as content. */
  private reasoningStep(rp: ReasoningParser, chunk: Chunk, deltaIds: readonly number[]): void {
    const { previousText, previousIds } = this;
    chunk.delta = rp.extractReasoningStreaming({ previousText, currentText: chunk.currentText, deltaText: chunk.deltaText, previousTokenIds: previousIds, currentTokenIds: chunk.currentIds, deltaTokenIds: deltaIds });
    const ended = rp.engineBased ? rp.engineConfirmedReasoningEnd!() : rp.isReasoningEnd(chunk.currentIds);
    if (!ended) return;
    this.reasoningEnded = true;
    chunk.transitioned = true;
    chunk.currentIds = rp.extractContentIds(deltaIds);
    const flush = rp.engineBased ? (rp.finishStreaming?.() ?? null) : null;
    chunk.currentText = (chunk.delta?.content ?? "") + (flush?.content ?? "");
    if (this.engineBased) {
      if (this.tp !== null) {
        if (chunk.delta) chunk.delta.content = null;
      } else if (chunk.currentText) {
        chunk.delta ??= {};
        chunk.delta.content = chunk.currentText;
      }
    } else chunk.deltaText = chunk.currentText;
  }

  /** The tool parser's part of a chunk (the first one after reasoning starts its text afresh). */
  private toolStep(chunk: Chunk, deltaIds: readonly number[]): void {
    let toolIds: readonly number[] = deltaIds;
    if (!this.toolTextStarted) {
      this.toolTextStarted = true;
      this.previousText = "";
      this.previousIds = [];
      chunk.deltaText = chunk.currentText;
      toolIds = chunk.currentIds;
    }
    const reasoningNow = chunk.delta?.reasoning ?? null;
    const { previousText, previousIds } = this;
    let delta = this.toolStreaming({ previousText, currentText: chunk.currentText, deltaText: chunk.deltaText, previousTokenIds: previousIds, currentTokenIds: chunk.currentIds, deltaTokenIds: toolIds });
    if (reasoningNow) {
      if (delta === null) delta = { reasoning: reasoningNow };
      else if (!delta.reasoning) delta.reasoning = reasoningNow;
    }
    chunk.delta = delta;
  }

  /** The last chunk: the last call's unstreamed arguments, and what engine-based parsers still hold. */
  private finishStream(delta: DeltaMessage | null): DeltaMessage | null {
    const { rp, tp } = this;
    if (tp && delta?.toolCalls?.length) {
      const last = delta.toolCalls.at(-1)!;
      if (last.function) last.function.arguments = (last.function.arguments ?? "") + tp.remainingUnstreamedArgs();
    }
    // Engine-based parsers flush what they hold (the reasoning parser only if reasoning never ended).
    for (const parser of [rp, tp]) {
      if (!parser?.engineBased || !parser.finishStreaming) continue;
      if (parser === rp && this.reasoningEnded) continue;
      const flush = parser.finishStreaming();
      if (!flush) continue;
      if (!delta) delta = flush;
      else {
        if (flush.content) delta.content = (delta.content ?? "") + flush.content;
        if (flush.reasoning) delta.reasoning = (delta.reasoning ?? "") + flush.reasoning;
        if (flush.toolCalls?.length) delta.toolCalls = [...(delta.toolCalls ?? []), ...flush.toolCalls];
      }
    }
    return delta;
  }
}
