/**
 * The lexer's token counts, expected values from vLLM 0.33.0's own `IncrementalLexer` on the
 * same feeds (`vllm/parser/engine/incremental_lexer.py`): a chunk's tokens sit where their text
 * starts in it, the rest at its first character; a piece holds the tokens that sit in it.
 */
import { describe, expect, test } from "bun:test";
import { CONTENT, incrementalLexer, lexerShape, type LexToken } from "./lexer.ts";
import { tokenMarks } from "./token-counts.ts";

const shape = lexerShape([
  ["<function=", "FUNC_PREFIX"],
  [">", "CLOSE_ANGLE"],
  ["<parameter=", "PARAM_START"],
]);
const show = (tokens: LexToken[]) => tokens.map((t) => [t.terminal, t.value, t.tokenCount]);

describe("token counts through the lexer", () => {
  test("each piece holds the tokens whose text starts in it", () => {
    const lexer = incrementalLexer(shape);
    expect(show(lexer.feed("ab<function=x>cd", ["ab", "<", "function", "=x", ">", "cd"], 6))).toEqual([
      [CONTENT, "ab", 1],
      ["FUNC_PREFIX", "<function=", 3],
      [CONTENT, "x", 0],
      ["CLOSE_ANGLE", ">", 1],
      [CONTENT, "cd", 1],
    ]);
  });

  test("a held prefix keeps its tokens until the terminal or content it becomes", () => {
    const lexer = incrementalLexer(shape);
    expect(show(lexer.feed("ab<fun", ["ab", "<fun"], 2))).toEqual([[CONTENT, "ab", 1]]);
    expect(show(lexer.feed("ction=x", ["ction=x"], 1))).toEqual([
      ["FUNC_PREFIX", "<function=", 2],
      [CONTENT, "x", 0],
    ]);
    expect(show(lexer.feed("<para", ["<para"], 1))).toEqual([]);
    expect(show(lexer.flush())).toEqual([[CONTENT, "<para", 1]]);
  });

  test("tokens whose text is not found sit at the chunk's start; an empty chunk holds none", () => {
    const lexer = incrementalLexer(shape);
    expect(show(lexer.feed("x<y", ["zz", "<"], 4))).toEqual([[CONTENT, "x<y", 4]]);
    expect(show(lexer.feed("", [], 3))).toEqual([[CONTENT, "", 0]]);
    expect(show(lexer.feed("plain", ["pl", "ain"], 2))).toEqual([[CONTENT, "plain", 2]]);
  });

  test("reset drops the held tokens", () => {
    const lexer = incrementalLexer(shape);
    lexer.feed("<fun", ["<fun"], 1);
    lexer.reset();
    expect(show(lexer.feed("<function=", ["<function="], 1))).toEqual([["FUNC_PREFIX", "<function=", 1]]);
  });
});

describe("tokenMarks", () => {
  test("taking pieces takes the tokens in them, in order, across appended chunks", () => {
    const marks = tokenMarks();
    marks.add(0, "ab<c", ["ab", "<", "c"], 3);
    expect(marks.take(2)).toBe(1);
    marks.add(2, "de", ["de"], 1);
    expect([marks.take(1), marks.take(1), marks.take(2)]).toEqual([1, 1, 1]);
    expect(marks.take(5)).toBe(0);
  });

  test("missing tokens join a token found at the chunk's start", () => {
    const marks = tokenMarks();
    marks.add(0, "ab", ["a", "b"], 5);
    expect([marks.take(1), marks.take(1)]).toEqual([4, 1]);
  });
});
