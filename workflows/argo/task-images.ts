/**
 * The image and the resources each task's rollouts run in on Kubernetes (docs/argo.md, "Images"):
 *
 *   task.toml [environment] docker_image   that image, as given
 *   environment/Dockerfile                  built by `forge images build` under a content-addressed
 *                                           tag, REGISTRY:env-HASH (the hash of the environment
 *                                           folder: same folder, same tag), REGISTRY being
 *                                           spec.environment.registry
 *   neither                                 spec.environment.image
 *
 * and task.toml [environment] cpus / memory_mb as the harness and verify containers' requests and
 * limits (spec.rollouts.resources otherwise). Tasks sharing an image and resources form one
 * environment: one rollout template each, the plan ordering rollouts by environment so each
 * environment's rollouts are one index range.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import type { Experiment } from "../../schemas/index.ts";
import type { Task } from "../tasks/index.ts";
import { rolloutResources } from "./gui.ts";

export type ContainerResources = { requests: Record<string, string>; limits: Record<string, string> };

/** Where a task's image comes from. */
export type TaskImage =
  | { kind: "docker_image"; image: string }
  | { kind: "dockerfile"; image: string; context: string; hash: string }
  | { kind: "fallback"; image: string };

/** Tasks with one image and one set of resources: one rollout template. */
export type TaskEnvironment = { image: string; resources: ContainerResources; taskIds: string[] };

/**
 * Hash of an environment folder: every file's path, executable bit and bytes, in path order.
 * 16 hex digits (64 bits) name a folder's content in a registry.
 *
 * @example
 * environmentHash("tasks/fix-greeting/environment") // "3f2a9c…" (16 hex digits)
 */
export function environmentHash(dir: string): string {
  const hash = createHash("sha256");
  const files: string[] = [];
  const walk = (path: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() || entry.isSymbolicLink()) files.push(full);
    }
  };
  walk(dir);
  for (const file of files.map((f) => relative(dir, f).split("\\").join("/")).sort()) {
    const full = join(dir, file);
    const executable = (statSync(full).mode & 0o111) !== 0;
    const content = readFileSync(full);
    hash.update(`${file}\0${executable ? "x" : "-"}\0${content.length}\0`).update(content);
  }
  return hash.digest("hex").slice(0, 16);
}

/**
 * The task's image: `docker_image`, else its environment/Dockerfile's content-addressed tag in
 * spec.environment.registry, else spec.environment.image. Throws, naming the task and the field,
 * for a Dockerfile without a registry to push it to or a `docker_image` that is not a string.
 *
 * @example
 * taskImage(experiment, task) // { kind: "dockerfile", image: "registry.example.com/forge-tasks:env-3f2a…", … }
 */
export function taskImage(experiment: Experiment, task: Task): TaskImage {
  const given = task.resources.docker_image;
  if (given !== undefined) {
    if (typeof given !== "string" || given.trim() === "") throw new Error(`${task.source}: task.toml [environment] docker_image: expected an image reference (a non-empty string)`);
    return { kind: "docker_image", image: given.trim() };
  }
  if (task.dockerfile && task.environmentDir) {
    const registry = experiment.spec.environment.registry;
    if (!registry) {
      throw new Error(
        `${task.source}: the task has environment/Dockerfile, but spec.environment.registry is not set: name the repository \`forge images build\` pushes its image to (e.g. registry.example.com/forge-tasks)`,
      );
    }
    const hash = environmentHash(task.environmentDir);
    return { kind: "dockerfile", image: `${registry}:env-${hash}`, context: task.environmentDir, hash };
  }
  return { kind: "fallback", image: experiment.spec.environment.image };
}

const UNITS: Record<string, number> = { "": 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, K: 1e3, M: 1e6, G: 1e9, T: 1e12 };
/** A memory quantity ("2048Mi", "3Gi") in bytes. */
const bytes = (quantity: string) => {
  const match = /^(\d+(?:\.\d+)?)([KMGT]i?)?$/.exec(quantity);
  return match ? Number(match[1]) * (UNITS[match[2] ?? ""] ?? 1) : Number.NaN;
};

const positive = (value: unknown) => typeof value === "number" && Number.isFinite(value) && value > 0;

/**
 * The harness and verify containers' resources for a task: task.toml [environment] `cpus` and
 * `memory_mb` (or Harbor's older `memory`, e.g. "2G") as requests and limits, each falling back to
 * the experiment's (spec.rollouts.resources, or the defaults).
 *
 * @example
 * taskResources(experiment, task, false) // { requests: { cpu: "2", memory: "4096Mi" }, limits: { cpu: "2", memory: "4096Mi" } }
 */
export function taskResources(experiment: Experiment, task: Task, browser: boolean): ContainerResources {
  const defaults = rolloutResources(experiment, browser);
  const { cpus, memory_mb: memoryMb, memory } = task.resources;
  for (const [field, value] of [
    ["cpus", cpus],
    ["memory_mb", memoryMb],
  ] as const) {
    if (value !== undefined && !positive(value)) throw new Error(`${task.source}: task.toml [environment] ${field}: expected a positive number, got ${JSON.stringify(value)}`);
  }
  let taskMemory: string | undefined;
  if (memoryMb !== undefined) taskMemory = `${Math.ceil(memoryMb as number)}Mi`;
  else if (typeof memory === "string" && /^\d+(\.\d+)?[KMGT]i?$/.test(memory)) taskMemory = memory.replace(/([KMGT])$/, "$1i").replace(/ii$/, "i");
  else if (memory !== undefined) throw new Error(`${task.source}: task.toml [environment] memory: expected a size like "2G", got ${JSON.stringify(memory)} (memory_mb is the current field)`);
  // A browser rollout's harness runs Chromium beside the task: never less memory than measured for it (gui.ts).
  if (browser && taskMemory && bytes(taskMemory) < bytes(defaults.requests.memory)) taskMemory = defaults.requests.memory;
  const cpu = cpus !== undefined ? String(cpus) : undefined;
  const requests = { cpu: cpu ?? defaults.requests.cpu, memory: taskMemory ?? defaults.requests.memory };
  return { requests, limits: { ...(cpu ? { cpu } : {}), memory: taskMemory ?? defaults.limits.memory } };
}

/**
 * The experiment's environments, in the order their first task appears: tasks with the same
 * image and resources share one. A browser experiment's harness gets the browser's resources.
 *
 * @example
 * taskEnvironments(experiment, tasks, false).map((e) => e.image) // ["ghcr.io/openforge/task-base:0.1.0", "registry.example.com/forge-tasks:env-3f2a…"]
 */
export function taskEnvironments(experiment: Experiment, tasks: Task[], browser = false): TaskEnvironment[] {
  const environments = new Map<string, TaskEnvironment>();
  for (const task of tasks) {
    const image = taskImage(experiment, task).image;
    const resources = taskResources(experiment, task, browser);
    const key = JSON.stringify([image, resources]);
    const environment = environments.get(key) ?? { image, resources, taskIds: [] };
    environment.taskIds.push(task.id);
    environments.set(key, environment);
  }
  return [...environments.values()];
}

/**
 * Task ids in plan order: grouped by environment (first appearance), the loader's order within
 * one, so each environment's rollouts are one index range of the plan (workflow.ts fans each
 * range out with its own rollout template).
 *
 * @example
 * orderedTaskIds(experiment, tasks) // ["a", "c", "b"] when a and c share an image and b has its own
 */
export function orderedTaskIds(experiment: Experiment, tasks: Task[]): string[] {
  return taskEnvironments(experiment, tasks, tasks.some((task) => task.browser)).flatMap((environment) => environment.taskIds);
}
