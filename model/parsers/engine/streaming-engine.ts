/**
 * The state machine of vLLM 0.33.0's declarative parser engine
 * (`vllm/parser/engine/streaming_parser_engine.py`, `StreamingParserEngine`): text deltas in,
 * semantic events out (reasoning and text chunks, tool-call start/name/argument/end).
 *
 * It reads text only. vLLM's engine also matches the grammar's marker tokens by token id
 * while streaming; for output its tokenizer produced (where the text `<think>` is exactly the
 * token `<think>`) both readings agree, so ids are not needed here. Grammar features no model
 * here uses (message headers, JSON-array tool bodies, JSON argument buffering) are refused at
 * construction.
 */
import { CONTENT, incrementalLexer, lexerShape, type LexToken } from "./lexer.ts";

export type ParserState = "CONTENT" | "REASONING" | "TOOL_PREAMBLE" | "TOOL_NAME" | "TOOL_ARGS" | "TOOL_BETWEEN";
export type EventType = "TEXT_CHUNK" | "REASONING_START" | "REASONING_CHUNK" | "REASONING_END" | "TOOL_CALL_START" | "TOOL_NAME" | "ARG_VALUE_CHUNK" | "TOOL_CALL_END";

export interface SemanticEvent {
  type: EventType;
  value: string;
  toolIndex: number;
}

export interface Transition {
  next: ParserState;
  events: EventType[];
}

/** A model's output grammar (vLLM's ParserEngineConfig, the fields the models here use). */
export interface EngineConfig {
  name: string;
  /** Terminal name → literal text. */
  terminals: Record<string, string>;
  /** Terminals vLLM matches by token id (their tokens also set reasoning-end detection). */
  tokenIdTerminals: Record<string, string>;
  /** `${state} ${terminal}` → transition. */
  transitions: Record<string, Transition>;
  initialState: ParserState;
  waitForReasoning: boolean | null;
  /** Raw argument text → arguments JSON (partial: the text may still grow). */
  argConverter: ((raw: string, partial: boolean) => string) | null;
  streamArgDeltas: boolean;
  stripTrailingReasoningWhitespace: boolean;
  dropWhitespaceOnlyContentBeforeTools: boolean;
  stripContentWhitespaceWithTools: boolean;
  validateToolNames: boolean;
  /** Special tokens delimiting turns in the prompt (reasoning markers count after the last one). */
  turnBoundaryTokens: string[];
  /** Special tokens the engine keeps although it does not parse them. */
  preserveTokens: string[];
}

const CONTENT_EVENTS: Partial<Record<ParserState, EventType>> = {
  CONTENT: "TEXT_CHUNK",
  REASONING: "REASONING_CHUNK",
  TOOL_NAME: "TOOL_NAME",
  TOOL_ARGS: "ARG_VALUE_CHUNK",
};
const TOOL_STATES = new Set<ParserState>(["TOOL_PREAMBLE", "TOOL_NAME", "TOOL_ARGS", "TOOL_BETWEEN"]);
const PLAIN_STATES = new Set<ParserState>(["CONTENT", "REASONING"]);
const DROP = "__DROP__";

export const transitionKey = (state: ParserState, terminal: string) => `${state} ${terminal}`;

export interface StreamingEngine {
  state: ParserState;
  skipToolParsing: boolean;
  skipReasoningParsing: boolean;
  feed(text: string): SemanticEvent[];
  finish(): SemanticEvent[];
  reset(initialState?: ParserState): void;
}

/**
 * @param specialTokens the tokenizer's special tokens: those the grammar does not use are
 *   dropped from the output (vLLM's DROP terminal).
 */
export function streamingEngine(config: EngineConfig, specialTokens: Iterable<string>): StreamingEngine {
  const configured = new Set([...Object.values(config.tokenIdTerminals), ...Object.values(config.terminals), ...config.preserveTokens]);
  const drops = [...specialTokens].filter((t) => !configured.has(t));
  const shape = lexerShape([...Object.entries(config.terminals).map(([name, lit]) => [lit, name] as [string, string]), ...drops.map((t) => [t, DROP] as [string, string])]);
  const lexer = incrementalLexer(shape);
  const transitions = new Map(Object.entries(config.transitions));
  const entries = [...transitions].map(([key, tr]) => {
    const [state, terminal] = key.split(" ") as [ParserState, string];
    return { state, terminal, tr };
  });
  const toolTerminals = new Set(entries.filter((e) => TOOL_STATES.has(e.tr.next) || TOOL_STATES.has(e.state)).map((e) => e.terminal));
  const toolExitTerminals = new Set(entries.filter((e) => TOOL_STATES.has(e.state) && !TOOL_STATES.has(e.tr.next)).map((e) => e.terminal));
  const reasoningMarkup = (() => {
    const markers = new Set(entries.filter((e) => (e.state === "REASONING" || e.tr.next === "REASONING") && !TOOL_STATES.has(e.tr.next)).map((e) => e.terminal));
    for (const e of entries) {
      if (!markers.has(e.terminal)) continue;
      if (!PLAIN_STATES.has(e.state) || !PLAIN_STATES.has(e.tr.next) || !e.tr.events.every((t) => t === "REASONING_START" || t === "REASONING_END")) return new Set<string>();
    }
    return markers;
  })();
  const hasDrops = drops.length > 0;

  const engine: StreamingEngine = {
    state: config.initialState,
    skipToolParsing: false,
    skipReasoningParsing: false,
    feed(text) {
      if (text && !lexer.buffer && !lexer.mayStartTerminal(text)) return emitForState(text);
      return processLexTokens(lexer.feed(text));
    },
    finish() {
      const events = processLexTokens(lexer.flush());
      if (TOOL_STATES.has(engine.state)) {
        if (toolIndex >= 0) events.push({ type: "TOOL_CALL_END", value: "", toolIndex });
        engine.state = "CONTENT";
      } else if (engine.state === "REASONING") {
        events.push({ type: "REASONING_END", value: "", toolIndex });
        engine.state = "CONTENT";
      }
      return events;
    },
    reset(initialState) {
      engine.state = initialState ?? config.initialState;
      toolIndex = -1;
      inSkippedToolSpan = false;
      lexer.reset();
    },
  };
  let toolIndex = -1;
  let inSkippedToolSpan = false;

  const processLexTokens = (tokens: LexToken[]): SemanticEvent[] => {
    const events: SemanticEvent[] = [];
    for (const tok of tokens) {
      if (tok.terminal === CONTENT) {
        if (tok.value) events.push(...emitForState(tok.value));
      } else events.push(...onTerminal(tok.terminal, tok.value));
    }
    return events;
  };

  const emitForState = (text: string): SemanticEvent[] => {
    const type = CONTENT_EVENTS[engine.state];
    return type ? [{ type, value: text, toolIndex }] : [];
  };

  const onTerminal = (terminal: string, value: string): SemanticEvent[] => {
    const tr = transitions.get(transitionKey(engine.state, terminal));
    if (!tr) {
      if (hasDrops && terminal === DROP) return [];
      if (engine.skipToolParsing && toolExitTerminals.has(terminal)) inSkippedToolSpan = false;
      return emitForState(value);
    }
    if (engine.skipReasoningParsing && reasoningMarkup.has(terminal)) return emitForState(value);
    if (engine.skipToolParsing && toolTerminals.has(terminal)) {
      const isOpener = TOOL_STATES.has(tr.next);
      const isExit = toolExitTerminals.has(terminal);
      const plainCloser = isExit && !isOpener && !inSkippedToolSpan;
      if (!plainCloser) {
        if (isOpener) inSkippedToolSpan = true;
        else if (isExit) inSkippedToolSpan = false;
        // A tool marker that implicitly ends reasoning still reports it, so the reasoning
        // pass hands the block to the tool pass.
        if (tr.events.includes("REASONING_END")) {
          engine.state = "CONTENT";
          return [
            { type: "REASONING_END", value, toolIndex },
            { type: "TEXT_CHUNK", value, toolIndex },
          ];
        }
        const type = CONTENT_EVENTS[engine.state];
        return type ? [{ type, value, toolIndex }] : [];
      }
    }
    return applyTransition(tr, value);
  };

  const applyTransition = (tr: Transition, value: string): SemanticEvent[] => {
    const events: SemanticEvent[] = [];
    engine.state = tr.next;
    for (const type of tr.events) {
      if (type === "TOOL_CALL_START") toolIndex++;
      if (type === "TEXT_CHUNK" && !value) continue;
      events.push({ type, value, toolIndex });
    }
    return events;
  };

  return engine;
}
