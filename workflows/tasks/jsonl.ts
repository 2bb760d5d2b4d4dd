/**
 * A JSONL task list for simple prompt tasks, one task per line:
 *   {"id": "capital", "instruction": "What is the capital of France?", "expected": "Paris"}
 *   {"id": "hello", "instruction": "Create hello.txt ...", "verify": "grep -qx Hello hello.txt"}
 * Fields: id, instruction, files? (path → content), verify? | test? (bash, run in the workspace),
 * expected? (answer must contain it), timeoutSeconds?, metadata?.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { TaskSpecSchema, type TaskSpec } from "../../schemas/index.ts";
import { TaskError, type Task } from "./types.ts";

/**
 * Turns an inline task (experiment `environment.tasks: [...]` or a JSONL line) into a Task.
 *
 * @example
 * taskFromSpec({ id: "a", instruction: "say hi", files: {}, metadata: {} }, "inline").verifier; // { kind: "none" }
 */
export function taskFromSpec(spec: TaskSpec, source: string): Task {
  return {
    id: spec.id,
    source,
    instruction: spec.instruction,
    files: spec.files,
    verifier: spec.test ? { kind: "inline", script: spec.test } : spec.expected !== undefined ? { kind: "expected", text: spec.expected } : { kind: "none" },
    agentTimeoutSeconds: spec.timeoutSeconds,
    resources: {},
    metadata: spec.metadata,
  };
}

/**
 * Loads a JSONL task list; errors name the file and line.
 *
 * @example
 * loadJsonlTasks("tasks.jsonl")[0].id; // "capital"
 */
export function loadJsonlTasks(path: string): Task[] {
  const file = resolve(path);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new TaskError(`${file}: cannot read the task list: ${(error as Error).message}`);
  }
  const tasks: Task[] = [];
  const seen = new Set<string>();
  text.split("\n").forEach((raw, index) => {
    const line = raw.trim();
    if (!line) return;
    const where = `${file}:${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new TaskError(`${where}: not JSON: ${(error as Error).message}`);
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TaskError(`${where}: expected a JSON object {"id", "instruction", ...}`);
    // `verify` is the list's name for the verifier script; the schema calls it `test`.
    const { verify, ...rest } = value as Record<string, unknown>;
    const candidate = verify !== undefined && rest.test === undefined ? { ...rest, test: verify } : rest;
    const parsed = TaskSpecSchema.safeParse(candidate);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new TaskError(`${where}: ${issue.path.join(".") || "(line)"}: ${issue.message}`);
    }
    if (seen.has(parsed.data.id)) throw new TaskError(`${where}: duplicate task id "${parsed.data.id}"`);
    seen.add(parsed.data.id);
    tasks.push(taskFromSpec(parsed.data, where));
  });
  if (tasks.length === 0) throw new TaskError(`${file}: holds no tasks (one JSON object per line)`);
  return tasks;
}
