import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { Application } from "@kubernetes-models/argo-cd/argoproj.io/v1alpha1/Application";
import { WorkflowTemplate } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/WorkflowTemplate";
import { Workflow } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/Workflow";
import { initGitopsRepo } from "./init.ts";
import { renderGitopsRepo } from "./render.ts";
import { SensorSchema, EventSourceSchema } from "./argo-events.ts";

function freshRepo(): string {
  const repo = mkdtempSync(join(tmpdir(), "forge-gitops-render-"));
  initGitopsRepo(repo, "/opt/openforge/bin/forge.ts");
  return repo;
}

const read = (repo: string, path: string) => readFileSync(join(repo, path), "utf8");

describe("forge gitops render", () => {
  test("renders every object, each valid against its schema", () => {
    const repo = freshRepo();
    const report = renderGitopsRepo(repo, { check: false });
    expect(report.invalid).toEqual([]);
    expect(report.written.sort()).toEqual([
      "deploy/argocd/application.yaml",
      "deploy/manifests/_eventsource.yaml",
      "deploy/manifests/example.sensor.yaml",
      "deploy/manifests/example.yaml",
    ]);
    new Application(parseAllDocuments(read(repo, "deploy/argocd/application.yaml"))[0]!.toJS()).validate();
    EventSourceSchema.parse(parseAllDocuments(read(repo, "deploy/manifests/_eventsource.yaml"))[0]!.toJS());
    const sensor = SensorSchema.parse(parseAllDocuments(read(repo, "deploy/manifests/example.sensor.yaml"))[0]!.toJS());
    const submitted = new Workflow(sensor.spec.triggers[0]!.template.argoWorkflow.source.resource as never);
    submitted.validate();
    expect(submitted.metadata.generateName).toBeDefined();
    // The example reads tasks/ and its policy script: a push that changes them submits it too.
    expect(sensor.spec.dependencies[0]!.filters!.data!.at(-1)).toEqual({ path: "body.commits.#.removed", type: "string", value: ['"tasks(/[^"]*)?"', '"policies/example\\.yaml(/[^"]*)?"'] });
    const kinds = parseAllDocuments(read(repo, "deploy/manifests/example.yaml")).map((d) => d.toJS());
    expect(kinds.map((o) => o.kind)).toContain("WorkflowTemplate");
    expect(kinds.map((o) => o.kind)).not.toContain("Workflow");
    new WorkflowTemplate(kinds.find((o) => o.kind === "WorkflowTemplate")).validate();
  });

  test("is byte-stable and --check detects a stale deploy/", () => {
    const repo = freshRepo();
    renderGitopsRepo(repo, { check: false });
    const before = read(repo, "deploy/manifests/example.yaml") + read(repo, "deploy/manifests/example.sensor.yaml");
    expect(renderGitopsRepo(repo, { check: true }).stale).toEqual([]);
    renderGitopsRepo(repo, { check: false });
    expect(read(repo, "deploy/manifests/example.yaml") + read(repo, "deploy/manifests/example.sensor.yaml")).toBe(before);
    const experiment = join(repo, "experiments/example.yaml");
    writeFileSync(experiment, read(repo, "experiments/example.yaml").replace("k: 4", "k: 5"));
    expect(renderGitopsRepo(repo, { check: true }).stale).toContain("deploy/manifests/example.yaml");
  });

  test("an invalid experiment is reported with file and field, keeps its manifests, and blocks nothing else", () => {
    const repo = freshRepo();
    writeFileSync(join(repo, "experiments/second.yaml"), read(repo, "experiments/example.yaml").replace("name: example", "name: second"));
    renderGitopsRepo(repo, { check: false });
    const good = read(repo, "deploy/manifests/example.yaml");
    writeFileSync(join(repo, "experiments/example.yaml"), read(repo, "experiments/example.yaml").replace("k: 4", "k: three"));
    writeFileSync(join(repo, "experiments/second.yaml"), read(repo, "experiments/second.yaml").replace("k: 4", "k: 5"));
    const report = renderGitopsRepo(repo, { check: false });
    expect(report.invalid).toHaveLength(1);
    expect(report.invalid[0]).toMatch(/^experiments\/example\.yaml:\d+:\d+: spec\.rollouts\.k/);
    expect(read(repo, "deploy/manifests/example.yaml")).toBe(good);
    expect(read(repo, "deploy/manifests/second.yaml")).toContain("second");
  });

  test("a deleted experiment's manifests are removed (it stops being scheduled)", () => {
    const repo = freshRepo();
    renderGitopsRepo(repo, { check: false });
    rmSync(join(repo, "experiments/example.yaml"));
    expect(renderGitopsRepo(repo, { check: true }).stale).toContain("deploy/manifests/example.sensor.yaml (to be removed)");
    renderGitopsRepo(repo, { check: false });
    expect(existsSync(join(repo, "deploy/manifests/example.sensor.yaml"))).toBe(false);
    expect(existsSync(join(repo, "deploy/manifests/example.yaml"))).toBe(false);
  });

  test("two experiments with one name are refused, naming both files", () => {
    const repo = freshRepo();
    writeFileSync(join(repo, "experiments/copy.yaml"), read(repo, "experiments/example.yaml"));
    const report = renderGitopsRepo(repo, { check: false });
    expect(report.invalid).toEqual(['experiments/example.yaml: metadata.name: "example" is already used by experiments/copy.yaml; experiment names must be unique']);
  });
});
