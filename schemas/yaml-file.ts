/**
 * Validates a YAML file a user writes against a zod schema, with errors that name the file,
 * the line:column and the field, and for an unknown field the nearest allowed one:
 * `experiments/foo.yaml:14:5: spec.rollouts: unknown field "paralelism" (did you mean "parallelism"?)`.
 * Shared by every user-written YAML file (experiments, policy scripts).
 */
import { LineCounter, parseDocument, isMap, isPair, isScalar, isSeq, type Node } from "yaml";
import { z } from "zod";

export type YamlParse<T> = { ok: true; data: T } | { ok: false; problems: string[] };

/**
 * Parses `source` and validates it; `path` only names the file in messages, and
 * `expected` says what the top level must be when it is not a mapping.
 *
 * @example
 * const result = parseYamlAgainst(ExperimentSchema, text, "experiments/a.yaml", "a YAML mapping with apiVersion, kind, metadata and spec");
 * if (!result.ok) throw new ExperimentError(result.problems.join("\n"), result.problems);
 */
export function parseYamlAgainst<S extends z.ZodType>(schema: S, source: string, path: string, expected: string): YamlParse<z.infer<S>> {
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const problems = doc.errors.map((error) => {
      const at = lineCounter.linePos(error.pos[0]);
      return `${path}:${at.line}:${at.col}: YAML syntax error: ${error.message.split("\n")[0]}`;
    });
    return { ok: false, problems };
  }
  const data = doc.toJS() ?? {};
  if (typeof data !== "object" || Array.isArray(data)) return { ok: false, problems: [`${path}:1:1: expected ${expected}`] };
  const result = schema.safeParse(data, { reportInput: true });
  if (result.success) return { ok: true, data: result.data };
  return { ok: false, problems: result.error.issues.flatMap(explainUnion).map((issue) => formatIssue(schema, issue, doc.contents, lineCounter, path)) };
}

/**
 * A value that fits no option of a union: when exactly one option has the value's type
 * (a mapping where the union also allows a string), its own problems are the useful ones.
 */
function explainUnion(issue: Issue): Issue[] {
  if (issue.code !== "invalid_union" || !("errors" in issue)) return [issue];
  const sameType = issue.errors.filter((branch) => !branch.some((inner) => inner.code === "invalid_type" && inner.path.length === 0));
  if (sameType.length !== 1) return [issue];
  return sameType[0]!.flatMap((inner) => explainUnion({ ...inner, path: [...issue.path, ...inner.path] } as Issue));
}

type Issue = z.core.$ZodIssue;
type FieldPath = (string | number)[];

function formatIssue(schema: z.ZodType, issue: Issue, root: unknown, lineCounter: LineCounter, path: string): string {
  const fieldPath = issue.path.map((part) => (typeof part === "symbol" ? String(part) : part));
  if (issue.code === "unrecognized_keys") {
    // One message per issue; point at the first unknown key, name them all.
    const keys = issue.keys;
    const at = keyPosition(root, fieldPath, keys[0] ?? "", lineCounter);
    const where = fieldPath.length ? `${dotted(fieldPath)}: ` : "";
    const allowed = knownKeys(schema, fieldPath);
    const suggestion = keys.length === 1 && allowed.length ? closest(keys[0]!, allowed) : undefined;
    const hint = suggestion ? ` (did you mean "${suggestion}"?)` : allowed.length ? ` (allowed: ${allowed.join(", ")})` : "";
    return `${path}:${at}: ${where}unknown field${keys.length > 1 ? "s" : ""} ${keys.map((k) => `"${k}"`).join(", ")}${hint}`;
  }
  const at = position(nodeAt(root, fieldPath), lineCounter);
  if (issue.code === "invalid_type" && "input" in issue && issue.input === undefined) {
    // The schema's own words when it has them ("expected the file content"), else plain English.
    const message = issue.message.startsWith("Invalid input") ? "required field is missing" : issue.message;
    return `${path}:${at}: ${dotted(fieldPath)}: ${message}`;
  }
  const got = "input" in issue && issue.input !== undefined ? `, got ${describe(issue.input)}` : issue.code === "invalid_type" ? ", but it is missing" : "";
  return `${path}:${at}: ${dotted(fieldPath) || "(document)"}: ${issue.message}${got}`;
}

function dotted(path: FieldPath): string {
  return path.map((part, index) => (typeof part === "number" ? `[${part}]` : index === 0 ? part : `.${part}`)).join("");
}

function describe(value: unknown): string {
  const json = JSON.stringify(value);
  if (json === undefined) return String(value);
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}

/** The YAML node at a path, or the deepest existing ancestor (for missing fields). */
function nodeAt(root: unknown, path: FieldPath): unknown {
  let node = root;
  for (const part of path) {
    let next: unknown;
    if (isMap(node)) next = node.items.find((pair) => isPair(pair) && isScalar(pair.key) && pair.key.value === part)?.value;
    else if (isSeq(node) && typeof part === "number") next = node.items[part];
    if (next === undefined || next === null) break;
    node = next;
  }
  return node;
}

function position(node: unknown, lineCounter: LineCounter): string {
  const range = (node as Node | undefined)?.range;
  if (!range) return "1:1";
  const at = lineCounter.linePos(range[0]);
  return `${at.line}:${at.col}`;
}

function keyPosition(root: unknown, path: FieldPath, key: string, lineCounter: LineCounter): string {
  const node = nodeAt(root, path);
  if (isMap(node)) {
    const pair = node.items.find((item) => isPair(item) && isScalar(item.key) && item.key.value === key);
    if (pair) return position(pair.key, lineCounter);
  }
  return position(node, lineCounter);
}

/** The fields the mapping at `path` accepts, read from the schema itself so they never drift. */
function knownKeys(schema: z.ZodType, path: FieldPath): string[] {
  let current: z.ZodType | undefined = schema;
  for (const part of path) {
    const inner = containerFor(unwrap(current), typeof part === "number" ? "array" : "object");
    if (inner instanceof z.ZodObject) current = inner.shape[part as string] as z.ZodType | undefined;
    else if (inner instanceof z.ZodArray) current = inner.element as z.ZodType;
    else return [];
    if (!current) return [];
  }
  const inner = containerFor(unwrap(current), "object");
  return inner instanceof z.ZodObject ? Object.keys(inner.shape) : [];
}

/** For a union, the option that is an object (or array) mapping; otherwise the schema itself. */
function containerFor(schema: z.ZodType, kind: "object" | "array"): z.ZodType {
  if (!(schema instanceof z.ZodUnion)) return schema;
  const wanted = kind === "object" ? z.ZodObject : z.ZodArray;
  const option = schema.options.map((o) => unwrap(o as z.ZodType)).find((o) => o instanceof wanted);
  return option ?? schema;
}

/** The allowed key nearest to a typo (edit distance ≤ 2, or a case-only difference). */
function closest(key: string, allowed: string[]): string | undefined {
  let best: { name: string; d: number } | undefined;
  for (const name of allowed) {
    const d = name.toLowerCase() === key.toLowerCase() ? 0 : editDistance(key, name);
    if (d <= 2 && (!best || d < best.d)) best = { name, d };
  }
  return best?.name;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}

function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (let i = 0; i < 10; i++) {
    if (current instanceof z.ZodDefault || current instanceof z.ZodOptional) current = current.unwrap() as z.ZodType;
    else if (current instanceof z.ZodPipe) current = current.in as z.ZodType;
    else break;
  }
  return current;
}
