/**
 * vLLM 0.33.0's `ParserEngine` (`vllm/parser/engine/parser_engine.py`): one grammar-driven
 * parser for reasoning and tool calls, and its two faces (`vllm/parser/engine/adapters.py`):
 * the reasoning adapter (the engine with tool parsing skipped: tool markup stays text) and the
 * tool adapter (the engine started in content, on reasoning-stripped text). Written from that
 * source: semantic events become deltas (content held back while it is only whitespace, tool
 * names and argument JSON streamed as they become stable) and, at the end, the extracted result.
 */
import { pyDumps, tryPyLoads, type PyDict, type PyValue } from "../../pyjson.ts";
import { pyStrip, pyRstrip } from "../../pystr.ts";
import { coerceToSchemaType, extractTypesFromSchema } from "../coerce.ts";
import type { DeltaMessage, DeltaToolCall, ExtractedToolCalls, ParserContext, ParseRequest, ReasoningParser, StreamArgs, ToolCall, ToolCallParser } from "../types.ts";
import { streamingEngine, transitionKey, type EngineConfig, type ParserState, type SemanticEvent } from "./streaming-engine.ts";

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
  extractReasoning(text: string): [string | null, string | null];
  extractReasoningStreaming(delta: string, ids: readonly number[]): DeltaMessage | null;
  extractToolCallsFromContent(content: string, request: ParseRequest): ExtractedToolCalls;
  extractToolCallsStreaming(delta: string, ids: readonly number[], request: ParseRequest, initialState?: ParserState): DeltaMessage | null;
  finishStreaming(): DeltaMessage | null;
  setPromptTokenIds(ids: readonly number[]): void;
  isReasoningEnd(ids: readonly number[]): boolean;
  extractContentIds(ids: readonly number[]): number[];
}

/**
 * @example
 * const engine = parserEngine(qwen3Config(true), ctx, tools);
 * engine.extractReasoning("<think>\nhm\n</think>\n\nHi"); // ["\nhm\n", "\n\nHi"]
 */
export function parserEngine(config: EngineConfig, ctx: ParserContext, initialTools: readonly unknown[] | null | undefined): ParserEngine {
  let tools = initialTools ?? null;
  const engine = streamingEngine(config, ctx);
  const hasReasoning = "THINK_END" in config.tokenIdTerminals || "THINK_START" in config.terminals || "THINK_END" in config.terminals || config.initialState === "REASONING";
  let reasoningEnded = !hasReasoning;
  let promptClosesReasoning = false;
  let streamingInitialized = false;
  let slots: Slot[] = [];
  let deferredContent = "";
  let deferredReasoning = "";
  let contentHasNonWs = false;
  let suppressToolCalls = false;

  const { reasoningStartId, reasoningEndId, boundaryIds, reasoningEndIds } = tokenIdsOf(config, ctx);

  const reset = (initialState?: ParserState) => {
    const promptClosed = initialState === undefined && promptClosesReasoning;
    engine.reset(promptClosed ? "CONTENT" : initialState);
    reasoningEnded = !hasReasoning || promptClosed;
    slots = [];
    deferredContent = "";
    deferredReasoning = "";
    contentHasNonWs = false;
  };
  const initializeStreaming = (initialState?: ParserState) => {
    if (streamingInitialized) return;
    streamingInitialized = true;
    reset(initialState);
  };

  const propertiesOf = (name: string): Record<string, unknown> => {
    for (const tool of tools ?? []) {
      const fn = isObject(tool) ? tool.function : undefined;
      if (isObject(fn) && fn.name === name) {
        const props = isObject(fn.parameters) ? fn.parameters.properties : undefined;
        return isObject(props) ? props : {};
      }
    }
    return {};
  };
  const toolNameKnown = (name: string) => (tools ?? []).some((t) => isObject(t) && isObject(t.function) && t.function.name === name);
  const acceptToolName = (name: string) => Boolean(name) && (!config.validateToolNames || !tools || tools.length === 0 || toolNameKnown(name));

  const streamableStringKeys = (properties: Record<string, unknown>): Set<string> | null => {
    const keys = Object.keys(properties);
    if (keys.length === 0) return null;
    return new Set(keys.filter((k) => {
      const types = extractTypesFromSchema(properties[k]);
      return types.length === 1 && types[0] === "string";
    }));
  };

  /** _fix_arg_types: string values typed by the tool's schema. */
  const fixArgTypes = (argsJson: string, name: string): string => {
    if (!tools || tools.length === 0 || !name) return argsJson;
    const args = tryPyLoads(argsJson);
    if (!(args instanceof Map)) return argsJson;
    const properties = propertiesOf(name);
    if (Object.keys(properties).length === 0) return argsJson;
    return coerceDict(args, properties) ? pyDumps(args) : argsJson;
  };

  const ensureToolId = (slot: Slot) => {
    if (!slot.id) slot.id = ctx.newToolCallId();
  };

  const emitName = (idx: number, deltas: DeltaToolCall[], name: string | null) => {
    if (name === null || !acceptToolName(name)) return;
    const slot = slots[idx]!;
    slot.name = name;
    slot.nameSent = true;
    slot.stringKeys = streamableStringKeys(propertiesOf(name));
    ensureToolId(slot);
    deltas.push({ index: idx, id: slot.id, type: "function", function: { name } });
  };

  const tryExtractName = (idx: number): string | null => {
    const m = /"name"\s*:\s*"([^"]*)"/.exec(slots[idx]!.args);
    return m && m[1] ? m[1] : null;
  };

  const computeArgDelta = (idx: number): string | null => {
    const converter = config.argConverter;
    const slot = slots[idx]!;
    if (!converter) return null;
    if (!config.streamArgDeltas) return null;
    let current = converter(slot.args, true);
    if (!current) return null;
    if (slot.name) current = fixArgTypes(current, slot.name);
    const prev = slot.streamedJson;
    const safe = safeArgPrefix(current, slot.stringKeys);
    if (!safe) return null;
    if (prev && !safe.startsWith(prev)) return null;
    slot.streamedJson = safe;
    return safe.slice(prev.length) || null;
  };

  const flushArgConverter = (idx: number): string | null => {
    const converter = config.argConverter;
    if (!converter) return null;
    const slot = slots[idx]!;
    let final = converter(slot.args, false);
    if (final) final = fixArgTypes(final, slot.name);
    const prev = slot.streamedJson;
    if (final && final.length > prev.length) {
      if (prev && !final.startsWith(prev)) return null;
      slot.streamedJson = final;
      return final.slice(prev.length);
    }
    return null;
  };

  const handleArgChunk = (ev: SemanticEvent, deltas: DeltaToolCall[]) => {
    const slot = slots[ev.toolIndex]!;
    if (ev.value) slot.args += ev.value;
    if (!slot.nameSent) {
      if (slot.name) emitName(ev.toolIndex, deltas, slot.name);
      else if (ev.value) emitName(ev.toolIndex, deltas, tryExtractName(ev.toolIndex));
    } else if (ev.value) {
      const diff = computeArgDelta(ev.toolIndex);
      if (diff) deltas.push({ index: ev.toolIndex, function: { arguments: diff } });
    }
  };

  const handleToolEnd = (ev: SemanticEvent, deltas: DeltaToolCall[]) => {
    const idx = ev.toolIndex;
    if (idx >= slots.length) return;
    let remaining = flushArgConverter(idx);
    const slot = slots[idx]!;
    if (!slot.nameSent) {
      const name = slot.name || tryExtractName(idx) || "";
      if (acceptToolName(name)) {
        slot.name = name;
        slot.nameSent = true;
        slot.stringKeys = streamableStringKeys(propertiesOf(name));
        ensureToolId(slot);
        deltas.push({ index: idx, id: slot.id, type: "function", function: { name, arguments: remaining ?? "" } });
        remaining = null;
      }
    }
    if (remaining && slot.nameSent) deltas.push({ index: idx, function: { arguments: remaining } });
  };

  const eventsToDelta = (events: SemanticEvent[], finished = false): DeltaMessage | null => {
    if (events.length === 0 && !deferredContent) return null;
    let toolDeltas: DeltaToolCall[] = [];
    const contentParts: string[] = [];
    const reasoningParts: string[] = [];
    const carried = deferredContent;
    let sawToolEvent = false;
    const suppress = suppressToolCalls;
    for (const ev of events) {
      switch (ev.type) {
        case "TEXT_CHUNK":
          if (sawToolEvent) deferredContent += ev.value;
          else contentParts.push(ev.value);
          break;
        case "REASONING_CHUNK":
          reasoningParts.push(ev.value);
          break;
        case "REASONING_END":
          reasoningEnded = true;
          break;
        case "TOOL_CALL_START":
          if (!suppress) {
            sawToolEvent = true;
            while (slots.length <= ev.toolIndex) slots.push(newSlot());
          }
          break;
        case "TOOL_NAME":
          if (!suppress) {
            sawToolEvent = true;
            slots[ev.toolIndex]!.name += ev.value;
          }
          break;
        case "ARG_VALUE_CHUNK":
          if (!suppress) {
            sawToolEvent = true;
            handleArgChunk(ev, toolDeltas);
          }
          break;
        case "TOOL_CALL_END":
          if (!suppress) {
            sawToolEvent = true;
            handleToolEnd(ev, toolDeltas);
          }
          break;
      }
    }
    if (toolDeltas.length > 1) toolDeltas = coalesce(toolDeltas);
    if (deferredContent && (!sawToolEvent || toolDeltas.length === 0)) {
      const now = deferredContent.slice(carried.length);
      if (carried) contentParts.unshift(carried);
      if (now) contentParts.push(now);
      deferredContent = "";
    }
    let content = contentParts.join("");
    if (!contentHasNonWs && content) {
      if (pyStrip(content)) contentHasNonWs = true;
      else if (slots.length > 0) {
        if (config.dropWhitespaceOnlyContentBeforeTools) content = "";
      } else if (!finished) {
        deferredContent = content;
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
  };

  const stripTrailingReasoning = (delta: DeltaMessage | null): DeltaMessage | null => {
    if (!config.stripTrailingReasoningWhitespace) return delta;
    if (delta && delta.reasoning != null) {
      const combined = deferredReasoning + delta.reasoning;
      const trimmed = pyRstrip(combined);
      deferredReasoning = combined.slice(trimmed.length);
      delta.reasoning = trimmed || null;
      if (delta.reasoning == null && delta.content == null && !delta.toolCalls?.length) return null;
    } else if (deferredReasoning && reasoningEnded) deferredReasoning = "";
    return delta;
  };

  const checkSkipToolParsing = (request: ParseRequest) => {
    if (request.tools && request.tools.length > 0) tools = request.tools;
    if (!engine.skipToolParsing && !suppressToolCalls && request.tool_choice === "none" && request.tools && request.tools.length > 0) suppressToolCalls = true;
  };

  const buildExtractedResult = (...deltas: (DeltaMessage | null)[]): ExtractedToolCalls => {
    const content = deltas.map((d) => d?.content ?? "").join("");
    const toolCalls: ToolCall[] = [];
    for (const slot of slots) {
      if (!slot.name && !slot.args) continue;
      let name = pyStrip(slot.name);
      const raw = slot.args;
      let argsJson: string;
      if (!name && pyStrip(raw)) [name, argsJson] = extractNameAndArgs(raw);
      else if (pyStrip(raw)) argsJson = config.argConverter ? config.argConverter(raw, false) : extractNameAndArgs(raw)[1];
      else argsJson = "{}";
      if (acceptToolName(name)) {
        ensureToolId(slot);
        toolCalls.push({ id: slot.id, name, arguments: fixArgTypes(argsJson, name) });
      }
    }
    return { toolsCalled: toolCalls.length > 0, toolCalls, content: stripContentWhitespace(content, toolCalls.length > 0) };
  };

  const stripContentWhitespace = (content: string, toolsCalled: boolean): string | null => {
    if (toolsCalled) {
      if (config.stripContentWhitespaceWithTools) content = pyStrip(content);
      else if (config.dropWhitespaceOnlyContentBeforeTools && !pyStrip(content)) content = "";
    }
    return content || null;
  };

  const singlePassParse = (text: string, initialState?: ParserState): [string | null, string | null, ExtractedToolCalls] => {
    reset(initialState);
    const events = engine.feed(text);
    events.push(...engine.finish());
    const delta = eventsToDelta(events, true);
    const info = buildExtractedResult();
    let reasoning = delta?.reasoning ?? null;
    if (reasoning && config.stripTrailingReasoningWhitespace) reasoning = pyRstrip(reasoning) || null;
    let content = delta?.content ?? null;
    if (content) content = stripContentWhitespace(content, info.toolsCalled);
    return [reasoning, content, info];
  };

  const self: ParserEngine = {
    get skipToolParsing() {
      return engine.skipToolParsing;
    },
    set skipToolParsing(value: boolean) {
      engine.skipToolParsing = value;
    },
    get reasoningEnded() {
      return reasoningEnded;
    },
    extractReasoning(text) {
      reset();
      const events = engine.feed(text);
      events.push(...engine.finish());
      let reasoning = "";
      let content = "";
      for (const ev of events) {
        if (ev.type === "REASONING_CHUNK") reasoning += ev.value;
        else if (ev.type === "TEXT_CHUNK") content += ev.value;
        else if (ev.type === "REASONING_END") reasoningEnded = true;
      }
      if (config.stripTrailingReasoningWhitespace) reasoning = pyRstrip(reasoning);
      return [reasoning || null, content || null];
    },
    extractReasoningStreaming(delta, ids) {
      initializeStreaming();
      return stripTrailingReasoning(eventsToDelta(engine.feed(delta, ids)));
    },
    extractToolCallsFromContent(content, request) {
      checkSkipToolParsing(request);
      const [, parsed, info] = singlePassParse(content, "CONTENT");
      if (parsed !== null && info.content === null) return { ...info, content: parsed };
      return info;
    },
    extractToolCallsStreaming(delta, ids, request, initialState) {
      initializeStreaming(initialState);
      checkSkipToolParsing(request);
      return stripTrailingReasoning(eventsToDelta(engine.feed(delta, ids)));
    },
    finishStreaming() {
      const events = engine.finish();
      if (events.length > 0 || deferredContent) return eventsToDelta(events, true);
      return null;
    },
    setPromptTokenIds(ids) {
      promptClosesReasoning = config.initialState === "REASONING" && boundaryIds.size > 0 && self.isReasoningEnd(ids);
    },
    isReasoningEnd(ids) {
      const wait = config.waitForReasoning ?? config.initialState === "REASONING";
      const start = config.transitions[transitionKey(config.initialState, "THINK_START")];
      const startOpens = start !== undefined && start.next === "REASONING";
      for (let i = ids.length - 1; i >= 0; i--) {
        const id = ids[i]!;
        if (reasoningEndIds.has(id)) return true;
        if (id === reasoningStartId) {
          if (startOpens) return false;
          break;
        }
        if (boundaryIds.has(id)) break;
      }
      return !wait;
    },
    extractContentIds(ids) {
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
    },
  };
  return self;

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
  return {
    engineBased: true,
    extractReasoning: (text) => (options.thinkingDisabled ? [null, text] : skipTools(() => engine.extractReasoning(text))),
    extractReasoningStreaming: (args: StreamArgs) => skipTools(() => engine.extractReasoningStreaming(args.deltaText, args.deltaTokenIds)),
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
  const reasoningStartId = idOf(config.tokenIdTerminals.THINK_START);
  const reasoningEndId = idOf(config.tokenIdTerminals.THINK_END);
  const boundaryIds = new Set(config.turnBoundaryTokens.map((t) => ctx.tokenId(t)).filter((id): id is number => id !== undefined));
  const reasoningEndIds = ((): Set<number> => {
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
  })();
  return { reasoningStartId, reasoningEndId, boundaryIds, reasoningEndIds };
}
