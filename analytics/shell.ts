/**
 * Shell scripts as the commands they run: a real parser (mvdan/sh's, through `mvdan-sh`), not
 * regular expressions, so that `python3 -c 'print(2>1)'` has no redirect, `cat <<EOF > a.py`
 * writes a.py, and `(cd app && make test) > log` captures a check's output.
 */
// @ts-expect-error mvdan-sh ships no types (a GopherJS build of mvdan.cc/sh/v3/syntax).
import mvdanSh from "mvdan-sh";

type ShNode = { [key: string]: unknown };
type Syntax = {
  NewParser(): { Parse(src: string, name: string): ShNode };
  Walk(node: unknown, visit: (node: ShNode | null) => boolean): void;
  NodeType(node: unknown): string;
};
const syntax = (mvdanSh as { syntax: Syntax }).syntax;
const parser = syntax.NewParser();

/** A redirect as written: the operator (`>`, `>>`, `&>`, `<`, `<<`, ...) and its word. */
export type Redirect = { op: string; target: string; heredoc?: string };

/** One simple command: its words (assignments and expansions kept as text) and its redirects. */
export type SimpleCommand = { argv: string[]; redirects: Redirect[] };

export type ParsedScript = { commands: SimpleCommand[]; error?: string };

// Operator token numbers differ between mvdan/sh versions: learn them from the parser itself.
const redirectOps: Map<number, string> = (() => {
  const ops = new Map<number, string>();
  for (const op of [">", ">>", "<", "<>", "<&", ">&", ">|", "<<", "<<-", "<<<", "&>", "&>>"]) {
    const source = op.startsWith("<<") && op !== "<<<" ? `a ${op}E\nE\n` : `a ${op} b`;
    syntax.Walk(parser.Parse(source, "probe"), (node) => {
      if (node && syntax.NodeType(node) === "Redirect") ops.set(node.Op as number, op);
      return true;
    });
  }
  return ops;
})();

function partsText(parts: ShNode[]): string {
  return parts
    .map((part) => {
      switch (syntax.NodeType(part)) {
        case "Lit":
        case "SglQuoted":
          return String(part.Value ?? "");
        case "DblQuoted":
          return partsText((part.Parts as ShNode[]) ?? []);
        case "ParamExp":
          return `$${String((part.Param as ShNode | null)?.Value ?? "")}`;
        case "CmdSubst":
          return "$(…)";
        case "ArithmExp":
          return "$((…))";
        case "ProcSubst":
          return "<(…)";
        default:
          return "…";
      }
    })
    .join("");
}

function wordText(word: unknown): string {
  if (!word || typeof word !== "object") return "";
  return partsText(((word as ShNode).Parts as ShNode[]) ?? []);
}

function redirectOf(node: ShNode): Redirect {
  const op = redirectOps.get(node.Op as number) ?? "?";
  const redirect: Redirect = { op, target: wordText(node.Word) };
  if (node.Hdoc) redirect.heredoc = wordText(node.Hdoc);
  return redirect;
}

function visitStatement(stmt: ShNode, inherited: Redirect[], out: SimpleCommand[]): void {
  const redirects = [...inherited, ...((stmt.Redirs as ShNode[]) ?? []).map(redirectOf)];
  const cmd = stmt.Cmd as ShNode | null;
  const isCall = cmd !== null && syntax.NodeType(cmd) === "CallExpr";
  if (isCall) {
    const assigns = ((cmd.Assigns as ShNode[]) ?? []).map((a) => `${String((a.Name as ShNode | null)?.Value ?? "")}=${wordText(a.Value)}`);
    out.push({ argv: [...assigns, ...((cmd.Args as ShNode[]) ?? []).map(wordText)], redirects });
  }
  let nested = 0;
  if (cmd) {
    // Statements inside compound commands inherit the redirects (`(…) > log`); those inside a
    // command substitution in a call's words do not.
    syntax.Walk(cmd, (node) => {
      if (!node || node === cmd) return true;
      if (syntax.NodeType(node) === "Stmt") {
        nested++;
        visitStatement(node, isCall ? [] : redirects, out);
        return false;
      }
      return true;
    });
  }
  if (!isCall && nested === 0 && redirects.length > 0) out.push({ argv: [], redirects });
}

/**
 * The simple commands of a script, in order (nested ones included), each with the redirects that
 * apply to it. A script the parser rejects gives no commands and the parser's message.
 *
 * @example
 * parseShell("pytest -q > out.txt 2>&1").commands
 * // [{ argv: ["pytest", "-q"], redirects: [{ op: ">", target: "out.txt" }, { op: ">&", target: "1" }] }]
 */
export function parseShell(script: string): ParsedScript {
  let file: ShNode;
  try {
    file = parser.Parse(script, "command");
  } catch (error) {
    const message = typeof (error as { Error?: () => string }).Error === "function" ? (error as { Error: () => string }).Error() : String(error);
    return { commands: [], error: message };
  }
  const commands: SimpleCommand[] = [];
  for (const stmt of (file.Stmts as ShNode[]) ?? []) visitStatement(stmt, [], commands);
  return { commands };
}
