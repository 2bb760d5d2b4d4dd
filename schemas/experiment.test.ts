import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ExperimentError, parseExperimentFile, parseExperimentText } from "./experiment.ts";

const minimal = `apiVersion: openforge.dev/v1
kind: Experiment
metadata:
  name: quick
spec:
  policy:
    model: qwen3-0.6b
  harness:
    name: codex
  environment:
    tasks: ./tasks
  rollouts:
    k: 4
`;

function errorOf(source: string, path = "experiments/foo.yaml"): ExperimentError {
  try {
    parseExperimentText(source, path);
  } catch (error) {
    expect(error).toBeInstanceOf(ExperimentError);
    return error as ExperimentError;
  }
  throw new Error("expected the experiment to be rejected");
}

describe("parseExperimentText", () => {
  test("a minimal file gets every default", () => {
    const experiment = parseExperimentText(minimal, "x.yaml");
    expect(experiment.metadata.name).toBe("quick");
    expect(experiment.spec.policy).toEqual({ model: "qwen3-0.6b", upstreams: [], mode: "eval", engine: "auto", simulator: { seed: 0 }, tokenMode: "engine" });
    expect(experiment.spec.rollouts).toEqual({
      k: 4,
      parallelism: 4,
      timeoutSeconds: 600,
      infraRetries: 2,
      resources: {},
      sandbox: "auto",
      maxPerWorkflow: 1000,
    });
    expect(experiment.spec.training.algorithm).toBe("grpo");
    expect(experiment.spec.training.iterations).toBe(1);
    expect(experiment.spec.training.weightSync.strategy).toBe("update-from-disk");
    expect(experiment.spec.training.checkpoints).toEqual({ mountPath: "/checkpoints", size: "200Gi" });
    expect(experiment.spec.metrics).toEqual({ k: [1], passThreshold: 1, missingTrials: "exclude", argoArtifacts: true });
    expect(experiment.spec.proxy.port).toBe(8080);
  });

  test("a full file keeps what it says, inline tasks included", () => {
    const experiment = parseExperimentText(
      `apiVersion: openforge.dev/v1
kind: Experiment
metadata: { name: full, labels: { team: rl } }
spec:
  policy: { model: m, upstreams: ["http://vllm-0:8000", "http://vllm-1:8000"], mode: train, simulator: { seed: 7 } }
  harness: { name: command, command: [bash, -c, "echo hi > out.txt"], options: { effort: high } }
  environment:
    image: ubuntu:24.04
    tasks:
      - { id: t1, instruction: "write hi to out.txt", test: "grep -q hi out.txt" }
  rollouts: { k: 8, parallelism: 32, timeoutSeconds: 900, resources: { cpu: 2, memory: 4Gi }, sandbox: none }
  training:
    algorithm: ppo
    iterations: 3
    overrides: ["actor_rollout_ref.actor.optim.lr=1e-6", "+trainer.val_before_train=False"]
    weightSync: { strategy: restart, deployment: vllm }
  metrics: { k: [1, 4, 8], passThreshold: 0.5 }
`,
      "full.yaml",
    );
    expect(experiment.spec.rollouts.resources.cpu).toBe("2");
    expect(experiment.spec.environment.tasks).toEqual([
      { id: "t1", instruction: "write hi to out.txt", test: "grep -q hi out.txt", files: {}, metadata: {} },
    ]);
    expect(experiment.spec.training.overrides).toHaveLength(2);
    expect(experiment.spec.metrics.k).toEqual([1, 4, 8]);
  });

  test("wrong type names file, line:column, field and the value", () => {
    const error = errorOf(minimal.replace("k: 4", "k: three"));
    expect(error.message).toBe('experiments/foo.yaml:13:8: spec.rollouts.k: expected a positive integer, got "three"');
  });

  test("unknown field is named, at its own line, with the allowed ones", () => {
    const error = errorOf(minimal.replace("k: 4", "k: 4\n    paralelism: 3"));
    expect(error.message).toBe('experiments/foo.yaml:14:5: spec.rollouts: unknown field "paralelism" (did you mean "parallelism"?)');
    const far = errorOf(minimal.replace("k: 4", "k: 4\n    gpu: 1"));
    expect(far.message).toContain('spec.rollouts: unknown field "gpu" (allowed: k, parallelism, timeoutSeconds,');
    expect(errorOf(minimal.replace("kind: Experiment", "kind: Experiment\nstatus: {}")).message).toContain('experiments/foo.yaml:3:1: unknown field "status" (allowed: apiVersion, kind, metadata, spec)');
  });

  test("missing required field points at its parent", () => {
    const error = errorOf(minimal.replace("  harness:\n    name: codex\n", ""));
    expect(error.message).toBe("experiments/foo.yaml:6:3: spec.harness: required field is missing");
  });

  test("several problems are all reported", () => {
    const error = errorOf(minimal.replace("name: codex", "name: vim").replace("model: qwen3-0.6b", "model: m\n    upstreams: [not-a-url]"));
    expect(error.problems).toHaveLength(2);
    expect(error.message).toContain('spec.policy.upstreams[0]: expected a URL');
    expect(error.message).toContain('spec.harness.name: expected one of codex, claude-code');
  });

  test("harness command needs its argv; metrics.k cannot exceed rollouts.k", () => {
    expect(errorOf(minimal.replace("name: codex", "name: command")).message).toContain("spec.harness.command: harness \"command\" needs command");
    expect(errorOf(minimal + "  metrics: { k: [1, 8] }\n").message).toContain("spec.metrics.k[1]: pass@8 needs rollouts.k ≥ 8");
  });

  test("YAML syntax errors carry the line", () => {
    const error = errorOf("apiVersion: openforge.dev/v1\nkind: [Experiment\nmetadata: {}\n", "bad.yaml");
    expect(error.message).toMatch(/^bad\.yaml:\d+:\d+: YAML syntax error: /);
  });

  test("duplicate keys are a YAML error", () => {
    expect(errorOf(minimal + "  rollouts:\n    k: 2\n").message).toMatch(/experiments\/foo\.yaml:\d+:\d+: YAML syntax error: Map keys must be unique/);
  });

  test("wrong apiVersion and a non-Kubernetes name", () => {
    const error = errorOf(minimal.replace("openforge.dev/v1", "openforge.dev/v2").replace("name: quick", "name: Quick_Start"));
    expect(error.message).toContain('apiVersion: expected "openforge.dev/v1", got "openforge.dev/v2"');
    expect(error.message).toContain("metadata.name: expected lower-case letters");
  });
});

describe("parseExperimentFile", () => {
  test("reads a file and names it in errors", () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-exp-"));
    const file = join(dir, "experiment.yaml");
    writeFileSync(file, minimal);
    expect(parseExperimentFile(file).spec.rollouts.k).toBe(4);
    writeFileSync(file, minimal.replace("k: 4", "k: -1"));
    expect(() => parseExperimentFile(file)).toThrow(`${file}:13:8: spec.rollouts.k: expected a positive integer, got -1`);
    expect(() => parseExperimentFile(join(dir, "missing.yaml"))).toThrow(/missing\.yaml: cannot read the experiment file/);
  });
});
