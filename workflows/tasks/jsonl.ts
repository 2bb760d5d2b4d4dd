/**
 * A JSONL task list for simple prompt tasks, one task per line:
 *   {"id": "capital", "instruction": "What is the capital of France?", "expected": "Paris"}
 *   {"id": "hello", "instruction": "Create hello.txt ...", "verify": "grep -qx Hello hello.txt"}
 * Fields: id, instruction, files? (path → content), verify? | test? (bash, run on a copy of the
 * workspace; its exit code is the reward unless `reward: "file"`), expected? (answer must contain
 * it), reward?, rewardRange?, timeoutSeconds?, metadata?. A task needs `verify`/`test` or `expected`.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { TaskSpecSchema, type TaskSpec } from "../../schemas/index.ts";
import { checkTaskIds } from "./ids.ts";
import { rewardRange } from "./reward-spec.ts";
import { DEFAULT_REWARD_RANGE, TaskError, type Task, type TaskVerifier } from "./types.ts";

/**
 * Turns an inline task (experiment `environment.tasks: [...]` or a JSONL line) into a Task. An
 * inline `test` is a bash condition: its exit code is the reward (the format declares it), unless
 * the task says `reward: "file"`. A task with neither `test` nor `expected` is refused.
 *
 * @example
 * taskFromSpec({ id: "a", instruction: "say hi", files: {}, metadata: {}, expected: "hi" }, "inline").verifier; // { kind: "expected", text: "hi" }
 */
export function taskFromSpec(spec: TaskSpec, source: string): Task {
  let verifier: TaskVerifier;
  if (spec.test) verifier = { kind: "inline", script: spec.test, reward: spec.reward ?? "exit-code" };
  else if (spec.expected !== undefined) verifier = { kind: "expected", text: spec.expected };
  else throw new TaskError(`${source}: task "${spec.id}" has no verifier: give "test" (bash, run on the workspace; exit 0 → reward 1) or "expected" (text the answer must contain)`);
  if (verifier.kind === "expected" && spec.reward !== undefined) throw new TaskError(`${source}: task "${spec.id}": "reward" applies to a "test" script, not to "expected"`);
  return {
    id: spec.id,
    source,
    instruction: spec.instruction,
    files: spec.files,
    verifier,
    rewardRange: spec.rewardRange ? rewardRange(spec.rewardRange, `${source}: rewardRange`, verifier.kind === "inline" ? verifier.reward : undefined) : DEFAULT_REWARD_RANGE,
    agentTimeoutSeconds: spec.timeoutSeconds,
    browser: spec.browser ?? false,
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
  checkTaskIds(tasks);
  return tasks;
}
