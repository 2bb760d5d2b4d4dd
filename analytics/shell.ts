/**
 * Shell scripts as the commands they run, from a real parser (tree-sitter's bash grammar,
 * `tree-sitter-bash`'s WebAssembly build through `web-tree-sitter`), not regular expressions:
 * `python3 -c 'print(2>1)'` has no redirect, `cat <<EOF > a.py` writes a.py, and
 * `(cd app && make test) > log` captures a check's output. The parser loads once per process
 * when this module is first imported (about 0.2 s); a parse then takes well under a millisecond.
 */
import { createRequire } from "node:module";
import { Language, Parser, type Node } from "web-tree-sitter";

await Parser.init();
const bash = await Language.load(createRequire(import.meta.url).resolve("tree-sitter-bash/tree-sitter-bash.wasm"));
const parser = new Parser();
parser.setLanguage(bash);

/** A redirect as written: the operator (`>`, `>>`, `&>`, `<`, `<<`, ...) and its word. */
export type Redirect = { op: string; target: string; heredoc?: string };

/** One simple command: its words (assignments and expansions kept as text) and its redirects. */
export type SimpleCommand = { argv: string[]; redirects: Redirect[] };

export type ParsedScript = { commands: SimpleCommand[]; error?: string };

/** The text a word stands for: quotes removed, expansions kept as written. */
function wordText(node: Node | null): string {
  if (!node) return "";
  switch (node.type) {
    case "raw_string":
      return node.text.slice(1, -1);
    case "string":
      return node.text.slice(1, -1);
    case "ansi_c_string":
      return node.text.slice(2, -1);
    case "concatenation":
      return node.children.map((child) => (child ? wordText(child) : "")).join("");
    case "command_substitution":
      return "$(…)";
    default:
      return node.text;
  }
}

function redirectsOf(node: Node): Redirect[] {
  switch (node.type) {
    case "file_redirect": {
      const op = node.children.find((child) => child && !child.isNamed)?.type ?? "?";
      return [{ op, target: wordText(node.childForFieldName("destination")) }];
    }
    case "heredoc_redirect": {
      const op = node.children.find((child) => child && !child.isNamed)?.type ?? "<<";
      const start = node.children.find((child) => child?.type === "heredoc_start");
      const body = node.children.find((child) => child?.type === "heredoc_body");
      // `cat <<EOF > a.py`: the grammar puts the file redirect inside the heredoc's node.
      const nested = node.namedChildren.filter((child): child is Node => child !== null && child.type === "file_redirect").flatMap(redirectsOf);
      return [{ op, target: start?.text ?? "", heredoc: body?.text ?? "" }, ...nested];
    }
    case "herestring_redirect":
      return [{ op: "<<<", target: wordText(node.namedChildren[0] ?? null) }];
    default:
      return [];
  }
}

const isRedirect = (node: Node) => node.type === "file_redirect" || node.type === "heredoc_redirect" || node.type === "herestring_redirect";

function visit(node: Node, inherited: Redirect[], out: SimpleCommand[]): void {
  if (node.type === "redirected_statement") {
    const own = node.children.filter((child): child is Node => child !== null && isRedirect(child)).flatMap(redirectsOf);
    const body = node.childForFieldName("body");
    if (body) visit(body, [...inherited, ...own], out);
    else if (own.length) out.push({ argv: [], redirects: [...inherited, ...own] });
    return;
  }
  if (node.type === "command") {
    const argv: string[] = [];
    const redirects = [...inherited];
    for (const child of node.namedChildren) {
      if (!child) continue;
      if (child.type === "variable_assignment") argv.push(`${child.childForFieldName("name")?.text ?? ""}=${wordText(child.childForFieldName("value"))}`);
      else if (child.type === "command_name") argv.push(wordText(child.namedChildren[0] ?? child));
      else if (isRedirect(child)) redirects.push(...redirectsOf(child));
      else argv.push(wordText(child));
    }
    out.push({ argv, redirects });
    // Commands inside `$(…)` in the words run too, without the outer redirects.
    for (const child of node.namedChildren) if (child && child.type !== "command_name") visitSubstitutions(child, out);
    return;
  }
  for (const child of node.namedChildren) if (child) visit(child, inherited, out);
}

function visitSubstitutions(node: Node, out: SimpleCommand[]): void {
  if (node.type === "command_substitution" || node.type === "process_substitution") {
    for (const child of node.namedChildren) if (child) visit(child, [], out);
    return;
  }
  for (const child of node.namedChildren) if (child) visitSubstitutions(child, out);
}

function firstError(node: Node): Node | null {
  if (node.type === "ERROR" || node.isMissing) return node;
  for (const child of node.children) {
    if (child?.hasError) {
      const found = firstError(child);
      if (found) return found;
    }
  }
  return null;
}

/**
 * The simple commands of a script, in order (nested ones included), each with the redirects that
 * apply to it. A script with a syntax error gives what could be read and the error's position.
 *
 * @example
 * parseShell("pytest -q > out.txt 2>&1").commands
 * // [{ argv: ["pytest", "-q"], redirects: [{ op: ">", target: "out.txt" }, { op: ">&", target: "1" }] }]
 */
export function parseShell(script: string): ParsedScript {
  const tree = parser.parse(script);
  if (!tree) return { commands: [], error: "the bash parser returned no tree" };
  try {
    const commands: SimpleCommand[] = [];
    visit(tree.rootNode, [], commands);
    if (!tree.rootNode.hasError) return { commands };
    const at = firstError(tree.rootNode);
    const where = at ? `line ${at.startPosition.row + 1}, column ${at.startPosition.column + 1}` : "somewhere";
    return { commands, error: `not valid bash (${at?.isMissing ? `missing ${at.type}` : "unexpected text"} at ${where})` };
  } finally {
    tree.delete();
  }
}
