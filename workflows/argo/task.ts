/**
 * Reading one task inside a rollout pod, from the experiment as mounted at /experiment:
 * a Harbor / Terminal-Bench style directory (`instruction.md`, `environment/`, `tests/test.sh`),
 * a JSONL line, or an inline entry. The verifier's files are kept apart from the files
 * staged for the harness, so the harness cannot read the tests.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { TaskSpecSchema, type Experiment, type TaskSpec } from "../../schemas/experiment.ts";

export type LoadedTask = {
  id: string;
  instruction: string;
  /** Files for the workspace before the harness runs (relative path → bytes). */
  files: Map<string, Uint8Array>;
  /** Verifier files, copied into the workspace only after the harness finished. */
  testFiles: Map<string, Uint8Array>;
  /** Inline verifier script, for JSONL / inline tasks. */
  testScript?: string;
  /** For prompt tasks without a verifier: the answer must contain this. */
  expected?: string;
  /** task.toml `[agent] timeout_sec` / the inline `timeoutSeconds`: overrides rollouts.timeoutSeconds. */
  timeoutSeconds?: number;
  /** task.toml `[verifier] timeout_sec`. */
  verifierTimeoutSeconds?: number;
};

function readTree(root: string): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  if (!existsSync(root)) return files;
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files.set(relative(root, path), readFileSync(path));
    }
  };
  walk(root);
  return files;
}

function fromSpec(spec: TaskSpec): LoadedTask {
  const encoder = new TextEncoder();
  return {
    id: spec.id,
    instruction: spec.instruction,
    files: new Map(Object.entries(spec.files).map(([path, content]) => [path, encoder.encode(content)])),
    testFiles: new Map(),
    testScript: spec.test,
    expected: spec.expected,
    timeoutSeconds: spec.timeoutSeconds,
  };
}

/**
 * Loads a task by id.
 *
 * @example
 * const task = loadTask(experiment, "/experiment", "count-lines");
 */
export function loadTask(experiment: Experiment, baseDir: string, taskId: string): LoadedTask {
  const tasks = experiment.spec.environment.tasks;
  if (Array.isArray(tasks)) {
    const spec = tasks.find((task) => task.id === taskId);
    if (!spec) throw new Error(`task "${taskId}" is not in spec.environment.tasks`);
    return fromSpec(spec);
  }
  const path = resolve(baseDir, tasks);
  if (statSync(path).isDirectory()) {
    const dir = join(path, taskId);
    if (!existsSync(join(dir, "instruction.md"))) throw new Error(`task "${taskId}": ${dir}/instruction.md does not exist`);
    const toml = existsSync(join(dir, "task.toml")) ? Bun.TOML.parse(readFileSync(join(dir, "task.toml"), "utf8")) : {};
    const { agent, verifier } = toml as { agent?: { timeout_sec?: unknown }; verifier?: { timeout_sec?: unknown } };
    const seconds = (value: unknown) => (typeof value === "number" && value > 0 ? value : undefined);
    return {
      id: taskId,
      instruction: readFileSync(join(dir, "instruction.md"), "utf8"),
      files: readTree(join(dir, "environment")),
      testFiles: readTree(join(dir, "tests")),
      timeoutSeconds: seconds(agent?.timeout_sec),
      verifierTimeoutSeconds: seconds(verifier?.timeout_sec),
    };
  }
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const parsed = JSON.parse(line) as { id?: string };
    if (parsed.id === taskId) return fromSpec(TaskSpecSchema.parse(parsed));
  }
  throw new Error(`task "${taskId}" is not in ${path}`);
}
