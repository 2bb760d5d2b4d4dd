/**
 * vLLM 0.33.0's `ParserEngine` (`vllm/parser/engine/parser_engine.py`): one grammar-driven
 * parser for reasoning and tool calls, and its two faces (`vllm/parser/engine/adapters.py`):
 * the reasoning adapter (the engine with tool parsing skipped: tool markup stays text) and the
 * tool adapter (the engine started in content, on reasoning-stripped text). Written from that
 * source: semantic events become deltas (content held back while it is only whitespace, tool
 * names and argument JSON streamed as they become stable) and, at the end, the extracted result.
 *
 * The reasoning face also counts reasoning tokens as vLLM's chat route asks it to
 * (`ParserEngineReasoningAdapter.count_reasoning_tokens`, for
 * `usage.completion_tokens_details.reasoning_tokens`): while it streams, what its engine counted
 * so far; otherwise the whole output parsed once more from its ids by a second engine.
 */
import { pyDumps, tryPyLoads, type PyDict, type PyValue } from "../../pyjson.ts";
import { pyStrip, pyRstrip } from "../../pystr.ts";
import { coerceToSchemaType, extractTypesFromSchema } from "../coerce.ts";
import type { DeltaMessage, DeltaToolCall, ExtractedToolCalls, ParserContext, ParseRequest, ReasoningParser, StreamArgs, ToolCall, ToolCallParser } from "../types.ts";
import { streamingEngine, transitionKey, type EngineConfig, type ParserState, type SemanticEvent, type StreamingEngine } from "./streaming-engine.ts";

interface Slot {
  id: string;
  name: string;
  args: string;
  nameSent: boolean;
  stringKeys: Set<string> | null;
  streamedJson: string;
}

const newSlot = (): Slot => ({ id: "", name: "", args: "", nameSent: false, stringKeys: null, streamedJson: "" });

export interface ParserEngine {
  skipToolParsing: boolean;
  readonly reasoningEnded: boolean;
  /** The reasoning tokens the engine's events held since it last started (vLLM's `ParserEngine.count_reasoning_tokens`). */
  readonly reasoningTokenCount: number;
  /**
   * The reasoning tokens of a whole output (its ids, special tokens among them): vLLM's
   * counting engine, `_single_pass_parse(tokenizer.decode(ids), ids)` on a second engine that
   * starts where this one does (in content when the prompt closed reasoning) and parses tool
   * markup. 0 without parsing where the grammar cannot reach reasoning from there.
   */
  countReasoningTokensOf(ids: readonly number[]): number;
  extractReasoning(text: string): [string | null, string | null];
  extractReasoningStreaming(delta: string, ids: readonly number[]): DeltaMessage | null;
  extractToolCallsFromContent(content: string, request: ParseRequest): ExtractedToolCalls;
  extractToolCallsStreaming(delta: string, ids: readonly number[], request: ParseRequest, initialState?: ParserState): DeltaMessage | null;
  finishStreaming(): DeltaMessage | null;
  setPromptTokenIds(ids: ArrayLike<number>): void;
  isReasoningEnd(ids: ArrayLike<number>): boolean;
  extractContentIds(ids: readonly number[]): number[];
}

/**
 * @example
 * const engine = parserEngine(qwen3Config(true), ctx, tools);
 * engine.extractReasoning("<think>\nhm\n</think>\n\nHi"); // ["\nhm\n", "\n\nHi"]
 */
export function parserEngine(config: EngineConfig, ctx: ParserContext, initialTools: readonly unknown[] | null | undefined): ParserEngine {
  return new GrammarParserEngine(config, ctx, initialTools ?? null);
}

/**
 * The ids after which reasoning has ended: those of the terminals whose transition out of
 * REASONING reports its end (none when reasoning can be left another way, or when an end into
 * content has no token id).
 */
function reasoningEndIdsOf(config: EngineConfig, idOf: (token: string | undefined) => number | undefined): Set<number> {
  const ends = new Map<string, ParserState>();
  for (const [key, tr] of Object.entries(config.transitions)) {
    const [state, terminal] = key.split(" ") as [ParserState, string];
    if (state !== "REASONING") continue;
    if (tr.events.includes("REASONING_END")) {
      if (!ends.has(terminal)) ends.set(terminal, tr.next);
    } else if (tr.next !== "REASONING") return new Set();
  }
  const ids = new Set<number>();
  for (const [terminal, next] of ends) {
    const id = idOf(config.tokenIdTerminals[terminal]);
    if (id !== undefined) ids.add(id);
    else if (next === "CONTENT") return new Set();
  }
  return ids;
}

/** One engine over one output: the streaming engine's events become deltas, tool-call slots fill as they stream. */
class GrammarParserEngine implements ParserEngine {
  private readonly engine: StreamingEngine;
  private readonly hasReasoning: boolean;
  private reasoningEndSeen: boolean;
  private promptClosesReasoning = false;
  private streamingInitialized = false;
  private slots: Slot[] = [];
  private deferredContent = "";
  private deferredReasoning = "";
  private contentHasNonWs = false;
  private suppressToolCalls = false;
  private readonly reasoningStartId: number | undefined;
  private readonly reasoningEndId: number | undefined;
  private readonly boundaryIds: ReadonlySet<number>;
  private readonly reasoningEndIds: ReadonlySet<number>;
  /** vLLM's `_counting_parser_engine`: built on the first count that needs it. */
  private countingEngine: StreamingEngine | undefined;

  constructor(
    private readonly config: EngineConfig,
    private readonly ctx: ParserContext,
    private tools: readonly unknown[] | null,
  ) {
    this.engine = streamingEngine(config, ctx);
    this.hasReasoning = "THINK_END" in config.tokenIdTerminals || "THINK_START" in config.terminals || "THINK_END" in config.terminals || config.initialState === "REASONING";
    this.reasoningEndSeen = !this.hasReasoning;
    const ids = tokenIdsOf(config, ctx);
    this.reasoningStartId = ids.reasoningStartId;
    this.reasoningEndId = ids.reasoningEndId;
    this.boundaryIds = ids.boundaryIds;
    this.reasoningEndIds = ids.reasoningEndIds;
  }

  get skipToolParsing(): boolean {
    return this.engine.skipToolParsing;
  }

  set skipToolParsing(value: boolean) {
    this.engine.skipToolParsing = value;
  }

  get reasoningEnded(): boolean {
    return this.reasoningEndSeen;
  }

  get reasoningTokenCount(): number {
    return this.engine.reasoningTokenCount;
  }

  countReasoningTokensOf(ids: readonly number[]): number {
    const start: ParserState = this.promptClosesReasoning ? "CONTENT" : this.config.initialState;
    if (!reachesReasoning(this.config, start)) return 0;
    const engine = (this.countingEngine ??= streamingEngine(this.config, this.ctx));
    engine.reset(start);
    engine.feed(this.ctx.decode(ids), ids);
    engine.finish();
    return engine.reasoningTokenCount;
  }

  extractReasoning(text: string): [string | null, string | null] {
    this.reset();
    const events = this.engine.feed(text);
    events.push(...this.engine.finish());
    let reasoning = "";
    let content = "";
    for (const ev of events) {
      if (ev.type === "REASONING_CHUNK") reasoning += ev.value;
      else if (ev.type === "TEXT_CHUNK") content += ev.value;
      else if (ev.type === "REASONING_END") this.reasoningEndSeen = true;
    }
    if (this.config.stripTrailingReasoningWhitespace) reasoning = pyRstrip(reasoning);
    return [reasoning || null, content || null];
  }

  extractReasoningStreaming(delta: string, ids: readonly number[]): DeltaMessage | null {
    this.initializeStreaming();
    return this.stripTrailingReasoning(this.eventsToDelta(this.engine.feed(delta, ids)));
  }

  extractToolCallsFromContent(content: string, request: ParseRequest): ExtractedToolCalls {
    this.checkSkipToolParsing(request);
    const [, parsed, info] = this.singlePassParse(content, "CONTENT");
    if (parsed !== null && info.content === null) return { ...info, content: parsed };
    return info;
  }

  extractToolCallsStreaming(delta: string, ids: readonly number[], request: ParseRequest, initialState?: ParserState): DeltaMessage | null {
    this.initializeStreaming(initialState);
    this.checkSkipToolParsing(request);
    return this.stripTrailingReasoning(this.eventsToDelta(this.engine.feed(delta, ids)));
  }

  finishStreaming(): DeltaMessage | null {
    const events = this.engine.finish();
    if (events.length > 0 || this.deferredContent) return this.eventsToDelta(events, true);
    return null;
  }

  setPromptTokenIds(ids: ArrayLike<number>): void {
    this.promptClosesReasoning = this.config.initialState === "REASONING" && this.boundaryIds.size > 0 && this.isReasoningEnd(ids);
  }

  isReasoningEnd(ids: ArrayLike<number>): boolean {
    const config = this.config;
    const wait = config.waitForReasoning ?? config.initialState === "REASONING";
    const start = config.transitions[transitionKey(config.initialState, "THINK_START")];
    const startOpens = start !== undefined && start.next === "REASONING";
    for (let i = ids.length - 1; i >= 0; i--) {
      const id = ids[i]!;
      if (this.reasoningEndIds.has(id)) return true;
      if (id === this.reasoningStartId) {
        if (startOpens) return false;
        break;
      }
      if (this.boundaryIds.has(id)) break;
    }
    return !wait;
  }

  extractContentIds(ids: readonly number[]): number[] {
    const config = this.config;
    const { reasoningEndId, reasoningEndIds, boundaryIds } = this;
    const wait = config.waitForReasoning ?? config.initialState === "REASONING";
    if (!wait) return [...ids];
    if (reasoningEndId !== undefined) for (let i = ids.length - 1; i >= 0; i--) if (ids[i] === reasoningEndId) return ids.slice(i + 1);
    if (reasoningEndIds.size > 0) {
      let turnStart = 0;
      for (let i = ids.length - 1; i >= 0; i--) {
        if (boundaryIds.has(ids[i]!)) {
          turnStart = i + 1;
          break;
        }
      }
      for (let i = turnStart; i < ids.length; i++) if (reasoningEndIds.has(ids[i]!)) return ids.slice(i);
    }
    return [...ids];
  }

  private reset(initialState?: ParserState): void {
    const promptClosed = initialState === undefined && this.promptClosesReasoning;
    this.engine.reset(promptClosed ? "CONTENT" : initialState);
    this.reasoningEndSeen = !this.hasReasoning || promptClosed;
    this.slots = [];
    this.deferredContent = "";
    this.deferredReasoning = "";
    this.contentHasNonWs = false;
  }

  private initializeStreaming(initialState?: ParserState): void {
    if (this.streamingInitialized) return;
    this.streamingInitialized = true;
    this.reset(initialState);
  }

  private propertiesOf(name: string): Record<string, unknown> {
    for (const tool of this.tools ?? []) {
      const fn = isObject(tool) ? tool.function : undefined;
      if (isObject(fn) && fn.name === name) {
        const props = isObject(fn.parameters) ? fn.parameters.properties : undefined;
        return isObject(props) ? props : {};
      }
    }
    return {};
  }

  private toolNameKnown(name: string): boolean {
    return (this.tools ?? []).some((t) => isObject(t) && isObject(t.function) && t.function.name === name);
  }

  private acceptToolName(name: string): boolean {
    const tools = this.tools;
    return Boolean(name) && (!this.config.validateToolNames || !tools || tools.length === 0 || this.toolNameKnown(name));
  }

  /** _fix_arg_types: string values typed by the tool's schema. */
  private fixArgTypes(argsJson: string, name: string): string {
    const tools = this.tools;
    if (!tools || tools.length === 0 || !name) return argsJson;
    const args = tryPyLoads(argsJson);
    if (!(args instanceof Map)) return argsJson;
    const properties = this.propertiesOf(name);
    if (Object.keys(properties).length === 0) return argsJson;
    return coerceDict(args, properties) ? pyDumps(args) : argsJson;
  }

  private ensureToolId(slot: Slot): void {
    if (!slot.id) slot.id = this.ctx.newToolCallId();
  }

  private emitName(idx: number, deltas: DeltaToolCall[], name: string | null): void {
    if (name === null || !this.acceptToolName(name)) return;
    const slot = this.slots[idx]!;
    slot.name = name;
    slot.nameSent = true;
    slot.stringKeys = streamableStringKeys(this.propertiesOf(name));
    this.ensureToolId(slot);
    deltas.push({ index: idx, id: slot.id, type: "function", function: { name } });
  }

  private tryExtractName(idx: number): string | null {
    const m = /"name"\s*:\s*"([^"]*)"/.exec(this.slots[idx]!.args);
    return m && m[1] ? m[1] : null;
  }

  private computeArgDelta(idx: number): string | null {
    const converter = this.config.argConverter;
    const slot = this.slots[idx]!;
    if (!converter) return null;
    if (!this.config.streamArgDeltas) return null;
    let current = converter(slot.args, true);
    if (!current) return null;
    if (slot.name) current = this.fixArgTypes(current, slot.name);
    const prev = slot.streamedJson;
    const safe = safeArgPrefix(current, slot.stringKeys);
    if (!safe) return null;
    if (prev && !safe.startsWith(prev)) return null;
    slot.streamedJson = safe;
    return safe.slice(prev.length) || null;
  }

  private flushArgConverter(idx: number): string | null {
    const converter = this.config.argConverter;
    if (!converter) return null;
    const slot = this.slots[idx]!;
    let final = converter(slot.args, false);
    if (final) final = this.fixArgTypes(final, slot.name);
    const prev = slot.streamedJson;
    if (final && final.length > prev.length) {
      if (prev && !final.startsWith(prev)) return null;
      slot.streamedJson = final;
      return final.slice(prev.length);
    }
    return null;
  }

  private handleArgChunk(ev: SemanticEvent, deltas: DeltaToolCall[]): void {
    const slot = this.slots[ev.toolIndex]!;
    if (ev.value) slot.args += ev.value;
    if (!slot.nameSent) {
      if (slot.name) this.emitName(ev.toolIndex, deltas, slot.name);
      else if (ev.value) this.emitName(ev.toolIndex, deltas, this.tryExtractName(ev.toolIndex));
    } else if (ev.value) {
      const diff = this.computeArgDelta(ev.toolIndex);
      if (diff) deltas.push({ index: ev.toolIndex, function: { arguments: diff } });
    }
  }

  private handleToolEnd(ev: SemanticEvent, deltas: DeltaToolCall[]): void {
    const idx = ev.toolIndex;
    if (idx >= this.slots.length) return;
    let remaining = this.flushArgConverter(idx);
    const slot = this.slots[idx]!;
    if (!slot.nameSent) {
      const name = slot.name || this.tryExtractName(idx) || "";
      if (this.acceptToolName(name)) {
        slot.name = name;
        slot.nameSent = true;
        slot.stringKeys = streamableStringKeys(this.propertiesOf(name));
        this.ensureToolId(slot);
        deltas.push({ index: idx, id: slot.id, type: "function", function: { name, arguments: remaining ?? "" } });
        remaining = null;
      }
    }
    if (remaining && slot.nameSent) deltas.push({ index: idx, function: { arguments: remaining } });
  }

  /** A tool event (unless tool calls are suppressed); whether it was one. */
  private onToolEvent(ev: SemanticEvent, toolDeltas: DeltaToolCall[]): boolean {
    switch (ev.type) {
      case "TOOL_CALL_START":
        while (this.slots.length <= ev.toolIndex) this.slots.push(newSlot());
        return true;
      case "TOOL_NAME":
        this.slots[ev.toolIndex]!.name += ev.value;
        return true;
      case "ARG_VALUE_CHUNK":
        this.handleArgChunk(ev, toolDeltas);
        return true;
      case "TOOL_CALL_END":
        this.handleToolEnd(ev, toolDeltas);
        return true;
      default:
        return false;
    }
  }

  private eventsToDelta(events: SemanticEvent[], finished = false): DeltaMessage | null {
    if (events.length === 0 && !this.deferredContent) return null;
    // Most deltas of a reasoning block: one reasoning chunk, nothing held (what the loop below gives for it).
    if (events.length === 1 && events[0]!.type === "REASONING_CHUNK" && !this.deferredContent) return events[0]!.value ? { reasoning: events[0]!.value } : null;
    let toolDeltas: DeltaToolCall[] = [];
    const contentParts: string[] = [];
    const reasoningParts: string[] = [];
    const carried = this.deferredContent;
    let sawToolEvent = false;
    const suppress = this.suppressToolCalls;
    for (const ev of events) {
      if (ev.type === "TEXT_CHUNK") {
        if (sawToolEvent) this.deferredContent += ev.value;
        else contentParts.push(ev.value);
      } else if (ev.type === "REASONING_CHUNK") reasoningParts.push(ev.value);
      else if (ev.type === "REASONING_END") this.reasoningEndSeen = true;
      else if (!suppress && this.onToolEvent(ev, toolDeltas)) sawToolEvent = true;
    }
    if (toolDeltas.length > 1) toolDeltas = coalesce(toolDeltas);
    if (this.deferredContent && (!sawToolEvent || toolDeltas.length === 0)) {
      const now = this.deferredContent.slice(carried.length);
      if (carried) contentParts.unshift(carried);
      if (now) contentParts.push(now);
      this.deferredContent = "";
    }
    let content = contentParts.join("");
    if (!this.contentHasNonWs && content) {
      if (pyStrip(content)) this.contentHasNonWs = true;
      else if (this.slots.length > 0) {
        if (this.config.dropWhitespaceOnlyContentBeforeTools) content = "";
      } else if (!finished) {
        this.deferredContent = content;
        content = "";
      }
    }
    const reasoning = reasoningParts.join("");
    if (!content && toolDeltas.length === 0 && !reasoning) return null;
    const delta: DeltaMessage = {};
    if (content) delta.content = content;
    if (reasoning) delta.reasoning = reasoning;
    if (toolDeltas.length > 0) delta.toolCalls = toolDeltas;
    return delta;
  }

  private stripTrailingReasoning(delta: DeltaMessage | null): DeltaMessage | null {
    if (!this.config.stripTrailingReasoningWhitespace) return delta;
    if (delta && delta.reasoning != null) {
      const combined = this.deferredReasoning + delta.reasoning;
      const trimmed = pyRstrip(combined);
      this.deferredReasoning = combined.slice(trimmed.length);
      delta.reasoning = trimmed || null;
      if (delta.reasoning == null && delta.content == null && !delta.toolCalls?.length) return null;
    } else if (this.deferredReasoning && this.reasoningEndSeen) this.deferredReasoning = "";
    return delta;
  }

  private checkSkipToolParsing(request: ParseRequest): void {
    if (request.tools && request.tools.length > 0) this.tools = request.tools;
    if (!this.engine.skipToolParsing && !this.suppressToolCalls && request.tool_choice === "none" && request.tools && request.tools.length > 0) this.suppressToolCalls = true;
  }

  private buildExtractedResult(...deltas: (DeltaMessage | null)[]): ExtractedToolCalls {
    const config = this.config;
    const content = deltas.map((d) => d?.content ?? "").join("");
    const toolCalls: ToolCall[] = [];
    for (const slot of this.slots) {
      if (!slot.name && !slot.args) continue;
      let name = pyStrip(slot.name);
      const raw = slot.args;
      let argsJson: string;
      if (!name && pyStrip(raw)) [name, argsJson] = extractNameAndArgs(raw);
      else if (pyStrip(raw)) argsJson = config.argConverter ? config.argConverter(raw, false) : extractNameAndArgs(raw)[1];
      else argsJson = "{}";
      if (this.acceptToolName(name)) {
        this.ensureToolId(slot);
        toolCalls.push({ id: slot.id, name, arguments: this.fixArgTypes(argsJson, name) });
      }
    }
    return { toolsCalled: toolCalls.length > 0, toolCalls, content: this.stripContentWhitespace(content, toolCalls.length > 0) };
  }

  private stripContentWhitespace(content: string, toolsCalled: boolean): string | null {
    if (toolsCalled) {
      if (this.config.stripContentWhitespaceWithTools) content = pyStrip(content);
      else if (this.config.dropWhitespaceOnlyContentBeforeTools && !pyStrip(content)) content = "";
    }
    return content || null;
  }

  private singlePassParse(text: string, initialState?: ParserState): [string | null, string | null, ExtractedToolCalls] {
    this.reset(initialState);
    const events = this.engine.feed(text);
    events.push(...this.engine.finish());
    const delta = this.eventsToDelta(events, true);
    const info = this.buildExtractedResult();
    let reasoning = delta?.reasoning ?? null;
    if (reasoning && this.config.stripTrailingReasoningWhitespace) reasoning = pyRstrip(reasoning) || null;
    let content = delta?.content ?? null;
    if (content) content = this.stripContentWhitespace(content, info.toolsCalled);
    return [reasoning, content, info];
  }
}

/** The keys of a tool's properties whose schema is only a string (their values stream as they grow); null without properties. */
function streamableStringKeys(properties: Record<string, unknown>): Set<string> | null {
  const keys = Object.keys(properties);
  if (keys.length === 0) return null;
  return new Set(
    keys.filter((k) => {
      const types = extractTypesFromSchema(properties[k]);
      return types.length === 1 && types[0] === "string";
    }),
  );
}

/** A call's name and arguments JSON from its raw body (`{"name": …, "arguments"|"parameters": …}`, else the rest of the object). */
function extractNameAndArgs(rawBody: string): [string, string] {
  const body = pyStrip(rawBody);
  const parsed = tryPyLoads(body);
  if (!(parsed instanceof Map)) return ["", body];
  const name = parsed.get("name");
  for (const key of ["arguments", "parameters"]) {
    if (parsed.has(key)) {
      const v = parsed.get(key)!;
      return [typeof name === "string" ? name : "", typeof v === "string" ? v : pyDumps(v)];
    }
  }
  const rest: PyDict = new Map([...parsed].filter(([k]) => k !== "name"));
  return [typeof name === "string" ? name : "", pyDumps(rest)];
}

/** Merges tool-call deltas that share an index into one per index. */
function coalesce(deltas: DeltaToolCall[]): DeltaToolCall[] {
  const merged = new Map<number, DeltaToolCall>();
  for (const tc of deltas) {
    const existing = merged.get(tc.index);
    if (!existing) {
      merged.set(tc.index, tc);
      continue;
    }
    if (tc.id !== undefined && existing.id === undefined) existing.id = tc.id;
    if (tc.type !== undefined && existing.type === undefined) existing.type = tc.type;
    if (tc.function) {
      if (!existing.function) existing.function = tc.function;
      else {
        if (tc.function.name !== undefined && existing.function.name === undefined) existing.function.name = tc.function.name;
        if (tc.function.arguments !== undefined) existing.function.arguments = (existing.function.arguments ?? "") + tc.function.arguments;
      }
    }
  }
  return merged.size === deltas.length ? deltas : [...merged.values()];
}

/** _coerce_dict: each value typed by its property's schema; whether anything changed. */
function coerceDict(args: PyDict, properties: Record<string, unknown>): boolean {
  let changed = false;
  for (const [key, value] of args) {
    const schema = properties[key];
    if (!isObject(schema)) continue;
    const [coerced, valueChanged] = coerceValue(value, schema);
    if (valueChanged) {
      args.set(key, coerced);
      changed = true;
    }
  }
  return changed;
}

function coerceValue(value: PyValue, schema: Record<string, unknown>): [PyValue, boolean] {
  if (typeof value === "string") {
    const r = coerceToSchemaType(value, extractTypesFromSchema(schema));
    return [r.value, r.changed];
  }
  if (value instanceof Map) {
    const nested = schema.properties;
    return isObject(nested) ? [value, coerceDict(value, nested)] : [value, false];
  }
  if (Array.isArray(value)) {
    const items = schema.items;
    if (!isObject(items)) return [value, false];
    let changed = false;
    value.forEach((item, i) => {
      const [c, ch] = coerceValue(item, items);
      if (ch) {
        value[i] = c;
        changed = true;
      }
    });
    return [value, changed];
  }
  const asText = pyDumps(value);
  const r = coerceToSchemaType(asText, extractTypesFromSchema(schema));
  return sameTypeAndValue(r.value, value) ? [value, false] : [r.value, true];
}

/** Python's `type(a) is type(b) and a == b` for scalar JSON values. */
function sameTypeAndValue(a: PyValue, b: PyValue): boolean {
  return pyDumps(a) === pyDumps(b) && typeof a === typeof b && (a === null) === (b === null);
}

/**
 * The prefix of an arguments JSON object that is stable while it streams: up to the last
 * top-level value, and into that value only when it is a string of a key that stays a string.
 */
export function safeArgPrefix(json: string, stringKeys: Set<string> | null): string {
  let lastColon = -1;
  let lastKey: string | null = null;
  let pendingKey: string | null = null;
  let inString = false;
  let escape = false;
  let stringStart = -1;
  let depth = 0;
  for (let i = 0; i < json.length; i++) {
    const c = json[i]!;
    if (escape) {
      escape = false;
      continue;
    }
    if (inString) {
      if (c === "\\") escape = true;
      else if (c === '"') {
        inString = false;
        if (depth === 1 && stringStart >= 0) pendingKey = json.slice(stringStart + 1, i);
      }
      continue;
    }
    if (c === '"') {
      inString = true;
      stringStart = i;
    } else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") depth--;
    else if (c === ":" && depth === 1) {
      lastColon = i;
      lastKey = pendingKey;
      pendingKey = null;
    }
  }
  if (lastColon < 0) return "";
  let end = lastColon + 1;
  while (end < json.length && " \t\n\r".includes(json[end]!)) end++;
  if (end >= json.length || json[end] !== '"') return json.slice(0, end);
  if (stringKeys !== null && (lastKey === null || !stringKeys.has(lastKey))) return json.slice(0, end);
  escape = false;
  for (let i = end + 1; i < json.length; i++) {
    const c = json[i]!;
    if (escape) {
      escape = false;
      continue;
    }
    if (c === "\\") {
      escape = true;
      continue;
    }
    if (c === '"') return json.slice(0, i);
  }
  return json;
}

/**
 * Whether a grammar started in `start` can get into REASONING (or emit reasoning chunks): a
 * count of a grammar that cannot is 0 whatever the output (Qwen3 with thinking off, or after a
 * prompt that closed reasoning), so it needs no parse.
 */
function reachesReasoning(config: EngineConfig, start: ParserState): boolean {
  let byStart = reachability.get(config);
  if (!byStart) reachability.set(config, (byStart = new Map()));
  let reaches = byStart.get(start);
  if (reaches === undefined) {
    const edges = Object.entries(config.transitions).map(([key, tr]) => ({ from: key.split(" ")[0] as ParserState, tr }));
    if (edges.some((e) => e.tr.events.includes("REASONING_CHUNK"))) reaches = true;
    else {
      // The engine's end (finish) goes to CONTENT: reachable from anywhere.
      const seen = new Set<ParserState>([start, "CONTENT"]);
      for (let grew = true; grew; ) {
        grew = false;
        for (const e of edges) {
          if (seen.has(e.from) && !seen.has(e.tr.next)) {
            seen.add(e.tr.next);
            grew = true;
          }
        }
      }
      reaches = seen.has("REASONING");
    }
    byStart.set(start, reaches);
  }
  return reaches;
}
const reachability = new WeakMap<EngineConfig, Map<ParserState, boolean>>();

/** The reasoning face of an engine (vLLM's ParserEngineReasoningAdapter): tool markup stays text. */
export function engineReasoningParser(engine: ParserEngine, options: { thinkingDisabled?: boolean } = {}): ReasoningParser {
  const skipTools = <T>(fn: () => T): T => {
    const saved = engine.skipToolParsing;
    engine.skipToolParsing = true;
    try {
      return fn();
    } finally {
      engine.skipToolParsing = saved;
    }
  };
  // vLLM's `_streaming_count_valid`: the engine streamed this output, so its own count is the output's.
  let streamed = false;
  return {
    engineBased: true,
    extractReasoning: (text) => {
      streamed = false;
      return options.thinkingDisabled ? [null, text] : skipTools(() => engine.extractReasoning(text));
    },
    extractReasoningStreaming: (args: StreamArgs) => {
      streamed = true;
      return skipTools(() => engine.extractReasoningStreaming(args.deltaText, args.deltaTokenIds));
    },
    countReasoningTokens: (ids) => (streamed ? engine.reasoningTokenCount : ids.length === 0 ? 0 : engine.countReasoningTokensOf(ids)),
    isReasoningEnd: (ids) => engine.isReasoningEnd(ids),
    extractContentIds: (ids) => engine.extractContentIds(ids),
    setPromptTokenIds: (ids) => engine.setPromptTokenIds(ids),
    engineConfirmedReasoningEnd: () => engine.reasoningEnded,
    finishStreaming: () => skipTools(() => engine.finishStreaming()),
  };
}

/** The tool face of an engine (vLLM's ParserEngineToolAdapter): parses reasoning-stripped content. */
export function engineToolCallParser(engine: ParserEngine): ToolCallParser {
  return {
    engineBased: true,
    extractToolCalls: (content, request) => engine.extractToolCallsFromContent(content, request),
    extractToolCallsStreaming: (args, request) => engine.extractToolCallsStreaming(args.deltaText, args.deltaTokenIds, request, "CONTENT"),
    remainingUnstreamedArgs: () => "",
    finishStreaming: () => engine.finishStreaming(),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The token ids a config names, per tokenizer (its `tokenId`) and config: built once, not per request. */
const tokenIdsCache = new WeakMap<ParserContext["tokenId"], WeakMap<EngineConfig, ConfigTokenIds>>();
interface ConfigTokenIds {
  reasoningStartId: number | undefined;
  reasoningEndId: number | undefined;
  boundaryIds: ReadonlySet<number>;
  reasoningEndIds: ReadonlySet<number>;
}
function tokenIdsOf(config: EngineConfig, ctx: ParserContext): ConfigTokenIds {
  let perConfig = tokenIdsCache.get(ctx.tokenId);
  if (!perConfig) tokenIdsCache.set(ctx.tokenId, (perConfig = new WeakMap()));
  let ids = perConfig.get(config);
  if (!ids) perConfig.set(config, (ids = buildTokenIds(config, ctx)));
  return ids;
}
function buildTokenIds(config: EngineConfig, ctx: ParserContext): ConfigTokenIds {
  const idOf = (token: string | undefined) => (token === undefined ? undefined : ctx.tokenId(token));
  return {
    reasoningStartId: idOf(config.tokenIdTerminals.THINK_START),
    reasoningEndId: idOf(config.tokenIdTerminals.THINK_END),
    boundaryIds: new Set(config.turnBoundaryTokens.map((t) => ctx.tokenId(t)).filter((id): id is number => id !== undefined)),
    reasoningEndIds: reasoningEndIdsOf(config, idOf),
  };
}
