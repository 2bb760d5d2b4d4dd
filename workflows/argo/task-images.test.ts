import { describe, expect, test } from "bun:test";
import { chmodSync, cpSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseExperimentFile } from "../../schemas/index.ts";
import { loadExperimentTasks } from "../tasks/index.ts";
import { listTaskIds, planRollouts } from "./plan.ts";
import { renderExperiment } from "./render.ts";
import { environmentHash, taskEnvironments, taskImage, taskResources } from "./task-images.ts";

const ROOT = join(import.meta.dir, "..", "..");
const HARBOR = join(ROOT, "examples", "harbor-images", "experiment.yaml");
type Any = Record<string, any>;

describe("task images", () => {
  test("the environment folder's hash: same content, same tag; a changed byte or executable bit, another", () => {
    const copy = join(mkdtempSync(join(tmpdir(), "forge-env-")), "environment");
    const source = join(ROOT, "examples", "harbor-images", "tasks", "dataset", "environment");
    cpSync(source, copy, { recursive: true });
    const hash = environmentHash(source);
    expect(hash).toMatch(/^[0-9a-f]{16}$/);
    expect(environmentHash(copy)).toBe(hash);
    chmodSync(join(copy, "dataset.csv"), 0o755);
    expect(environmentHash(copy)).not.toBe(hash);
    chmodSync(join(copy, "dataset.csv"), 0o644);
    expect(environmentHash(copy)).toBe(hash);
    writeFileSync(join(copy, "dataset.csv"), "name,score\n");
    expect(environmentHash(copy)).not.toBe(hash);
  });

  test("docker_image as given, a Dockerfile under REGISTRY:env-HASH, else spec.environment.image; a Dockerfile without a registry is refused by name", () => {
    const experiment = parseExperimentFile(HARBOR);
    const [dataset, motd] = loadExperimentTasks(experiment, dirname(HARBOR));
    expect(taskImage(experiment, motd!)).toMatchObject({ kind: "dockerfile", image: `localhost/openforge-tasks:env-${environmentHash(motd!.environmentDir!)}` });
    expect(taskImage(experiment, { ...motd!, resources: { docker_image: "ghcr.io/acme/tb-task:1" } })).toEqual({ kind: "docker_image", image: "ghcr.io/acme/tb-task:1" });
    expect(() => taskImage(experiment, { ...motd!, resources: { docker_image: 3 } })).toThrow(/motd.*docker_image: expected an image reference/);
    expect(taskImage(experiment, { ...dataset!, dockerfile: undefined })).toEqual({ kind: "fallback", image: "ghcr.io/openforge/task-base:0.1.0" });
    delete experiment.spec.environment.registry;
    expect(() => taskImage(experiment, motd!)).toThrow(/motd.*environment\/Dockerfile, but spec\.environment\.registry is not set/);
  });

  test("task.toml cpus / memory_mb become requests and limits; the experiment's otherwise; nonsense is refused by field", () => {
    const experiment = parseExperimentFile(HARBOR);
    const [dataset, motd] = loadExperimentTasks(experiment, dirname(HARBOR));
    expect(taskResources(experiment, motd!, false)).toEqual({ requests: { cpu: "2", memory: "1024Mi" }, limits: { cpu: "2", memory: "1024Mi" } });
    expect(taskResources(experiment, dataset!, false)).toEqual({ requests: { cpu: "1", memory: "2Gi" }, limits: { memory: "2Gi" } });
    expect(taskResources(experiment, { ...motd!, resources: { memory: "4G" } }, false)).toEqual({ requests: { cpu: "1", memory: "4Gi" }, limits: { memory: "4Gi" } });
    expect(() => taskResources(experiment, { ...motd!, resources: { cpus: "lots" } }, false)).toThrow(/task\.toml \[environment\] cpus: expected a positive number/);
    expect(() => taskResources(experiment, { ...motd!, resources: { memory_mb: -1 } }, false)).toThrow(/memory_mb: expected a positive number/);
  });

  test("a rendered Harbor-style task set: each task's rollouts in its own image, with its resources, over its range of the plan", () => {
    const experiment = parseExperimentFile(HARBOR);
    const tasks = loadExperimentTasks(experiment, dirname(HARBOR));
    const environments = taskEnvironments(experiment, tasks);
    expect(environments.map((e) => e.taskIds)).toEqual([["dataset"], ["motd"]]);
    const objects = renderExperiment(experiment, { namespace: "forge", experimentPath: HARBOR }) as Any[];
    const templates: Any[] = objects.find((o) => o.kind === "WorkflowTemplate")!.spec.templates;
    const byName = new Map(templates.map((t) => [t.name, t]));
    expect(byName.has("rollout")).toBe(false);
    for (const [index, task] of tasks.entries()) {
      const rollout = byName.get(`rollout-e${index}`)!;
      const containers = Object.fromEntries(rollout.containerSet.containers.map((c: Any) => [c.name, c]));
      const image = taskImage(experiment, task).image;
      // Harness and verifier in the task's image; register and finish in the forge image.
      expect([containers.harness.image, containers.verify.image]).toEqual([image, image]);
      expect([containers.register.image, containers.main.image]).toEqual(["ghcr.io/openforge/forge:0.1.0", "ghcr.io/openforge/forge:0.1.0"]);
      expect(containers.harness.env).toContainEqual({ name: "FORGE_TASK_IMAGE", value: image });
      expect(containers.harness.resources).toEqual(taskResources(experiment, task, false));
      expect(containers.verify.resources).toEqual(taskResources(experiment, task, false));
      expect(rollout.initContainers[0].image).toBe("ghcr.io/openforge/harness-bundle:0.1.0");
    }
    // The iteration fans each image's range of the plan out with its template; the plan lists them in that order.
    const iteration = byName.get("iteration-0")!;
    const fanOut = iteration.dag.tasks.filter((t: Any) => t.name.startsWith("rollouts-"));
    expect(fanOut.map((t: Any) => [t.name, t.template, t.withSequence])).toEqual([
      ["rollouts-e0", "rollout-e0", { start: "0", count: "2" }],
      ["rollouts-e1", "rollout-e1", { start: "2", count: "2" }],
    ]);
    expect(iteration.dag.tasks.find((t: Any) => t.name === "report").dependencies).toEqual(["rollouts-e0", "rollouts-e1"]);
    expect(planRollouts({ taskIds: listTaskIds(experiment, dirname(HARBOR)), k: 2 }).map((r) => r.task_id)).toEqual(["dataset", "dataset", "motd", "motd"]);
  });

  test("tasks interleaved by image are grouped in the plan, so each image's rollouts are one range", () => {
    const experiment = parseExperimentFile(HARBOR);
    const [dataset, motd] = loadExperimentTasks(experiment, dirname(HARBOR));
    const tasks = [dataset!, motd!, { ...dataset!, id: "dataset-2" }];
    expect(taskEnvironments(experiment, tasks).map((e) => e.taskIds)).toEqual([["dataset", "dataset-2"], ["motd"]]);
  });

  test("several images and more rollouts than maxPerWorkflow: refused, saying what to do", () => {
    const experiment = parseExperimentFile(HARBOR);
    experiment.spec.rollouts.maxPerWorkflow = 3;
    expect(() => renderExperiment(experiment, { namespace: "forge", experimentPath: HARBOR })).toThrow(/4 rollouts in 2 task images exceed spec\.rollouts\.maxPerWorkflow \(3\)/);
  });
});
