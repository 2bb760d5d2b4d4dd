/**
 * Where a lexer's buffered tokens sit, for vLLM 0.33.0's reasoning-token count
 * (`IncrementalLexer._char_token_counts` / `_pop_token_count` in
 * `vllm/parser/engine/incremental_lexer.py`): a chunk's tokens each sit at the first character
 * of their text in the chunk, found left to right; tokens whose text is empty or not found sit
 * at the chunk's first character; a chunk with no text holds none. Taking the buffer's first
 * characters takes the tokens that sit there.
 *
 * vLLM keeps one count per buffered character; here only the characters that hold tokens are
 * kept (a few per streamed delta), so taking a piece costs the tokens in it, not its length.
 */

export interface TokenMarks {
  /** Places the tokens of `text`, appended at `offset` (the buffer's length before it). */
  add(offset: number, text: string, tokenTexts: readonly string[], tokenCount: number): void;
  /** The tokens in the buffer's first `length` characters, taken off with them. */
  take(length: number): number;
  clear(): void;
}

/**
 * @example
 * const marks = tokenMarks();
 * marks.add(0, "ab<c", ["ab", "<", "c"], 3);
 * marks.take(2); // 1 ("ab")
 * marks.take(2); // 2 ("<", "c")
 */
export function tokenMarks(): TokenMarks {
  // Positions (from `base`: characters taken since the marks were last empty) and counts, in order.
  let at: number[] = [];
  let counts: number[] = [];
  let next = 0;
  let base = 0;
  const clear = () => {
    at = [];
    counts = [];
    next = 0;
    base = 0;
  };
  return {
    add(offset, text, tokenTexts, tokenCount) {
      if (!text) return;
      const start = base + offset;
      const first = at.length;
      let from = 0;
      let assigned = 0;
      for (const tokenText of tokenTexts) {
        if (!tokenText) continue;
        const found = text.indexOf(tokenText, from);
        if (found < 0) continue;
        assigned++;
        from = found + tokenText.length;
        at.push(start + found);
        counts.push(1);
      }
      const missing = tokenCount - assigned;
      if (missing <= 0) return;
      if (at.length > first && at[first] === start) counts[first]! += missing;
      else {
        at.splice(first, 0, start);
        counts.splice(first, 0, missing);
      }
    },
    take(length) {
      const limit = base + length;
      let sum = 0;
      while (next < at.length && at[next]! < limit) sum += counts[next++]!;
      if (next === at.length) clear();
      else base = limit;
      return sum;
    },
    clear,
  };
}
