/**
 * The policy simulator's script file (YAML): which task prompts it recognises and the
 * sequence of actions ("intents") it plays for each, with a failure rate so that runs have
 * real successes and failures. The simulator maps each intent onto whatever tool the
 * harness offers (see simulator/intents.ts).
 *
 * Errors name the file, line:column and field, e.g.
 * `examples/policies/quickstart.yaml:14:9: tasks[0].steps[1].write.path: expected a file path`.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { parseYamlAgainst } from "./yaml-file.ts";

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

const INTENT_KEYS = ["bash", "write", "read", "finish", "tool"] as const;

/**
 * A call of a named tool with given arguments, whatever the harness calls it: the offered tool
 * whose name is `name`, or ends with it after a separator (`mcp__browser__browser_click`,
 * `browser_browser_click`). String values may hold `{{url}}` (the first http(s) URL of the task
 * prompt) and `{{cwd}}` (the working directory the harness names).
 */
const ToolCallSchema = z.strictObject({
  name: text("a tool name (e.g. browser_click)"),
  arguments: z.record(z.string(), z.unknown(), { error: "expected the arguments as a mapping" }).default({}),
});

/**
 * One assistant turn. Exactly one action: `bash` (run a command), `write` (create/overwrite
 * a file), `read` (show a file), `finish` (final answer; ends the rollout), `tool` (call a
 * named tool, e.g. a browser's) — or `say` alone (a text-only reply). `say` beside an action is
 * the text the model writes before its tool call; `think` is its reasoning when thinking is on.
 * `expect: image` plays the step only when an image came back since the policy's previous turn
 * (a screenshot in a tool result or a user turn); otherwise the policy gives up, saying it saw
 * no image (its final answer), so a harness that drops screenshots fails the task.
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
    tool: ToolCallSchema.optional(),
    expect: z.literal("image", { error: 'expected "image"' }).optional(),
    say: z.string({ error: "expected text" }).optional(),
    think: z.string({ error: "expected reasoning text" }).optional(),
  })
  .superRefine((step, ctx) => {
    const actions = INTENT_KEYS.filter((key) => step[key] !== undefined);
    if (actions.length > 1) {
      ctx.addIssue({ code: "custom", path: [actions[1]!], message: `a step has one action; this one has ${actions.join(" and ")} (split it into two steps)` });
    }
    if (actions.length === 0 && step.say === undefined) {
      ctx.addIssue({ code: "custom", path: [], message: "a step needs one of bash, write, read, finish, tool or say" });
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
  const result = parseYamlAgainst(PolicyScriptSchema, source, path, "a YAML mapping with tasks (and optionally thinking, failure_rate)");
  if (!result.ok) throw new PolicyScriptError(result.problems.join("\n"), result.problems);
  return result.data;
}
