/**
 * The state machine of vLLM 0.33.0's declarative parser engine
 * (`vllm/parser/engine/streaming_parser_engine.py`, `StreamingParserEngine`): text deltas in,
 * semantic events out (reasoning and text chunks, tool-call start/name/argument/end).
 *
 * Fed with token ids (streaming), the grammar's marker tokens and the special tokens it drops
 * are recognised by id (token-scanner.ts), and once ids were seen their text spellings are
 * plain content; fed text alone (the non-streamed answer), everything is matched as text.
 * Grammar features no model here uses (message headers, JSON-array tool bodies, JSON argument
 * buffering) are left out.
 *
 * It counts the reasoning tokens as vLLM does (`reasoning_token_count`, the source of
 * `usage.completion_tokens_details.reasoning_tokens`): the tokens its REASONING_CHUNK events
 * hold, each event holding the tokens of the text it came from (a fast-path delta: all its
 * ids; a lexed piece: the tokens that start in it, lexer.ts). A terminal matched by id holds
 * none, so `<think>` and `</think>` never count; once fed text alone (no ids), nothing counts.
 */
import { CONTENT, incrementalLexer, lexerShape, type LexerShape, type LexToken } from "./lexer.ts";
import { DROP, tokenScanner, type ScanItem, type TokenScanner } from "./token-scanner.ts";

export type ParserState = "CONTENT" | "REASONING" | "TOOL_PREAMBLE" | "TOOL_NAME" | "TOOL_ARGS" | "TOOL_BETWEEN";
export type EventType = "TEXT_CHUNK" | "REASONING_START" | "REASONING_CHUNK" | "REASONING_END" | "TOOL_CALL_START" | "TOOL_NAME" | "ARG_VALUE_CHUNK" | "TOOL_CALL_END";

export interface SemanticEvent {
  type: EventType;
  value: string;
  toolIndex: number;
  /** The tokens the event's text came from (vLLM's `SemanticEvent.token_count`). */
  tokenCount: number;
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

export const transitionKey = (state: ParserState, terminal: string) => `${state} ${terminal}`;

export interface StreamingEngine {
  state: ParserState;
  skipToolParsing: boolean;
  skipReasoningParsing: boolean;
  /** The tokens of the REASONING_CHUNK events since the last reset (vLLM's `reasoning_token_count`). */
  readonly reasoningTokenCount: number;
  /** A delta's text and, when streaming, its token ids. */
  feed(text: string, ids?: readonly number[]): SemanticEvent[];
  finish(): SemanticEvent[];
  reset(initialState?: ParserState): void;
}

export interface EngineTokenizer {
  /** The tokenizer's special tokens: those the grammar does not use are dropped (vLLM's DROP terminal). */
  specialTokens: ReadonlyMap<string, number>;
  tokenId(token: string): number | undefined;
  /** The text of one token, special tokens kept. */
  decodeToken(id: number): string;
}

/** What a grammar and a tokenizer fix: built once per (tokenizer, grammar), shared by every parser of them. */
interface EngineStatics {
  idTerminals: Map<number, string>;
  idTerminalNames: Set<string>;
  shape: LexerShape;
  transitions: Map<string, Transition>;
  toolTerminals: Set<string>;
  toolExitTerminals: Set<string>;
  reasoningMarkup: Set<string>;
  hasDrops: boolean;
}

/**
 * Per tokenizer (its special-token map), per grammar (the config's JSON: its data, the
 * argument converter aside, which is not part of it). A proxy builds a parser per request;
 * the lexer's shape over a tokenizer's special tokens and the transition tables are the same
 * for all of them, and building them was ~5 % of a token-in call (docs/performance.md).
 */
const staticsCache = new WeakMap<ReadonlyMap<string, number>, Map<string, EngineStatics>>();

/** The same config object again: its JSON is not written again. */
const keyOfConfig = new WeakMap<EngineConfig, string>();

function engineStatics(config: EngineConfig, tokenizer: EngineTokenizer): EngineStatics {
  let perTokenizer = staticsCache.get(tokenizer.specialTokens);
  if (!perTokenizer) staticsCache.set(tokenizer.specialTokens, (perTokenizer = new Map()));
  let key = keyOfConfig.get(config);
  if (key === undefined) keyOfConfig.set(config, (key = JSON.stringify(config)));
  let statics = perTokenizer.get(key);
  if (statics) return statics;
  const configured = new Set([...Object.values(config.tokenIdTerminals), ...Object.values(config.terminals), ...config.preserveTokens]);
  const drops = [...tokenizer.specialTokens.keys()].filter((t) => !configured.has(t));
  const idTerminals = new Map<number, string>();
  for (const [name, token] of Object.entries(config.tokenIdTerminals)) {
    const id = tokenizer.tokenId(token);
    if (id !== undefined) idTerminals.set(id, name);
  }
  for (const token of drops) idTerminals.set(tokenizer.specialTokens.get(token)!, DROP);
  const transitions = new Map(Object.entries(config.transitions));
  const entries = [...transitions].map(([key, tr]) => {
    const [state, terminal] = key.split(" ") as [ParserState, string];
    return { state, terminal, tr };
  });
  const reasoningMarkup = (() => {
    const markers = new Set(entries.filter((e) => (e.state === "REASONING" || e.tr.next === "REASONING") && !TOOL_STATES.has(e.tr.next)).map((e) => e.terminal));
    for (const e of entries) {
      if (!markers.has(e.terminal)) continue;
      if (!PLAIN_STATES.has(e.state) || !PLAIN_STATES.has(e.tr.next) || !e.tr.events.every((t) => t === "REASONING_START" || t === "REASONING_END")) return new Set<string>();
    }
    return markers;
  })();
  statics = {
    idTerminals,
    idTerminalNames: new Set(idTerminals.values()),
    shape: lexerShape([...Object.entries(config.terminals).map(([name, lit]) => [lit, name] as [string, string]), ...drops.map((t) => [t, DROP] as [string, string])]),
    transitions,
    toolTerminals: new Set(entries.filter((e) => TOOL_STATES.has(e.tr.next) || TOOL_STATES.has(e.state)).map((e) => e.terminal)),
    toolExitTerminals: new Set(entries.filter((e) => TOOL_STATES.has(e.state) && !TOOL_STATES.has(e.tr.next)).map((e) => e.terminal)),
    reasoningMarkup,
    hasDrops: drops.length > 0,
  };
  perTokenizer.set(key, statics);
  return statics;
}

/** Whether any of `ids` is a key of `map` (a loop: this runs on every delta). */
function hasAny(map: ReadonlyMap<number, string>, ids: readonly number[]): boolean {
  for (const id of ids) if (map.has(id)) return true;
  return false;
}

/**
 * Each tokenizer's token texts (keyed as the statics are, by its special-token map), shared by
 * its parsers: decoded once per tokenizer, not once per answer (the tokenizer's decode was ~2 %
 * of a token-in answer's time in a hot loop). Bounded by the vocabulary: one short string a token.
 */
const tokenTexts = new WeakMap<ReadonlyMap<string, number>, Map<number, string>>();
function tokenTextsOf(tokenizer: EngineTokenizer): Map<number, string> {
  let texts = tokenTexts.get(tokenizer.specialTokens);
  if (!texts) tokenTexts.set(tokenizer.specialTokens, (texts = new Map()));
  return texts;
}

export function streamingEngine(config: EngineConfig, tokenizer: EngineTokenizer): StreamingEngine {
  return new GrammarStreamingEngine(config, engineStatics(config, tokenizer), tokenizer);
}

/** The grammar's state machine over one output: the scanner and lexer feed it terminals, it emits semantic events. */
class GrammarStreamingEngine implements StreamingEngine {
  state: ParserState;
  skipToolParsing = false;
  skipReasoningParsing = false;
  private readonly scanner: TokenScanner;
  private readonly lexer: ReturnType<typeof incrementalLexer>;
  private toolIndex = -1;
  private inSkippedToolSpan = false;
  private everHadIds = false;
  private reasoningTokens = 0;

  constructor(
    private readonly config: EngineConfig,
    private readonly statics: EngineStatics,
    tokenizer: EngineTokenizer,
  ) {
    this.state = config.initialState;
    this.scanner = tokenScanner(statics.idTerminals, tokenizer.decodeToken, tokenTextsOf(tokenizer));
    this.lexer = incrementalLexer(statics.shape);
  }

  get reasoningTokenCount(): number {
    return this.reasoningTokens;
  }

  feed(text: string, ids: readonly number[] = []): SemanticEvent[] {
    const { lexer, scanner } = this;
    if (ids.length > 0) this.everHadIds = true;
    if (text && !lexer.buffer && !scanner.hasDeferred && !lexer.mayStartTerminal(text) && !hasAny(this.statics.idTerminals, ids)) return this.counted(this.emitForState(text, ids.length));
    const items = scanner.scan(text, ids);
    if (items.length === 1 && items[0]!.kind === "text") {
      const item = items[0]!;
      const tokens = lexer.feed(item.text, item.tokenTexts, item.tokenCount);
      if (tokens.length === 1 && tokens[0]!.terminal === CONTENT) return this.counted(this.emitForState(tokens[0]!.value, tokens[0]!.tokenCount));
      return this.counted(this.processLexTokens(tokens));
    }
    return this.counted(this.processScanItems(items));
  }

  finish(): SemanticEvent[] {
    const events = this.processScanItems(this.scanner.flushPending());
    events.push(...this.processLexTokens(this.lexer.flush()));
    if (TOOL_STATES.has(this.state)) {
      if (this.toolIndex >= 0) events.push({ type: "TOOL_CALL_END", value: "", toolIndex: this.toolIndex, tokenCount: 0 });
      this.state = "CONTENT";
    } else if (this.state === "REASONING") {
      events.push({ type: "REASONING_END", value: "", toolIndex: this.toolIndex, tokenCount: 0 });
      this.state = "CONTENT";
    }
    return this.counted(events);
  }

  reset(initialState?: ParserState): void {
    this.state = initialState ?? this.config.initialState;
    this.toolIndex = -1;
    this.inSkippedToolSpan = false;
    this.everHadIds = false;
    this.reasoningTokens = 0;
    this.scanner.reset();
    this.lexer.reset();
  }

  /** `events`, their reasoning tokens added to the count (vLLM's `_record_reasoning_tokens`). */
  private counted(events: SemanticEvent[]): SemanticEvent[] {
    for (const ev of events) if (ev.type === "REASONING_CHUNK") this.reasoningTokens += ev.tokenCount;
    return events;
  }

  private processScanItems(items: ScanItem[]): SemanticEvent[] {
    const events: SemanticEvent[] = [];
    for (const item of items) {
      if (item.kind === "terminal") {
        events.push(...this.processLexTokens(this.lexer.flush()));
        // A terminal matched by id holds no tokens (vLLM passes it none).
        events.push(...this.onTerminal(item.terminal, item.text));
      } else if (!item.text && item.tokenCount) events.push(...this.emitForState("", item.tokenCount));
      else events.push(...this.processLexTokens(this.lexer.feed(item.text, item.tokenTexts, item.tokenCount)));
    }
    return events;
  }

  private processLexTokens(tokens: LexToken[]): SemanticEvent[] {
    const events: SemanticEvent[] = [];
    // Once ids were seen, the id-matched terminals count only by id: their text is content.
    const strict = this.everHadIds ? this.statics.idTerminalNames : undefined;
    for (const tok of tokens) {
      if (tok.terminal === CONTENT || strict?.has(tok.terminal)) {
        if (tok.value) events.push(...this.emitForState(tok.value, tok.tokenCount));
      } else events.push(...this.onTerminal(tok.terminal, tok.value, tok.tokenCount));
    }
    return events;
  }

  private emitForState(text: string, tokenCount = 0): SemanticEvent[] {
    const type = CONTENT_EVENTS[this.state];
    return type ? [{ type, value: text, toolIndex: this.toolIndex, tokenCount }] : [];
  }

  private onTerminal(terminal: string, value: string, tokenCount = 0): SemanticEvent[] {
    const { transitions, hasDrops, toolExitTerminals, reasoningMarkup, toolTerminals } = this.statics;
    const toolIndex = this.toolIndex;
    const tr = transitions.get(transitionKey(this.state, terminal));
    if (!tr) {
      // A dropped special token's tokens go with it.
      if (hasDrops && terminal === DROP) return [];
      if (this.skipToolParsing && toolExitTerminals.has(terminal)) this.inSkippedToolSpan = false;
      return this.emitForState(value, tokenCount);
    }
    if (this.skipReasoningParsing && reasoningMarkup.has(terminal)) return this.emitForState(value, tokenCount);
    if (this.skipToolParsing && toolTerminals.has(terminal)) {
      const isOpener = TOOL_STATES.has(tr.next);
      const isExit = toolExitTerminals.has(terminal);
      const plainCloser = isExit && !isOpener && !this.inSkippedToolSpan;
      if (!plainCloser) {
        if (isOpener) this.inSkippedToolSpan = true;
        else if (isExit) this.inSkippedToolSpan = false;
        // A tool marker that implicitly ends reasoning still reports it, so the reasoning
        // pass hands the block to the tool pass. Forwarded markup holds no tokens (vLLM's
        // events here carry none).
        if (tr.events.includes("REASONING_END")) {
          this.state = "CONTENT";
          return [
            { type: "REASONING_END", value, toolIndex, tokenCount: 0 },
            { type: "TEXT_CHUNK", value, toolIndex, tokenCount: 0 },
          ];
        }
        const type = CONTENT_EVENTS[this.state];
        return type ? [{ type, value, toolIndex, tokenCount: 0 }] : [];
      }
    }
    return this.applyTransition(tr, value, tokenCount);
  }

  private applyTransition(tr: Transition, value: string, tokenCount: number): SemanticEvent[] {
    const events: SemanticEvent[] = [];
    this.state = tr.next;
    for (const type of tr.events) {
      if (type === "TOOL_CALL_START") this.toolIndex++;
      if (type === "TEXT_CHUNK" && !value) continue;
      events.push({ type, value, toolIndex: this.toolIndex, tokenCount });
    }
    return events;
  }
}
