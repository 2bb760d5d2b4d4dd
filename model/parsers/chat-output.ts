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
  promptTokenIds?: readonly number[];
}

const isNamedChoice = (choice: unknown) => typeof choice === "object" && choice !== null && (choice as { type?: unknown }).type === "function";

/**
 * @example
 * const out = chatOutputParser({ request: { tools }, reasoningParser, toolParser });
 * out.parse("<think>\nhm\n</think>\n\n<tool_call>\n{...}\n</tool_call>"); // { reasoning: "\nhm\n", content: null, toolCalls: [...] }
 */
export function chatOutputParser(options: ChatOutputParserOptions): ChatOutputParser {
  const { reasoningParser: rp, toolParser: tp } = options;
  const req = options.request;
  const hasTools = Boolean(req.tools && req.tools.length > 0);
  // vLLM's request default: "auto" when tools are sent and no choice is, else "none".
  const toolChoice = req.tool_choice === undefined ? (hasTools ? "auto" : "none") : req.tool_choice;
  const includeReasoning = req.include_reasoning ?? true;
  const forced = isNamedChoice(toolChoice) || toolChoice === "required";
  const keepsToolCalls = forced || (tp !== null && toolChoice === "auto" && hasTools);
  const engineBased = (rp === null || rp.engineBased) && (tp === null || tp.engineBased);
  const parseRequest: ParseRequest = { ...req, tool_choice: toolChoice };
  if (options.promptTokenIds && rp?.setPromptTokenIds) rp.setPromptTokenIds(options.promptTokenIds);

  const filterParallel = <T extends { index: number }>(calls: T[]): T[] => (req.parallel_tool_calls === false ? calls.filter((c) => c.index === 0) : calls);

  // Streaming state (vLLM's StreamState).
  let reasoningEnded = false;
  let promptChecked = false;
  let toolTextStarted = false;
  let previousText = "";
  let previousIds: number[] = [];
  let outputTokens = 0;

  const extractToolCalls = (content: string | null): [ToolCall[] | null, string | null] => {
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
    if (forced && (content === null || !pyStrip(content))) return [[], null];
    if (engineBased) return [null, info.content || null];
    return [null, content];
  };

  const toolStreaming = (args: StreamArgs): DeltaMessage | null => {
    if (toolChoice === "none") {
      if (engineBased) {
        const delta = tp!.extractToolCallsStreaming(args, parseRequest);
        if (delta) delta.toolCalls = [];
        return delta;
      }
      return args.deltaText ? { content: args.deltaText } : null;
    }
    return tp!.extractToolCallsStreaming(args, parseRequest);
  };

  const parseDelta = (deltaText: string, deltaIds: readonly number[], finished: boolean): DeltaMessage | null => {
    // The server passes the prompt with every chunk; the first decides whether it closed reasoning.
    if (!promptChecked) {
      promptChecked = true;
      if (rp === null || rp.isReasoningEnd(options.promptTokenIds ?? [])) reasoningEnded = true;
    }
    let currentText = engineBased ? deltaText : previousText + deltaText;
    let currentIds = engineBased ? [...deltaIds] : [...previousIds, ...deltaIds];
    let delta: DeltaMessage | null = null;
    let transitioned = false;

    if (rp !== null && !reasoningEnded) {
      delta = rp.extractReasoningStreaming({ previousText, currentText, deltaText, previousTokenIds: previousIds, currentTokenIds: currentIds, deltaTokenIds: deltaIds });
      const ended = rp.engineBased ? rp.engineConfirmedReasoningEnd!() : rp.isReasoningEnd(currentIds);
      if (ended) {
        reasoningEnded = true;
        transitioned = true;
        currentIds = rp.extractContentIds(deltaIds);
        const flush = rp.engineBased ? (rp.finishStreaming?.() ?? null) : null;
        currentText = (delta?.content ?? "") + (flush?.content ?? "");
        if (engineBased) {
          if (tp !== null) {
            if (delta) delta.content = null;
          } else if (currentText) {
            delta ??= {};
            delta.content = currentText;
          }
        } else deltaText = currentText;
      }
    }

    let toolIds: readonly number[] = deltaIds;
    if (tp !== null && reasoningEnded) {
      if (!toolTextStarted) {
        toolTextStarted = true;
        previousText = "";
        previousIds = [];
        deltaText = currentText;
        toolIds = currentIds;
      }
      const reasoningNow = delta?.reasoning ?? null;
      delta = toolStreaming({ previousText, currentText, deltaText, previousTokenIds: previousIds, currentTokenIds: currentIds, deltaTokenIds: toolIds });
      if (reasoningNow) {
        if (delta === null) delta = { reasoning: reasoningNow };
        else if (!delta.reasoning) delta.reasoning = reasoningNow;
      }
    }
    if (delta === null && !transitioned && !(rp !== null && !reasoningEnded) && !(tp !== null && reasoningEnded)) delta = { content: deltaText };

    if (engineBased) {
      previousText = "";
      previousIds = [];
    } else {
      previousText = currentText;
      previousIds = currentIds;
    }

    if (finished) {
      if (tp && delta?.toolCalls?.length) {
        const last = delta.toolCalls.at(-1)!;
        if (last.function) last.function.arguments = (last.function.arguments ?? "") + tp.remainingUnstreamedArgs();
      }
      // Engine-based parsers flush what they hold (the reasoning parser only if reasoning never ended).
      for (const parser of [rp, tp]) {
        if (!parser?.engineBased || !parser.finishStreaming) continue;
        if (parser === rp && reasoningEnded) continue;
        const flush = parser.finishStreaming();
        if (!flush) continue;
        if (!delta) delta = flush;
        else {
          if (flush.content) delta.content = (delta.content ?? "") + flush.content;
          if (flush.reasoning) delta.reasoning = (delta.reasoning ?? "") + flush.reasoning;
          if (flush.toolCalls?.length) delta.toolCalls = [...(delta.toolCalls ?? []), ...flush.toolCalls];
        }
      }
    }
    if (delta && !includeReasoning) {
      delta.reasoning = null;
      if (!delta.content && !delta.toolCalls?.length) delta = null;
    }
    return delta;
  };

  const adjusted = rp !== null || toolChoice !== "none";
  const keepsSpecialTokens = adjusted && (rp?.engineBased === true || (tp !== null && (tp.engineBased || (hasTools && toolChoice !== "none"))));

  return {
    keepsSpecialTokens,
    parse(text) {
      let [reasoning, content] = rp ? rp.extractReasoning(text, parseRequest) : [null, text];
      const [calls, rest] = extractToolCalls(content);
      content = rest;
      if (!includeReasoning) reasoning = null;
      if (!keepsToolCalls) return { reasoning, content, toolCalls: [] };
      if (forced) content = content ?? "";
      const toolCalls = req.parallel_tool_calls === false ? (calls ?? []).slice(0, 1) : (calls ?? []);
      return { reasoning, content, toolCalls };
    },
    parseDelta(deltaText, deltaIds, finished) {
      let delta: DeltaMessage | null;
      if (!deltaText && deltaIds.length === 0 && outputTokens === 0) delta = {};
      else {
        delta = parseDelta(deltaText, deltaIds, finished);
        if (delta?.toolCalls?.length && !keepsToolCalls) {
          delta.toolCalls = [];
          if (!delta.content && !delta.reasoning) delta = null;
        }
      }
      outputTokens += deltaIds.length;
      if (delta?.toolCalls) delta.toolCalls = filterParallel(delta.toolCalls);
      return delta;
    },
    finishReason(engineFinish, toolCallsMade) {
      const reason = engineFinish || "stop";
      return toolCallsMade && reason === "stop" && !isNamedChoice(toolChoice) ? "tool_calls" : reason;
    },
  };
}
