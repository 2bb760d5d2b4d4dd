/**
 * Loading tasks in the Harbor / Terminal-Bench layout:
 *
 *   TASK/instruction.md      the prompt given to the harness
 *   TASK/task.toml           [agent] timeout_sec, [verifier] timeout_sec / reward / reward_range,
 *                            [environment], [metadata] (Harbor's keys and those two; any other
 *                            key is an error naming it: task-toml.ts)
 *   TASK/environment/        files copied into the workspace (a Dockerfile there is recorded, not run)
 *   TASK/site/               a website served to the rollout at {site_url} (docs/gui.md), never
 *                            copied into the workspace; its requests are recorded for the verifier
 *   TASK/tests/test.sh       the verifier (required), run on a copy of the workspace after the harness
 *
 * The verifier writes its reward to $FORGE_LOGS/reward.txt or reward.json; its exit code
 * decides only when task.toml says `[verifier] reward = "exit-code"`.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { rewardRange, rewardSource } from "./reward-spec.ts";
import { validateTaskToml } from "./task-toml.ts";
import { TaskError, type Task } from "./types.ts";

/** Parses task.toml with Bun's TOML parser; errors name the file. */
function readTaskToml(file: string): Record<string, unknown> {
  if (!existsSync(file)) return {};
  try {
    return Bun.TOML.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch (error) {
    throw new TaskError(`${file}: not valid TOML: ${(error as Error).message}`);
  }
}

/**
 * Refuses a task whose folder holds a link that leaves it: forge reads and copies task files
 * with its own rights (root in a container), so `environment/key -> /etc/shadow` would hand the
 * host's file to the harness and `instruction.md -> ~/.ssh/id_rsa` put it in the prompt. Links
 * within the folder are fine.
 */
function refuseLinksOut(root: string): void {
  const real = realpathSync(root);
  const inside = (path: string) => path === real || path.startsWith(real.endsWith(sep) ? real : `${real}${sep}`);
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isSymbolicLink()) {
        const target = readlinkSync(path);
        let resolved: string;
        try {
          resolved = realpathSync(path);
        } catch {
          // Points nowhere (yet): judged by what it says.
          resolved = resolve(dirname(join(real, relative(root, path))), target);
        }
        if (!inside(resolved)) {
          throw new TaskError(`${path}: is a link to ${target}, outside the task folder ${root}; task files must be inside it (copy the file in instead of linking it)`);
        }
      } else if (entry.isDirectory()) walk(path);
    }
  };
  walk(root);
}

/**
 * Loads one task directory.
 *
 * @example
 * const task = loadTaskDir("examples/quickstart/tasks/hello-file");
 * task.verifier.kind; // "script"
 */
export function loadTaskDir(dir: string): Task {
  const root = resolve(dir);
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new TaskError(`task ${root}: not a directory`);
  refuseLinksOut(root);
  const instructionFile = join(root, "instruction.md");
  if (!existsSync(instructionFile)) throw new TaskError(`task ${root}: instruction.md is missing (it holds the prompt given to the harness)`);
  const instruction = readFileSync(instructionFile, "utf8").trim();
  if (!instruction) throw new TaskError(`${instructionFile}: is empty`);

  const tomlFile = join(root, "task.toml");
  const toml = validateTaskToml(readTaskToml(tomlFile), tomlFile);
  const reward = rewardSource(toml.verifier?.reward, `${tomlFile}: verifier.reward`, "file");
  const range = rewardRange(toml.verifier?.reward_range, `${tomlFile}: verifier.reward_range`, reward);

  const environmentDir = join(root, "environment");
  const hasEnvironment = existsSync(environmentDir);
  if (hasEnvironment && !statSync(environmentDir).isDirectory()) throw new TaskError(`task ${root}: environment must be a directory`);
  const dockerfile = hasEnvironment && existsSync(join(environmentDir, "Dockerfile")) ? join(environmentDir, "Dockerfile") : undefined;

  const siteDir = join(root, "site");
  const hasSite = existsSync(siteDir);
  if (hasSite && !statSync(siteDir).isDirectory()) throw new TaskError(`task ${root}: site must be a directory (the website served at {site_url})`);
  if (hasSite && !existsSync(join(siteDir, "index.html"))) throw new TaskError(`task ${root}: site/index.html is missing (the page {site_url} opens)`);
  if (!hasSite && instruction.includes("{site_url}")) throw new TaskError(`${instructionFile}: uses {site_url} but the task has no site/ directory to serve`);

  const testsDir = join(root, "tests");
  const script = join(testsDir, "test.sh");
  if (existsSync(testsDir) && !existsSync(script)) throw new TaskError(`task ${root}: tests/ exists but tests/test.sh is missing (the verifier script)`);
  // A rollout is scored only by a verifier: without one, nothing would say whether it passed.
  if (!existsSync(script)) {
    throw new TaskError(`task ${root}: no verifier: add tests/test.sh, which writes the reward to $FORGE_LOGS/reward.txt (or declare [verifier] reward = "exit-code" in task.toml)`);
  }

  return {
    id: basename(root),
    source: root,
    instruction,
    environmentDir: hasEnvironment ? environmentDir : undefined,
    files: {},
    dockerfile,
    verifier: { kind: "script", testsDir, script, reward },
    rewardRange: range,
    agentTimeoutSeconds: toml.agent?.timeout_sec,
    verifierTimeoutSeconds: toml.verifier?.timeout_sec,
    browser: toml.environment?.browser ?? false,
    ...(hasSite ? { siteDir } : {}),
    resources: toml.environment ?? {},
    metadata: toml.metadata ?? {},
  };
}

/**
 * Loads every task of a directory of task directories (each subdirectory with an
 * instruction.md), sorted by id; a subdirectory without one is an error, not skipped silently.
 *
 * @example
 * loadTaskTree("examples/quickstart/tasks").map((t) => t.id); // ["fix-greeting", "hello-file", ...]
 */
export function loadTaskTree(dir: string): Task[] {
  const root = resolve(dir);
  if (!existsSync(root)) throw new TaskError(`task directory ${root} does not exist`);
  if (existsSync(join(root, "instruction.md"))) return [loadTaskDir(root)];
  const entries = readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith("."))
    .map((entry) => entry.name)
    .sort();
  if (entries.length === 0) throw new TaskError(`task directory ${root} holds no tasks (each task is a subdirectory with instruction.md)`);
  return entries.map((name) => loadTaskDir(join(root, name)));
}
