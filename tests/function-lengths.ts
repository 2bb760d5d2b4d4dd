/**
 * The length of every function in a TypeScript file, measured on the source text: the
 * architecture test fails on one over the limit (issue 30). TypeScript 7 has no JS API and the
 * project depends on no parser, so this is a small tokenizer that knows strings, template
 * literals (with nested substitutions), comments and regular-expression literals, and matches
 * brackets; a function is found at its body's `{` (or an arrow's `(` expression body):
 *
 * - after `=>`: an arrow function;
 * - after `)` whose `(` is no `if`/`for`/`while`/`switch`/`catch`/`with`: a declaration, a
 *   function expression or a method (constructors, getters and computed names included);
 * - after a return-type annotation `): Type {` (object, generic and union types skipped).
 *
 * A function's length counts the lines from its head (name, `function` or parameters) to its
 * closing bracket; a nested function is counted inside its parent and on its own.
 */

/** One function found in a file. */
export type FunctionSpan = { name: string; line: number; lines: number };

type Token = { kind: "id" | "num" | "str" | "regex" | "punct"; v: string; line: number };

const REGEX_AFTER_WORD = new Set(["return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else", "yield", "await"]);
const CONTROL = new Set(["if", "for", "while", "switch", "catch", "with", "case", "return"]);
const TYPE_WORDS = new Set(["keyof", "typeof", "readonly", "unique", "infer", "is", "asserts", "new"]);
// Multi-character punctuators that matter to the scan; `>` stays single so `Array<Array<T>>` balances.
const PUNCT = ["...", "===", "!==", "=>", "==", "!=", "<=", "&&", "||", "??", "?.", "++", "--"];

const isIdStart = (c: string) => /[A-Za-z_$\u0080-\uffff]/.test(c);
const isIdPart = (c: string) => /[A-Za-z0-9_$\u0080-\uffff]/.test(c);

/** Whether a `/` after `prev` starts a regular expression (otherwise it divides). */
function regexAllowed(prev: Token | undefined, beforePrev: Token | undefined): boolean {
  if (!prev) return true;
  // `x! / 2`: a non-null assertion after an operand, then a division.
  if (prev.kind === "punct" && prev.v === "!" && beforePrev && (beforePrev.kind === "id" || (beforePrev.kind === "punct" && (beforePrev.v === ")" || beforePrev.v === "]")))) return REGEX_AFTER_WORD.has(beforePrev.v);
  if (prev.kind === "id") return REGEX_AFTER_WORD.has(prev.v);
  if (prev.kind === "num" || prev.kind === "str" || prev.kind === "regex") return false;
  return !(prev.v === ")" || prev.v === "]" || prev.v === "}");
}

/** The file's tokens, without comments or whitespace; a quoted string is a `str` token of its text, a template literal's text one of a backtick. */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  // What each open `{` or `${` is, so a `}` knows whether it resumes a template literal.
  const braces: ("{" | "${")[] = [];
  let i = 0;
  let line = 1;
  const push = (kind: Token["kind"], v: string, at: number) => tokens.push({ kind, v, line: at });
  const advance = (to: number) => {
    for (let k = i; k < to; k++) if (text.charCodeAt(k) === 10) line++;
    i = to;
  };
  /** Scans template text from `i` (just after a backtick or a substitution's `}`). */
  const template = () => {
    let k = i;
    while (k < text.length) {
      const c = text[k]!;
      if (c === "\\") k += 2;
      else if (c === "`") {
        advance(k + 1);
        // At the line it ends on: an arrow whose body ends with a multi-line template ends there.
        push("str", "`", line);
        return;
      } else if (c === "$" && text[k + 1] === "{") {
        advance(k + 2);
        push("str", "`", line);
        push("punct", "${", line);
        braces.push("${");
        return;
      } else k++;
    }
    advance(text.length);
  };
  if (text.startsWith("#!")) advance(text.indexOf("\n") < 0 ? text.length : text.indexOf("\n"));
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === "\n" || c === " " || c === "\t" || c === "\r") advance(i + 1);
    else if (c === "/" && next === "/") advance(text.indexOf("\n", i) < 0 ? text.length : text.indexOf("\n", i));
    else if (c === "/" && next === "*") advance(text.indexOf("*/", i + 2) < 0 ? text.length : text.indexOf("*/", i + 2) + 2);
    else if (c === '"' || c === "'") {
      let k = i + 1;
      while (k < text.length && text[k] !== c && text[k] !== "\n") k += text[k] === "\\" ? 2 : 1;
      push("str", text.slice(i + 1, k), line);
      advance(k + 1);
    } else if (c === "`") {
      advance(i + 1);
      template();
    } else if (c === "/" && regexAllowed(tokens[tokens.length - 1], tokens[tokens.length - 2])) {
      let k = i + 1;
      let inClass = false;
      while (k < text.length && text[k] !== "\n") {
        const r = text[k]!;
        if (r === "\\") k++;
        else if (r === "[") inClass = true;
        else if (r === "]") inClass = false;
        else if (r === "/" && !inClass) break;
        k++;
      }
      k++;
      while (k < text.length && isIdPart(text[k]!)) k++;
      push("regex", "/", line);
      advance(k);
    } else if (isIdStart(c)) {
      let k = i + 1;
      while (k < text.length && isIdPart(text[k]!)) k++;
      push("id", text.slice(i, k), line);
      advance(k);
    } else if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(next ?? ""))) {
      let k = i + 1;
      while (k < text.length && /[0-9A-Za-z_.]/.test(text[k]!)) k++;
      push("num", text.slice(i, k), line);
      advance(k);
    } else if (c === "{") {
      braces.push("{");
      push("punct", "{", line);
      advance(i + 1);
    } else if (c === "}") {
      const opened = braces.pop();
      push("punct", "}", line);
      advance(i + 1);
      if (opened === "${") template();
    } else {
      const p = PUNCT.find((q) => text.startsWith(q, i)) ?? c;
      push("punct", p, line);
      advance(i + p.length);
    }
  }
  return tokens;
}

const OPEN: Record<string, string> = { "(": ")", "[": "]", "{": "}", "${": "}" };

/** For each bracket token, the index of its partner (open ↔ close); -1 elsewhere. */
function matchBrackets(tokens: Token[]): number[] {
  const match = new Array<number>(tokens.length).fill(-1);
  const stack: number[] = [];
  tokens.forEach((t, k) => {
    if (t.kind !== "punct") return;
    if (t.v in OPEN) stack.push(k);
    else if (t.v === ")" || t.v === "]" || t.v === "}") {
      const open = stack.pop();
      if (open === undefined) return;
      match[open] = k;
      match[k] = open;
    }
  });
  return match;
}

/**
 * Walks back over a type annotation ending at `end` (inclusive) and returns the index of the
 * `:` that starts it, or -1 when the tokens before `end` are no type.
 */
function typeStart(tokens: Token[], match: number[], end: number): number {
  let k = end;
  let angle = 0;
  let seen = 0;
  // Two operands side by side (`Foo Bar`) are no type, except after a type keyword (`keyof T`).
  let operandRight = false;
  while (k >= 0) {
    const t = tokens[k]!;
    const closing = t.kind === "punct" && (t.v === ")" || t.v === "]" || t.v === "}");
    const operand = closing || t.kind === "id" || t.kind === "str" || t.kind === "num";
    if (angle === 0 && operand && operandRight && !TYPE_WORDS.has(t.v)) return -1;
    // `T[]` and `T["k"]`: a bracket group after an operand is a suffix, not an operand.
    if (angle === 0) operandRight = operand && t.v !== "]" && !TYPE_WORDS.has(t.v);
    if (closing) {
      if (match[k]! < 0) return -1;
      k = match[k]! - 1;
      seen++;
      continue;
    }
    if (t.kind === "punct" && t.v === ">") angle++;
    else if (t.kind === "punct" && t.v === "<") angle--;
    else if (t.kind === "punct" && t.v === ":" && angle === 0) return seen > 0 ? k : -1;
    else if (t.kind === "punct" && angle === 0 && ![".", "|", "&", "?", "=>", "-"].includes(t.v)) return -1;
    else if (t.kind === "punct" && angle > 0 && [";", "=", "{", "(", "["].includes(t.v)) return -1;
    else if (t.kind === "regex") return -1;
    seen++;
    k--;
  }
  return -1;
}

/** The index of the `(` of a parameter list that ends at `close` with a `)`, skipping back over generics `<T>`. */
function beforeParams(tokens: Token[], match: number[], close: number): number {
  let k = match[close]! - 1;
  if (tokens[k]?.v === ">") {
    let depth = 0;
    for (; k >= 0; k--) {
      if (tokens[k]!.v === ">") depth++;
      else if (tokens[k]!.v === "<" && --depth === 0) break;
    }
    k--;
  }
  return k;
}

/** The name a value at `k` (the token before it) is given: `name =`, `name:`, or the call it is passed to. */
function contextName(tokens: Token[], match: number[], k: number): string {
  while (k >= 0 && (tokens[k]!.v === "async" || tokens[k]!.v === "function" || tokens[k]!.v === "*")) k--;
  const t = tokens[k];
  if (!t) return "(anonymous)";
  if (t.v === "=" || t.v === ":" || t.v === "?") {
    // `const name: Type = …`: the name is the word after const/let/var, within a few tokens.
    for (let j = k - 1; j >= Math.max(0, k - 40); j--) {
      const w = tokens[j]!;
      if (w.kind === "punct" && (w.v === ")" || w.v === "]" || w.v === "}") && match[j]! >= 0) j = match[j]!;
      else if (w.kind === "id" && ["const", "let", "var"].includes(tokens[j - 1]?.v ?? "")) return w.v;
      // `name: Type = …` (a typed field or variable): the name before the annotation.
      else if (t.v === "=" && w.v === ":" && tokens[j - 1]?.kind === "id") return tokens[j - 1]!.v;
      else if (w.kind === "punct" && [";", "{", "(", ","].includes(w.v)) break;
    }
    const name = tokens[k - 1];
    return name && (name.kind === "id" || name.kind === "str") ? name.v : "(anonymous)";
  }
  if (t.v === "(" || t.v === ",") {
    let j = k;
    while (j >= 0 && tokens[j]!.v !== "(") j = tokens[j]!.v === ")" || tokens[j]!.v === "]" || tokens[j]!.v === "}" ? match[j]! - 1 : j - 1;
    const callee = tokens[j - 1];
    return callee?.kind === "id" ? `(callback to ${callee.v})` : "(anonymous)";
  }
  return "(anonymous)";
}

/** The name and first line of a function whose parameter list ends at `close`. */
function functionHead(tokens: Token[], match: number[], close: number): { name: string; line: number } | undefined {
  const k = beforeParams(tokens, match, close);
  const t = tokens[k];
  if (!t) return undefined;
  if (t.kind === "id" && CONTROL.has(t.v)) return undefined;
  if (t.v === "await" && tokens[k - 1]?.v === "for") return undefined;
  if (t.v === "function") return { name: contextName(tokens, match, k), line: t.line };
  if (t.v === "*" && tokens[k - 1]?.v === "function") return { name: contextName(tokens, match, k - 1), line: t.line };
  if (t.kind === "id" || t.kind === "str") {
    const before = tokens[k - 1];
    return { name: before?.v === "function" || before?.v === "*" ? t.v : t.v, line: t.line };
  }
  if (t.v === "]" && match[k]! >= 0) return { name: "[computed]", line: tokens[match[k]!]!.line };
  return undefined;
}

const PREFIX_WORDS = new Set(["await", "typeof", "new", "yield", "delete", "in", "of", "instanceof", "return", "case"]);
const isOperandEnd = (t: Token) =>
  t.kind === "str" || t.kind === "num" || (t.kind === "id" && !PREFIX_WORDS.has(t.v)) || (t.kind === "punct" && (t.v === ")" || t.v === "]" || t.v === "}"));

/** The last token of an arrow's expression body starting at `start`: up to a `,` `;` or closing bracket outside it. */
function expressionEnd(tokens: Token[], match: number[], start: number): number {
  let k = start;
  let conditionals = 0;
  while (k < tokens.length) {
    const t = tokens[k]!;
    // `cond ? (v) => a : b`: the `:` of an enclosing conditional ends the body.
    if (t.kind === "punct" && t.v === "?") conditionals++;
    if (t.kind === "punct" && t.v === ":" && conditionals-- === 0) return k - 1;
    if (t.kind === "punct" && (t.v === "," || t.v === ";" || t.v === ")" || t.v === "]" || t.v === "}")) return k - 1;
    // `x {` is no expression: the arrow was a function type (`): (p: P) => void {`) and `{` opens a body.
    if (k > start && t.v === "{" && isOperandEnd(tokens[k - 1]!)) return k - 1;
    k = t.kind === "punct" && t.v in OPEN && match[k]! >= 0 ? match[k]! + 1 : k + 1;
  }
  return tokens.length - 1;
}

/** Whether parameters after token `k` are a function type's: `): (p) => T` (a return type) or `type F = (p) => T`. */
function isFunctionType(tokens: Token[], match: number[], k: number): boolean {
  const t = tokens[k];
  if (t?.v === ":" && tokens[k - 1]?.v === "?") return true;
  // `Record<K, (p: P) => T>`: parameters inside a type's angle brackets.
  if (t?.v === "," || t?.v === "<") {
    let angle = 0;
    for (let j = k; j >= 0; j--) {
      const w = tokens[j]!;
      if (w.kind !== "punct") continue;
      if ((w.v === ")" || w.v === "]" || w.v === "}") && match[j]! >= 0) j = match[j]!;
      else if (w.v === ">") angle++;
      else if (w.v === "<" && angle-- === 0) return true;
      else if (["(", "[", "{", ";", "=", "=>"].includes(w.v)) return false;
    }
    return false;
  }
  if (t?.v === ":" && tokens[k - 1]?.v === ")") {
    // `cond ? f(x) : (y) => …` is a conditional's branch, not a return type.
    for (let j = k - 1; j >= 0; j--) {
      const w = tokens[j]!;
      if (w.kind === "punct" && (w.v === ")" || w.v === "]" || w.v === "}") && match[j]! >= 0) j = match[j]!;
      else if (w.kind === "punct" && w.v === "?") return false;
      else if ((w.kind === "punct" && [";", "{", "(", "[", ",", "="].includes(w.v)) || w.v === "return") break;
    }
    return true;
  }
  if (t?.v !== "=") return false;
  let j = k - 1;
  if (tokens[j]?.v === ">") while (j > 0 && tokens[j]!.v !== "<") j--;
  return tokens[j - 2]?.v === "type" || tokens[j - 1]?.v === "type";
}

/** Every function of a file's text, in source order. */
export function functionsOf(text: string): FunctionSpan[] {
  const tokens = tokenize(text);
  const match = matchBrackets(tokens);
  const found: FunctionSpan[] = [];
  const add = (name: string, line: number, body: number) => {
    const end = tokens[body]!.v === "{" ? match[body]! : expressionEnd(tokens, match, body);
    if (end < 0) return;
    found.push({ name, line, lines: tokens[end]!.line - line + 1 });
  };
  tokens.forEach((t, i) => {
    if (t.kind !== "punct") return;
    if (t.v === "=>") {
      const body = i + 1;
      if (!tokens[body]) return;
      // The parameters: `x =>`, `(…) =>`, or `(…): Type =>`.
      let start = i - 1;
      const colon = tokens[start]?.v === ")" ? -1 : typeStart(tokens, match, start);
      if (colon > 0 && tokens[colon - 1]?.v === ")") start = colon - 1;
      let head = start;
      if (tokens[start]?.v === ")") head = beforeParams(tokens, match, start) + 1;
      const context = tokens[head - 1]?.v === "async" ? head - 2 : head - 1;
      if (isFunctionType(tokens, match, context)) return;
      add(contextName(tokens, match, context), tokens[head]?.line ?? t.line, body);
      return;
    }
    if (t.v !== "{") return;
    const prev = tokens[i - 1];
    if (!prev) return;
    if (prev.kind === "punct" && prev.v === ")") {
      const head = functionHead(tokens, match, i - 1);
      if (head) add(head.name, head.line, i);
      return;
    }
    // `): Type {`: a return-type annotation between the parameters and the body.
    if (prev.kind === "punct" && (prev.v === "=>" || prev.v === ":")) return;
    const colon = typeStart(tokens, match, i - 1);
    if (colon > 0 && tokens[colon - 1]?.v === ")") {
      const head = functionHead(tokens, match, colon - 1);
      if (head) add(head.name, head.line, i);
    }
  });
  return found.sort((a, b) => a.line - b.line);
}
