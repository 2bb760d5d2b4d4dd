/**
 * Output parsers by the names vLLM 0.33.0 gives them (`--tool-call-parser`, `--reasoning-parser`).
 * A new format is a factory registered here (see docs/model.md).
 */
import { hermesToolParser } from "./hermes.ts";
import { qwen3CoderToolParser, qwen3ReasoningParser } from "./qwen3.ts";
import type { ReasoningParserFactory, ToolCallParserFactory } from "./types.ts";

const toolParsers = new Map<string, ToolCallParserFactory>([
  ["hermes", (ctx) => hermesToolParser(ctx)],
  // vLLM registers qwen3_json as hermes.
  ["qwen3_json", (ctx) => hermesToolParser(ctx)],
  ["qwen3_coder", qwen3CoderToolParser],
  ["qwen3_xml", qwen3CoderToolParser],
]);
const reasoningParsers = new Map<string, ReasoningParserFactory>([["qwen3", qwen3ReasoningParser]]);

/**
 * @example
 * registerToolCallParser("my_format", (ctx, options) => myParser(ctx, options));
 */
export function registerToolCallParser(name: string, factory: ToolCallParserFactory): void {
  toolParsers.set(name, factory);
}

export function registerReasoningParser(name: string, factory: ReasoningParserFactory): void {
  reasoningParsers.set(name, factory);
}

/** The factory of a tool parser, or an error naming the known ones. */
export function toolCallParserFactory(name: string): ToolCallParserFactory {
  const factory = toolParsers.get(name);
  if (!factory) throw new Error(`model: unknown tool-call parser "${name}"; known: ${[...toolParsers.keys()].join(", ")}`);
  return factory;
}

export function reasoningParserFactory(name: string): ReasoningParserFactory {
  const factory = reasoningParsers.get(name);
  if (!factory) throw new Error(`model: unknown reasoning parser "${name}"; known: ${[...reasoningParsers.keys()].join(", ")}`);
  return factory;
}

/**
 * The registered parsers' names (what `--tool-call-parser` / `--reasoning-parser` may name).
 *
 * @example
 * registeredParserNames().tool.includes("hermes") // true
 */
export function registeredParserNames(): { tool: string[]; reasoning: string[] } {
  return { tool: [...toolParsers.keys()], reasoning: [...reasoningParsers.keys()] };
}
