/**
 * The train step's trackers on Argo (docs/metrics.md, "Training curves"): veRL's
 * `trainer.logger` from `training.trackers` (console and TensorBoard by default), TensorBoard's
 * directory on the data volume per Workflow (one run across iterations), W&B opt-in with its
 * key from a Secret and one run id resumed by every step, forge's figures written into the same
 * TensorBoard run by an init container; the schema's errors name the fix.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, cpSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WorkflowTemplate } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1";
import { ExperimentError, parseExperimentFile } from "../../schemas/index.ts";
import { renderExperiment, type KubeObject } from "../../workflows/argo/render.ts";

const FIXTURES = join(import.meta.dir, "..", "..", "workflows", "argo", "fixtures");
type AnyTemplate = Record<string, any>;
const templates = (objects: KubeObject[]) => (objects.find((o) => o.kind === "WorkflowTemplate") as any).spec.templates as AnyTemplate[];

/** The fixture (a train experiment with upstreams) with `training` lines added. */
function renderWith(trainingLines: string[], edit = (source: string) => source): { objects: KubeObject[]; train: AnyTemplate } {
  const dir = mkdtempSync(join(tmpdir(), "forge-trackers-"));
  try {
    cpSync(FIXTURES, dir, { recursive: true });
    const file = join(dir, "experiment.yaml");
    const source = readFileSync(file, "utf8");
    expect(source).toMatch(/^  training:\n/m);
    writeFileSync(file, edit(source.replace(/^  training:\n/m, `  training:\n${trainingLines.map((l) => `    ${l}\n`).join("")}`)));
    const objects = renderExperiment(parseExperimentFile(file), { namespace: "forge", experimentPath: file });
    expect(() => new WorkflowTemplate(objects.find((o) => o.kind === "WorkflowTemplate") as never).validate()).not.toThrow();
    return { objects, train: templates(objects).find((t) => t.name === "train-1")! };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("training.trackers", () => {
  test("by default console and TensorBoard, one directory per Workflow on the data volume, forge's figures beside", () => {
    const { train } = renderWith([]);
    expect(train.container.args).toContain("trainer.logger=['console','tensorboard']");
    expect(train.container.env).toContainEqual({ name: "TENSORBOARD_DIR", value: "/data/tensorboard/{{workflow.name}}" });
    expect(train.container.env.map((e: AnyTemplate) => e.name)).not.toContain("WANDB_RUN_ID");
    const figures = train.initContainers.find((c: AnyTemplate) => c.name === "forge-figures");
    expect(figures.command).toEqual(["sh", "-c", 'python3 -m forge_verl.figures || echo "forge figures: not written (see above)"']);
    expect(figures.env).toEqual(
      expect.arrayContaining([
        { name: "FORGE_FIGURES", value: "/data/train/{{workflow.name}}/iteration-1.figures.json" },
        { name: "TENSORBOARD_DIR", value: "/data/tensorboard/{{workflow.name}}" },
        { name: "FORGE_FIGURES_WAIT_SECONDS", value: "0" },
      ]),
    );
    // After forge-verl, which copies the forge_verl package it imports.
    expect(train.initContainers.map((c: AnyTemplate) => c.name)).toEqual(["forge-verl", "forge-figures"]);
  });

  test("W&B: the key from a Secret, one run id resumed by every iteration's step", () => {
    const { train } = renderWith(["trackers: [console, tensorboard, wandb]", "secretEnv: [{name: WANDB_API_KEY, secret: wandb, key: api-key}, {name: WANDB_ENTITY, secret: wandb, key: entity}]"]);
    expect(train.container.args).toContain("trainer.logger=['console','tensorboard','wandb']");
    expect(train.container.env).toEqual(
      expect.arrayContaining([
        { name: "WANDB_RUN_ID", value: "{{workflow.name}}" },
        { name: "WANDB_RESUME", value: "allow" },
        { name: "WANDB_DIR", value: "/data/wandb/{{workflow.name}}" },
        { name: "WANDB_API_KEY", valueFrom: { secretKeyRef: { name: "wandb", key: "api-key" } } },
        { name: "WANDB_ENTITY", valueFrom: { secretKeyRef: { name: "wandb", key: "entity" } } },
      ]),
    );
    // The key never appears as a value anywhere in the rendered objects.
    expect(JSON.stringify(train)).not.toMatch(/"name":"WANDB_API_KEY","value"/);
  });

  test("console only: no TensorBoard directory and no figures container; an override of trainer.logger still wins", () => {
    const { train } = renderWith(["trackers: [console]"]);
    expect(train.container.args).toContain("trainer.logger=['console']");
    expect(train.initContainers.map((c: AnyTemplate) => c.name)).toEqual(["forge-verl"]);
    const overridden = renderWith([], (source) => source.replace("      - trainer.save_freq=1\n", "      - trainer.save_freq=1\n      - \"trainer.logger=['console','mlflow']\"\n")).train;
    expect(overridden.container.args.filter((a: string) => a.startsWith("trainer.logger="))).toEqual(["trainer.logger=['console','mlflow']"]);
  });

  test("wandb without its key, a variable forge sets, a bad name: errors that name the field and the fix", () => {
    const error = (lines: string[]) => {
      try {
        renderWith(lines);
      } catch (e) {
        expect(e).toBeInstanceOf(ExperimentError);
        return (e as Error).message;
      }
      throw new Error("no error");
    };
    expect(error(["trackers: [wandb]"])).toContain("spec.training.trackers: wandb needs its key: add {name: WANDB_API_KEY, secret: SECRET, key: KEY} to training.secretEnv");
    expect(error(["secretEnv: [{name: TENSORBOARD_DIR, secret: s, key: k}]"])).toContain("spec.training.secretEnv[0].name: forge sets this variable itself");
    expect(error(["secretEnv: [{name: 1BAD, secret: s, key: k}]"])).toContain("expected an environment variable name");
    expect(error(["trackers: [neptune]"])).toContain('expected "console", "tensorboard" or "wandb"');
  });
});
