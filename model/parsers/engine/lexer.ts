/**
 * The incremental lexer of vLLM 0.33.0's parser engine (`vllm/parser/engine/incremental_lexer.py`)
 * for grammars whose terminals are all literal strings: text in, terminals and content out,
 * holding back a tail that may still grow into a terminal (`<tool_` before `call>` arrives).
 *
 * Each lexed piece carries the number of tokens it holds, as vLLM counts them for
 * `usage.completion_tokens_details.reasoning_tokens`: a fed chunk's tokens sit at the first
 * character of their text in it (those whose text is not found, at its first character), and a
 * piece holds the tokens that sit in it (token-counts.ts).
 */
import { tokenMarks, type TokenMarks } from "./token-counts.ts";

export const CONTENT = "__CONTENT__";

export interface LexToken {
  terminal: string;
  value: string;
  /** The tokens the piece holds (vLLM's `LexToken.token_count`). */
  tokenCount: number;
}

/** The literal terminals of a grammar, precomputed once per grammar. */
export interface LexerShape {
  /** (literal, terminal name), longest escaped pattern first, as vLLM sorts them. */
  literals: [string, string][];
  firstChars: Set<string>;
  prefixes: Set<string>;
  byFirst: Map<string, [string, string][]>;
}

/**
 * @example
 * const shape = lexerShape([["<think>", "THINK_START"], ["</think>", "THINK_END"]]);
 */
export function lexerShape(terminals: [literal: string, name: string][]): LexerShape {
  const escapedLength = (s: string) => s.replace(/[.*+?^${}()|[\]\\\-#&~\s]/g, "\\$&").length;
  // Python's sort is stable: equal lengths keep declaration order.
  const literals = terminals.map((t, i) => [t, i] as const).sort((a, b) => escapedLength(b[0][0]) - escapedLength(a[0][0]) || a[1] - b[1]).map(([t]) => t);
  const prefixes = new Set<string>();
  const byFirst = new Map<string, [string, string][]>();
  for (const [lit, name] of literals) {
    for (let i = 1; i < lit.length; i++) prefixes.add(lit.slice(0, i));
    if (!lit) continue;
    const list = byFirst.get(lit[0]!) ?? [];
    list.push([lit, name]);
    byFirst.set(lit[0]!, list);
  }
  return { literals, firstChars: new Set(literals.filter(([l]) => l).map(([l]) => l[0]!)), prefixes, byFirst };
}

export interface IncrementalLexer {
  readonly buffer: string;
  /**
   * A chunk of text, with the texts of its tokens (each decoded alone) and how many tokens it
   * holds (at least as many as texts: tokens without a text of their own count at its start).
   */
  feed(text: string, tokenTexts?: readonly string[], tokenCount?: number): LexToken[];
  flush(): LexToken[];
  reset(): void;
  /** Whether text may start a terminal (the engine's fast path skips the lexer otherwise). */
  mayStartTerminal(text: string): boolean;
}

export function incrementalLexer(shape: LexerShape): IncrementalLexer {
  let buffer = "";
  // The buffered tokens, by where they sit in the buffer.
  const marks: TokenMarks = tokenMarks();
  const hasPotential = (text: string) => {
    for (const ch of text) if (shape.firstChars.has(ch)) return true;
    return false;
  };
  const contentBoundary = (): number => {
    const n = buffer.length;
    for (let i = 1; i < n; i++) {
      if (!shape.firstChars.has(buffer[i]!)) continue;
      const remaining = n - i;
      for (const [lit] of shape.literals) {
        const len = Math.min(remaining, lit.length);
        if (buffer.slice(i, i + len) === lit.slice(0, len)) return i;
      }
    }
    return n;
  };
  /** The first `length` characters of the buffer as one piece. */
  const take = (terminal: string, length: number): LexToken => {
    const value = buffer.slice(0, length);
    buffer = buffer.slice(length);
    return { terminal, value, tokenCount: marks.take(length) };
  };
  const drain = (final: boolean): LexToken[] => {
    const tokens: LexToken[] = [];
    while (buffer) {
      if (shape.firstChars.size > 0 && !hasPotential(buffer)) {
        tokens.push(take(CONTENT, buffer.length));
        break;
      }
      let best: [string, string] | undefined;
      const candidates = shape.byFirst.get(buffer[0]!) ?? [];
      for (const [lit, name] of candidates) if (buffer.startsWith(lit) && (!best || lit.length > best[1].length)) best = [name, lit];
      // A complete literal that may still grow into a longer one waits for the next chunk.
      if (shape.prefixes.has(buffer) && !final) {
        if (!best) break;
        const longer = candidates.some(([lit]) => lit.length > best![1].length && lit.startsWith(buffer));
        if (longer) break;
        tokens.push(take(best[0], best[1].length));
        continue;
      }
      if (best) tokens.push(take(best[0], best[1].length));
      else {
        const end = contentBoundary();
        tokens.push(take(CONTENT, end > 0 ? end : 1));
      }
    }
    return tokens;
  };
  return {
    get buffer() {
      return buffer;
    },
    feed(text, tokenTexts = [], tokenCount = 0) {
      // Nothing held and nothing that may start a terminal: one piece with all its tokens.
      if (!buffer && shape.firstChars.size > 0 && !hasPotential(text)) return [{ terminal: CONTENT, value: text, tokenCount: text ? tokenCount : 0 }];
      marks.add(buffer.length, text, tokenTexts, tokenCount);
      buffer += text;
      return drain(false);
    },
    flush() {
      const tokens: LexToken[] = [];
      if (buffer) tokens.push(...drain(true));
      if (buffer) tokens.push(take(CONTENT, buffer.length));
      return tokens;
    },
    reset() {
      buffer = "";
      marks.clear();
    },
    mayStartTerminal: hasPotential,
  };
}
