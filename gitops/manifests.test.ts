import { describe, expect, test } from "bun:test";
import { Application } from "@kubernetes-models/argo-cd/argoproj.io/v1alpha1/Application";
import { buildApplication } from "./argocd.ts";
import { buildEventSource, buildExperimentSensor, SensorSchema, EventSourceSchema } from "./argo-events.ts";

const workflow = { apiVersion: "argoproj.io/v1alpha1", kind: "Workflow", metadata: { generateName: "quick-" }, spec: {} };

describe("Argo CD Application", () => {
  test("automated sync over deploy/manifests, valid against Argo CD's schema", () => {
    const app = buildApplication({ name: "experiments", repoURL: "https://git.example.com/o/r.git", branch: "main", argocdNamespace: "argocd", namespace: "openforge" });
    expect(app.spec.source?.path).toBe("deploy/manifests");
    expect(app.spec.syncPolicy?.automated).toEqual({ prune: true, selfHeal: true });
  });

  test("the schema behind buildApplication rejects a malformed Application", () => {
    const app = buildApplication({ name: "experiments", repoURL: "https://git.example.com/o/r.git", branch: "main", argocdNamespace: "argocd", namespace: "openforge" });
    const broken = new Application({ metadata: app.metadata, spec: { ...app.spec, source: { ...app.spec.source!, directory: { recurse: "yes" as unknown as boolean } } } });
    expect(() => broken.validate()).toThrow(/recurse must be boolean/);
  });
});

describe("Argo Events", () => {
  test("webhook and github event sources validate", () => {
    expect(buildEventSource({ namespace: "argo-events", kind: "webhook" }).spec.webhook?.push?.port).toBe("12000");
    const gh = buildEventSource({ namespace: "argo-events", kind: "github", github: { owner: "o", repository: "r" } });
    expect(gh.spec.github?.push?.repositories).toEqual([{ owner: "o", names: ["r"] }]);
  });

  test("the sensor filters on the branch and the experiment file and passes the SHA", () => {
    const sensor = buildExperimentSensor({
      namespace: "argo-events",
      experimentName: "quick",
      experimentPath: "experiments/quick.yaml",
      branch: "main",
      workflow,
      commitParameterIndex: 0,
    });
    const dependency = sensor.spec.dependencies[0]!;
    expect(dependency.filters?.exprs?.[0]?.expr).toBe('ref == "refs/heads/main"');
    const regex = new RegExp(dependency.filters!.data![0]!.value[0]!);
    // gjson renders body.commits.#.modified as JSON arrays; the regex must match inside them, exactly.
    expect(regex.test(JSON.stringify([["experiments/quick.yaml", "README.md"]]))).toBe(true);
    expect(regex.test(JSON.stringify([["experiments/quick2.yaml"]]))).toBe(false);
    expect(regex.test(JSON.stringify([["experiments/quickXyaml"]]))).toBe(false);
    const params = sensor.spec.triggers[0]!.template.argoWorkflow.parameters!;
    expect(params.map((p) => [p.src.dataKey, p.dest])).toEqual([
      ["body.after", "spec.arguments.parameters.0.value"],
      ["body.after", "metadata.labels.openforge\\.dev/commit"],
    ]);
  });

  test("the sensor also fires when a push adds, changes or removes a file the experiment reads", () => {
    const sensor = buildExperimentSensor({
      namespace: "argo-events",
      experimentName: "quick",
      experimentPath: "experiments/quick.yaml",
      inputs: ["tasks/quick", "policies/quick.yaml"],
      branch: "main",
      workflow,
      commitParameterIndex: 0,
    });
    const data = sensor.spec.dependencies[0]!.filters!.data!;
    expect(data.map((d) => d.path)).toEqual(["body.commits.#.added", "body.commits.#.modified", "body.commits.#.removed"]);
    const fires = (path: string, files: string[]) => data.filter((d) => d.path === path).some((d) => d.value.some((v) => new RegExp(v).test(JSON.stringify([files]))));
    expect(fires("body.commits.#.modified", ["tasks/quick/tests/test.sh"])).toBe(true);
    expect(fires("body.commits.#.added", ["tasks/quick"])).toBe(true);
    expect(fires("body.commits.#.removed", ["policies/quick.yaml"])).toBe(true);
    expect(fires("body.commits.#.modified", ["tasks/quick2/instruction.md", "tasks/quickstart"])).toBe(false);
    // Removing the experiment itself unschedules it (render), it does not submit it.
    expect(fires("body.commits.#.removed", ["experiments/quick.yaml"])).toBe(false);
    expect(SensorSchema.safeParse(sensor).success).toBe(true);
  });

  test("fields the CRD does not define are rejected", () => {
    const sensor = buildExperimentSensor({ namespace: "argo-events", experimentName: "q", experimentPath: "experiments/q.yaml", branch: "main", workflow, commitParameterIndex: 0 });
    expect(SensorSchema.safeParse({ ...sensor, spec: { ...sensor.spec, trigers: [] } }).success).toBe(false);
    const source = buildEventSource({ namespace: "argo-events", kind: "webhook" });
    expect(EventSourceSchema.safeParse({ ...source, metadata: { name: "Bad_Name" } }).success).toBe(false);
  });
});
