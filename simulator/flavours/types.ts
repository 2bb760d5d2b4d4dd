/**
 * The answer side of an engine stand-in: what the simulator sampled for a request, handed to
 * the flavour that writes it in its engine's wire format (JSON or SSE frames).
 */
import type { Generation } from "../generate.ts";
import type { TokenLogprob } from "../logprobs.ts";
import type { ChatRequestBody, CompletionRequestBody } from "../request.ts";
import type { ChatOutputParser } from "../../model/index.ts";
import type { SimTokenizer } from "../model.ts";
import type { EngineFlavourName, EngineSimState } from "./state.ts";

/** One sampled choice. */
export interface SampledChoice {
  index: number;
  g: Generation;
  logprobs: TokenLogprob[];
  /** The id of the choice's i-th tool call. */
  callId(i: number): string;
  /** The model's output parser for this choice (null on /v1/completions, which parses nothing). */
  parser: ChatOutputParser | null;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatAnswer {
  request: Request;
  body: ChatRequestBody;
  tokenizer: SimTokenizer;
  promptIds: number[];
  choices: SampledChoice[];
  /** The model name the answer carries (vLLM: the served name; SGLang: the request's). */
  model: string;
  created: number;
  usage: Usage;
}

export interface CompletionAnswer {
  request: Request;
  body: CompletionRequestBody;
  tokenizer: SimTokenizer;
  promptIds: number[];
  /** The prompt as text (what an echo repeats). */
  promptText: string;
  /** The prompt tokens' logprobs (echo with logprobs), the first one null. */
  promptLogprobs: (TokenLogprob | null)[];
  choices: (SampledChoice & { text: string })[];
  model: string;
  created: number;
  usage: Usage;
}

/** A named SSE event (SGLang's `event: sglext_ids`); anything else is written as `data: <json>`. */
export class NamedEvent {
  constructor(
    readonly event: string,
    readonly data: unknown,
  ) {}
}

/** What a flavour reads of the simulator's context (SimContext, context.ts, is one). */
export interface FlavourContext {
  /** What the engine stand-in keeps: weights, version, pause. */
  engine: EngineSimState;
  /** Tokens per stream chunk. */
  tokensPerChunk: number;
  /** Delay between stream chunks. */
  chunkDelayMs: number;
  /** Whether the model thinks: the server has a reasoning parser (SGLang counts reasoning tokens only then). */
  thinks: boolean;
}

export interface EngineFlavour {
  name: EngineFlavourName;
  /** An error as the engine writes it for its OpenAI routes. */
  error(status: number, message: string, param?: string | null): Response;
  /** The engine's own refusals of a chat request before generating (SGLang: ids on a stream). */
  checkChat(body: ChatRequestBody, request: Request): Response | undefined;
  chatJson(answer: ChatAnswer, ctx: FlavourContext): unknown;
  chatStream(answer: ChatAnswer, ctx: FlavourContext): AsyncGenerator<unknown>;
  completionJson(answer: CompletionAnswer, ctx: FlavourContext): unknown;
  completionStream(answer: CompletionAnswer, ctx: FlavourContext): AsyncGenerator<unknown>;
  /** Ids of answers: vLLM `chatcmpl-…` / `cmpl-…`, SGLang a bare hex id. */
  answerId(kind: "chat" | "completion"): string;
}
