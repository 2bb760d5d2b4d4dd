/**
 * The plug-in interfaces of output parsers, shaped as vLLM 0.33.0's (`ToolParser` in
 * `vllm/tool_parsers/abstract_tool_parser.py`, `ReasoningParser` in
 * `vllm/reasoning/abs_reasoning_parsers.py`): one instance per request and choice, since the
 * streaming side keeps state between chunks.
 */

/** The request fields parsers read (vLLM's ChatCompletionRequest, as sent). */
export interface ParseRequest {
  /** The request's tools (OpenAI function tools), if any. */
  tools?: readonly unknown[] | null;
  /** "auto" when tools are given and none is set, as vLLM defaults it. */
  tool_choice?: unknown;
  /** vLLM's `include_reasoning` (default true). */
  include_reasoning?: boolean | null;
  parallel_tool_calls?: boolean | null;
  chat_template_kwargs?: Record<string, unknown> | null;
}

export interface ToolCall {
  id: string;
  name: string;
  /** The arguments as the JSON text vLLM answers with. */
  arguments: string;
}

export interface ExtractedToolCalls {
  toolsCalled: boolean;
  toolCalls: ToolCall[];
  content: string | null;
}

export interface DeltaToolCall {
  index: number;
  id?: string;
  type?: "function";
  function?: { name?: string; arguments?: string };
}

/** One streamed delta (vLLM's DeltaMessage; absent fields are unset). */
export interface DeltaMessage {
  content?: string | null;
  reasoning?: string | null;
  toolCalls?: DeltaToolCall[];
}

/** What a parser needs from the model: token ids of its markers, and a way to name calls. */
export interface ParserContext {
  /** The id of a token written as text, if the vocabulary has it. */
  tokenId(token: string): number | undefined;
  /** The model's special tokens (vLLM's parser engine drops those it does not use). */
  specialTokens: ReadonlyMap<string, number>;
  /** The text of one token, special tokens kept. */
  decodeToken(id: number): string;
  /** The text of ids together, special tokens kept (the tokenizer's `decode`). */
  decode(ids: readonly number[]): string;
  /** A fresh tool-call id (vLLM: `chatcmpl-tool-<random>`). */
  newToolCallId(): string;
}

/** Streaming arguments, as vLLM passes them to `*_streaming` methods. */
export interface StreamArgs {
  previousText: string;
  currentText: string;
  deltaText: string;
  previousTokenIds: readonly number[];
  currentTokenIds: readonly number[];
  deltaTokenIds: readonly number[];
}

export interface ToolCallParser {
  /** Engine-based parsers keep their own text state (vLLM passes them deltas only). */
  readonly engineBased: boolean;
  extractToolCalls(modelOutput: string, request: ParseRequest): ExtractedToolCalls;
  extractToolCallsStreaming(args: StreamArgs, request: ParseRequest): DeltaMessage | null;
  /** Arguments parsed but not streamed yet (added to the last delta when the stream ends). */
  remainingUnstreamedArgs(): string;
  /** Engine-based parsers flush what they hold when the stream ends. */
  finishStreaming?(): DeltaMessage | null;
}

export interface ReasoningParser {
  readonly engineBased: boolean;
  extractReasoning(modelOutput: string, request: ParseRequest): [reasoning: string | null, content: string | null];
  extractReasoningStreaming(args: StreamArgs): DeltaMessage | null;
  /** Whether these (prompt) ids already close the reasoning block (read by index: a Uint32Array of the prompt is taken as it is). */
  isReasoningEnd(ids: ArrayLike<number>): boolean;
  /** The content part of ids that end reasoning. */
  extractContentIds(ids: readonly number[]): number[];
  /** The prompt, for parsers that start differently when it closes reasoning. */
  setPromptTokenIds?(ids: ArrayLike<number>): void;
  /** Engine-based: whether the engine saw reasoning end. */
  engineConfirmedReasoningEnd?(): boolean;
  finishStreaming?(): DeltaMessage | null;
  /**
   * How many of the generated `ids` are reasoning (vLLM's `count_reasoning_tokens`, 0 for a
   * parser that does not count): after a stream, what the parser counted while streaming; after
   * a whole output, `ids` parsed for it.
   */
  countReasoningTokens?(ids: readonly number[]): number;
}

/** Options every parser factory gets (vLLM passes chat_template_kwargs to engine parsers). */
export interface ParserOptions {
  tools?: readonly unknown[] | null;
  chatTemplateKwargs?: Record<string, unknown> | null;
}

export type ToolCallParserFactory = (ctx: ParserContext, options: ParserOptions) => ToolCallParser;
export type ReasoningParserFactory = (ctx: ParserContext, options: ParserOptions) => ReasoningParser;
