/**
 * Qwen3's output grammar (vLLM 0.33.0's `vllm/parser/qwen3.py`, `Qwen3Parser`): `<think>…</think>`
 * reasoning and Qwen3-Coder's XML tool calls
 * (`<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>`), one
 * engine behind the reasoning parser `qwen3` and the tool parsers `qwen3_coder` / `qwen3_xml`.
 * With thinking on (the default) the output starts in reasoning: text with no `</think>` is
 * all reasoning, and a `<tool_call>` ends reasoning implicitly. A value keeps its text, less
 * one newline at each end, and is then typed by the tool's schema.
 */
import { pyDumps, type PyDict } from "../pyjson.ts";
import { engineReasoningParser, engineToolCallParser, parserEngine } from "./engine/parser-engine.ts";
import type { EngineConfig, Transition } from "./engine/streaming-engine.ts";
import type { ParserContext, ParserOptions, ReasoningParser, ToolCallParser } from "./types.ts";

const PARAM = /<\s*parameter\s*=\s*([^>]*)>([\s\S]*?)(?:<\s*\/\s*parameter\s*>|(?=<\s*parameter\s*=))/g;
const PARTIAL_PARAM = /<\s*parameter\s*=\s*([^>]+)>([\s\S]*)$/;

/** One leading and one trailing newline go (the template's markup around a value). */
function trimWrappingNewlines(value: string): string {
  if (value.startsWith("\n")) value = value.slice(1);
  if (value.endsWith("\n")) value = value.slice(0, -1);
  return value;
}

/**
 * `<parameter=k>v</parameter>…` → `{"k": "v", …}` (all values strings; a repeated key keeps
 * its first place and its last value). Partial: an open last parameter counts too.
 *
 * @example
 * qwen3ArgConverter("<parameter=path>\n/tmp\n</parameter>", false); // '{"path": "/tmp"}'
 */
export function qwen3ArgConverter(raw: string, partial: boolean): string {
  const params: PyDict = new Map();
  for (const m of raw.matchAll(PARAM)) params.set(m[1]!, trimWrappingNewlines(m[2]!));
  if (partial) {
    const m = PARTIAL_PARAM.exec(raw.replace(PARAM, ""));
    if (m && m[1]) params.set(m[1], trimWrappingNewlines(m[2]!));
  }
  return pyDumps(params);
}

const t = (next: Transition["next"], ...events: Transition["events"]): Transition => ({ next, events });

/** vLLM's `qwen3_config(thinking)`. */
export function qwen3Config(thinking: boolean): EngineConfig {
  return {
    name: "qwen3",
    initialState: thinking ? "REASONING" : "CONTENT",
    waitForReasoning: thinking,
    turnBoundaryTokens: ["<|im_start|>", "<|im_end|>"],
    preserveTokens: [],
    terminals: {
      THINK_START: "<think>",
      THINK_END: "</think>",
      TOOL_START: "<tool_call>",
      TOOL_END: "</tool_call>",
      FUNC_PREFIX: "<function=",
      FUNC_END: "</function>",
      PARAM_START: "<parameter=",
      PARAM_END: "</parameter>",
      CLOSE_ANGLE: ">",
    },
    tokenIdTerminals: { THINK_START: "<think>", THINK_END: "</think>", TOOL_START: "<tool_call>", TOOL_END: "</tool_call>" },
    transitions: {
      "REASONING THINK_START": t("REASONING"),
      "REASONING THINK_END": t("CONTENT", "REASONING_END"),
      // A second </think> after reasoning ended is dropped.
      "CONTENT THINK_END": t("CONTENT"),
      "REASONING TOOL_START": t("TOOL_PREAMBLE", "REASONING_END", "TOOL_CALL_START"),
      "CONTENT TOOL_START": t("TOOL_PREAMBLE", "REASONING_END", "TOOL_CALL_START"),
      // <function= without <tool_call>.
      "CONTENT FUNC_PREFIX": t("TOOL_NAME", "TOOL_CALL_START"),
      "TOOL_PREAMBLE TOOL_END": t("CONTENT", "TOOL_CALL_END"),
      "TOOL_PREAMBLE FUNC_PREFIX": t("TOOL_NAME"),
      "TOOL_NAME CLOSE_ANGLE": t("TOOL_ARGS"),
      "TOOL_NAME FUNC_END": t("TOOL_BETWEEN", "TOOL_CALL_END"),
      "TOOL_NAME TOOL_END": t("CONTENT", "TOOL_CALL_END"),
      "TOOL_NAME TOOL_START": t("TOOL_PREAMBLE", "TOOL_CALL_END", "TOOL_CALL_START"),
      "TOOL_NAME FUNC_PREFIX": t("TOOL_NAME", "TOOL_CALL_END", "TOOL_CALL_START"),
      "TOOL_ARGS FUNC_END": t("TOOL_BETWEEN", "TOOL_CALL_END"),
      "TOOL_ARGS FUNC_PREFIX": t("TOOL_NAME", "TOOL_CALL_END", "TOOL_CALL_START"),
      "TOOL_ARGS PARAM_START": t("TOOL_ARGS", "ARG_VALUE_CHUNK"),
      "TOOL_ARGS PARAM_END": t("TOOL_ARGS", "ARG_VALUE_CHUNK"),
      "TOOL_BETWEEN TOOL_END": t("CONTENT"),
      "TOOL_BETWEEN TOOL_START": t("TOOL_PREAMBLE", "TOOL_CALL_START"),
      "TOOL_BETWEEN FUNC_PREFIX": t("TOOL_NAME", "TOOL_CALL_START"),
    },
    argConverter: qwen3ArgConverter,
    streamArgDeltas: true,
    stripTrailingReasoningWhitespace: false,
    dropWhitespaceOnlyContentBeforeTools: true,
    stripContentWhitespaceWithTools: true,
    validateToolNames: false,
  };
}

/** One config per thinking setting, shared by every parser (the engine reads it, never writes it; its tables are cached by it). */
const configs = new Map<boolean, EngineConfig>();
function sharedQwen3Config(thinking: boolean): EngineConfig {
  let config = configs.get(thinking);
  if (!config) configs.set(thinking, (config = qwen3Config(thinking)));
  return config;
}

/** `chat_template_kwargs.get("enable_thinking", True)` (Python truthiness). */
function thinkingOf(options: ParserOptions): boolean {
  const kwargs = options.chatTemplateKwargs ?? {};
  const v = "enable_thinking" in kwargs ? kwargs.enable_thinking : true;
  return Boolean(v) && !(Array.isArray(v) && v.length === 0) && !(typeof v === "object" && v !== null && Object.keys(v).length === 0);
}

/** vLLM's reasoning parser `qwen3`. */
export function qwen3ReasoningParser(ctx: ParserContext, options: ParserOptions): ReasoningParser {
  const thinking = thinkingOf(options);
  return engineReasoningParser(parserEngine(sharedQwen3Config(thinking), ctx, options.tools), { thinkingDisabled: !thinking });
}

/** vLLM's tool parsers `qwen3_coder` and `qwen3_xml` (the same class in 0.33.0). */
export function qwen3CoderToolParser(ctx: ParserContext, options: ParserOptions): ToolCallParser {
  return engineToolCallParser(parserEngine(sharedQwen3Config(thinkingOf(options)), ctx, options.tools));
}
