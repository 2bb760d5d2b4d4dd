/**
 * The policy simulator's script file (YAML): which task prompts it recognises and the
 * sequence of actions ("intents") it plays for each, with a failure rate so that runs have
 * real successes and failures. The simulator maps each intent onto whatever tool the
 * harness offers (see proxy/simulator/intents.ts).
 *
 * Errors name the file, line:column and field, e.g.
 * `examples/policies/quickstart.yaml:14:9: tasks[0].steps[1].write.path: expected a file path`.
 */
import { readFileSync } from "node:fs";
import { LineCounter, parseDocument, isMap, isPair, isScalar, isSeq } from "yaml";
import { z } from "zod";

/** A problem with a policy script; `message` lists every problem as `file:line:col: field: what`. */
export class PolicyScriptError extends Error {
  override name = "PolicyScriptError";
  constructor(
    message: string,
    readonly problems: string[] = [message],
  ) {
    super(message);
  }
}

const text = (what: string) => z.string({ error: `expected ${what}` }).min(1, { error: `expected ${what}` });

/** A regex that compiles; kept as source + flags so the parsed script stays plain data. */
const RegexMatcherSchema = z
  .strictObject({
    regex: text("a regular expression"),
    flags: z.string().regex(/^[imsu]*$/, { error: "expected regex flags from i, m, s, u" }).default("i"),
  })
  .superRefine((value, ctx) => {
    try {
      new RegExp(value.regex, value.flags);
    } catch (error) {
      ctx.addIssue({ code: "custom", path: ["regex"], message: `invalid regular expression: ${(error as Error).message}` });
    }
  });

/** A plain string matches as a case-insensitive substring of a user message. */
const MatcherSchema = z.union([text("a substring of the task prompt"), z.strictObject({ contains: text("a substring") }), RegexMatcherSchema], {
  error: 'expected a substring, {contains: "..."} or {regex: "...", flags?: "i"}',
});
export type PromptMatcher = z.infer<typeof MatcherSchema>;

const INTENT_KEYS = ["bash", "write", "read", "finish"] as const;

/**
 * One assistant turn. Exactly one action: `bash` (run a command), `write` (create/overwrite
 * a file), `read` (show a file), `finish` (final answer; ends the rollout) — or `say` alone
 * (a text-only reply). `say` beside an action is the text the model writes before its tool
 * call; `think` is its reasoning when thinking is on.
 */
export const PolicyStepSchema = z
  .strictObject({
    bash: text("a shell command").optional(),
    write: z
      .strictObject({
        path: text("a file path"),
        content: z.string({ error: "expected the file content (a string)" }),
      })
      .optional(),
    read: text("a file path").optional(),
    finish: z.string({ error: "expected the final answer (a string)" }).optional(),
    say: z.string({ error: "expected text" }).optional(),
    think: z.string({ error: "expected reasoning text" }).optional(),
  })
  .superRefine((step, ctx) => {
    const actions = INTENT_KEYS.filter((key) => step[key] !== undefined);
    if (actions.length > 1) {
      ctx.addIssue({ code: "custom", path: [actions[1]!], message: `a step has one action; this one has ${actions.join(" and ")} (split it into two steps)` });
    }
    if (actions.length === 0 && step.say === undefined) {
      ctx.addIssue({ code: "custom", path: [], message: "a step needs one of bash, write, read, finish or say" });
    }
  });
export type PolicyStep = z.infer<typeof PolicyStepSchema>;

export const TaskScriptSchema = z.strictObject({
  name: text("a task name"),
  /** Matched against each user message's text; a list matches when any entry does. */
  match: z.union([MatcherSchema, z.array(MatcherSchema).min(1, { error: "expected at least one matcher" })]),
  /** Chance (0..1) that a conversation plays the failing variant; overrides the script's. */
  failure_rate: z.number({ error: "expected a number from 0 to 1" }).min(0, { error: "expected a number from 0 to 1" }).max(1, { error: "expected a number from 0 to 1" }).optional(),
  thinking: z.boolean({ error: "expected true or false" }).optional(),
  steps: z.array(PolicyStepSchema, { error: "expected a list of steps" }).min(1, { error: "expected at least one step" }),
  /** The failing variant; without it one step is derived to fail (wrong content, or skipped). */
  failing: z.array(PolicyStepSchema, { error: "expected a list of steps" }).min(1, { error: "expected at least one step" }).optional(),
});
export type TaskScript = z.infer<typeof TaskScriptSchema>;

export const PolicyScriptSchema = z.strictObject({
  version: z.literal(1, { error: "expected version: 1" }).default(1),
  /** Whether the policy writes `<think>…</think>` before answering (Qwen3 thinking mode). */
  thinking: z.boolean({ error: "expected true or false" }).default(false),
  failure_rate: z.number({ error: "expected a number from 0 to 1" }).min(0, { error: "expected a number from 0 to 1" }).max(1, { error: "expected a number from 0 to 1" }).default(0),
  tasks: z.array(TaskScriptSchema, { error: "expected a list of tasks" }).default([]),
});
export type PolicyScript = z.infer<typeof PolicyScriptSchema>;
export type PolicyScriptInput = z.input<typeof PolicyScriptSchema>;

/**
 * Reads and validates a script file.
 *
 * @example
 * const script = parsePolicyScriptFile("examples/policies/quickstart.yaml");
 * script.tasks.map((task) => task.name);
 */
export function parsePolicyScriptFile(path: string): PolicyScript {
  let source: string;
  try {
    source = readFileSync(path, "utf8");
  } catch (error) {
    throw new PolicyScriptError(`${path}: cannot read the policy script: ${(error as Error).message}`);
  }
  return parsePolicyScriptText(source, path);
}

/**
 * Validates script text; `path` names it in errors.
 *
 * @example
 * parsePolicyScriptText("tasks:\n  - {name: hi, match: hello, steps: [{say: hi}]}\n", "inline.yaml");
 */
export function parsePolicyScriptText(source: string, path: string): PolicyScript {
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const problems = doc.errors.map((error) => {
      const at = lineCounter.linePos(error.pos[0]);
      return `${path}:${at.line}:${at.col}: YAML syntax error: ${error.message.split("\n")[0]}`;
    });
    throw new PolicyScriptError(problems.join("\n"), problems);
  }
  const value = doc.toJS() ?? {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new PolicyScriptError(`${path}:1:1: expected a YAML mapping with tasks (and optionally thinking, failure_rate)`);
  }
  const result = PolicyScriptSchema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const fieldPath = issue.path.filter((p): p is string | number => typeof p !== "symbol");
    const keys = issue.code === "unrecognized_keys" ? (issue as { keys: string[] }).keys : [];
    const where = positionOf(doc.contents, keys.length > 0 ? [...fieldPath, keys[0]!] : fieldPath, lineCounter, keys.length > 0);
    const field = dotted(keys.length > 0 ? [...fieldPath, keys[0]!] : fieldPath) || "(top level)";
    const suggestion = keys.length > 0 ? nearest(keys[0]!, allowedKeys(fieldPath)) : undefined;
    const message =
      keys.length > 0
        ? `unknown field "${keys.join('", "')}"${suggestion ? ` (did you mean "${suggestion}"?)` : ""}; allowed: ${allowedKeys(fieldPath).join(", ")}`
        : issue.message;
    return `${path}:${where}: ${field}: ${message}`;
  });
  throw new PolicyScriptError(problems.join("\n"), problems);
}

function dotted(path: (string | number)[]): string {
  return path.map((part, i) => (typeof part === "number" ? `[${part}]` : i === 0 ? part : `.${part}`)).join("");
}

/** line:col of the deepest YAML node on `path` (the key itself for a missing/unknown field). */
function positionOf(root: unknown, path: (string | number)[], lineCounter: LineCounter, atKey = false): string {
  let node: unknown = root;
  let at: [number, number, number] | undefined = (root as { range?: [number, number, number] })?.range;
  for (const [i, part] of path.entries()) {
    if (isMap(node)) {
      const pair = node.items.find((item) => isPair(item) && isScalar(item.key) && item.key.value === part);
      if (!pair || !isPair(pair)) break;
      at = (pair.key as { range?: [number, number, number] }).range ?? at;
      if (atKey && i === path.length - 1) break;
      node = pair.value;
      at = (node as { range?: [number, number, number] })?.range ?? at;
    } else if (isSeq(node) && typeof part === "number") {
      node = node.items[part];
      at = (node as { range?: [number, number, number] })?.range ?? at;
    } else break;
  }
  if (!at) return "1:1";
  const pos = lineCounter.linePos(at[0]);
  return `${pos.line}:${pos.col}`;
}

const KEYS = {
  script: ["version", "thinking", "failure_rate", "tasks"],
  task: ["name", "match", "failure_rate", "thinking", "steps", "failing"],
  step: ["bash", "write", "read", "finish", "say", "think"],
  write: ["path", "content"],
  regex: ["regex", "flags", "contains"],
};

function allowedKeys(path: (string | number)[]): string[] {
  const names = path.filter((p) => typeof p === "string");
  const last = names.at(-1);
  if (path.length === 0) return KEYS.script;
  if (last === "write") return KEYS.write;
  if (last === "match") return KEYS.regex;
  if (last === "steps" || last === "failing") return KEYS.step;
  return KEYS.task;
}

/** The allowed key within edit distance 2, for "did you mean". */
function nearest(key: string, allowed: string[]): string | undefined {
  let best: { key: string; distance: number } | undefined;
  for (const candidate of allowed) {
    const distance = editDistance(key.toLowerCase(), candidate);
    if (distance <= 2 && (!best || distance < best.distance)) best = { key: candidate, distance };
  }
  return best?.key;
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
