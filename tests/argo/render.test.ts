/**
 * Every object `forge render` produces validates against the Argo Workflows CRD schema and
 * the Kubernetes OpenAPI schema (the models' validate()), has the workflow shape of
 * docs/argo.md, and renders byte-identically twice.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { Workflow, WorkflowTemplate } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { PersistentVolume } from "kubernetes-models/v1/PersistentVolume";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { parseExperimentFile } from "../../schemas/index.ts";
import { groupDatasetPath } from "../../trajectories/index.ts";
import { manifestsToYaml, renderExperiment, type KubeObject } from "../../workflows/argo/render.ts";

// Some tests spawn `bun bin/forge.ts`; on a loaded 2-core CI box that takes seconds.
setDefaultTimeout(30_000);
const FIXTURE = join(import.meta.dir, "..", "..", "workflows", "argo", "fixtures", "experiment.yaml");
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  ServiceAccount,
  Role,
  RoleBinding,
  PersistentVolumeClaim,
  ConfigMap,
  Deployment,
  Service,
  NetworkPolicy,
  WorkflowTemplate,
  Workflow,
};

/** The kinds rendered for the fixture (a train experiment with upstreams), in apply order: the data and the checkpoint claims. */
const KINDS = ["ServiceAccount", "Role", "RoleBinding", "PersistentVolumeClaim", "PersistentVolumeClaim", "ConfigMap", "Deployment", "Service", "NetworkPolicy", "WorkflowTemplate", "Workflow"];

type AnyTemplate = Record<string, any>;
const render = (path = FIXTURE, namespace = "forge") => renderExperiment(parseExperimentFile(path), { namespace, experimentPath: path });
const byKind = (objects: KubeObject[], kind: string) => objects.find((o) => o.kind === kind) as any;
const templates = (objects: KubeObject[]) => byKind(objects, "WorkflowTemplate").spec.templates as AnyTemplate[];
const template = (objects: KubeObject[], name: string) => templates(objects).find((t) => t.name === name)!;

function writeExperiment(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-argo-"));
  writeFileSync(join(dir, "experiment.yaml"), yaml);
  return join(dir, "experiment.yaml");
}

describe("forge render", () => {
  test("every object validates against its schema, read back from the YAML", () => {
    const objects = render();
    expect(objects.map((o) => o.kind)).toEqual(KINDS);
    const documents = parseAllDocuments(manifestsToYaml(objects)).map((d) => d.toJS());
    expect(documents).toEqual(objects as unknown[]);
    for (const document of documents) {
      const Model = MODELS[document.kind]!;
      expect(() => new Model(document as never).validate()).not.toThrow();
      expect(document.metadata.namespace).toBe("forge");
      expect(document.metadata.labels["openforge.dev/experiment"]).toBe("argo-fixture");
    }
  });

  test("the validator is real: a broken Workflow is rejected", () => {
    const workflow = structuredClone(byKind(render(), "WorkflowTemplate"));
    workflow.spec.templates[0].parallelism = "lots";
    expect(() => new WorkflowTemplate(workflow).validate()).toThrow(/parallelism/);
  });

  test("renders byte-identically, and a changed experiment gets a new Workflow name", () => {
    expect(manifestsToYaml(render())).toBe(manifestsToYaml(render()));
    const a = byKind(render(), "Workflow").metadata.name;
    const changed = writeExperiment(
      `apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: {name: argo-fixture}\nspec:\n  policy: {model: m}\n  harness: {name: codex}\n  environment: {tasks: [{id: t, instruction: x, expected: y}]}\n`,
    );
    expect(byKind(render(changed), "Workflow").metadata.name).not.toBe(a);
    expect(a).toMatch(/^argo-fixture-[0-9a-f]{8}$/);
  });

  test("iterations: one DAG per iteration, chained, each plan → rollouts by index (or child Workflows) → report → export → admit → train → sync", () => {
    const objects = render();
    const entry = template(objects, "experiment");
    expect(byKind(objects, "WorkflowTemplate").spec.entrypoint).toBe("experiment");
    expect(entry.dag.tasks.map((t: AnyTemplate) => [t.name, t.dependencies ?? []])).toEqual([
      ["iteration-0", []],
      ["iteration-1", ["iteration-0"]],
    ]);
    const iteration = template(objects, "iteration-1");
    expect(iteration.parallelism).toBe(16);
    expect(iteration.dag.tasks.map((t: AnyTemplate) => `${t.name}<${(t.dependencies ?? []).join(",")}`)).toEqual([
      "plan<",
      "rollouts<plan",
      "shards<plan",
      "report<rollouts,shards",
      "analyze<report",
      "export<report",
      "admit<export",
      "train<admit,analyze",
      "sync<train",
      "prune<train",
    ]);
    // checkpoints beyond training.keepCheckpoints (default 3) go after each step
    expect(template(objects, "prune-checkpoints").container.args).toEqual(["prune-checkpoints", "--dir", "/checkpoints/{{workflow.name}}", "--keep", "3"]);
    // The rollouts are indexed: no parameter carries the plan, the pods read it from the volume.
    const rollouts = iteration.dag.tasks[1];
    expect(rollouts.withSequence).toEqual({ count: "{{tasks.plan.outputs.parameters.rollout-count}}" });
    expect(rollouts.withParam).toBeUndefined();
    expect(rollouts.arguments.parameters).toEqual([
      { name: "index", value: "{{item}}" },
      { name: "run", value: "{{workflow.name}}" },
      { name: "iteration", value: "1" },
    ]);
    expect(rollouts.continueOn).toEqual({ failed: true, error: true });
    // Over rollouts.maxPerWorkflow, child Workflows over a short list of index ranges.
    const shards = iteration.dag.tasks[2];
    expect(shards).toMatchObject({ template: "rollout-shard-workflow", withParam: "{{tasks.plan.outputs.parameters.shards}}" });
    // The train step trains on the groups the admit step let through.
    expect(iteration.dag.tasks.find((t: AnyTemplate) => t.name === "train").arguments.parameters).toEqual([{ name: "train-batch-size", value: "{{tasks.admit.outputs.parameters.train-batch-size}}" }]);
    const sync = iteration.dag.tasks.find((t: AnyTemplate) => t.name === "sync");
    expect(sync.arguments.parameters).toContainEqual({ name: "policy-version", value: "2" });
    expect(sync.arguments.parameters).toContainEqual({ name: "checkpoint", value: "/checkpoints/{{workflow.name}}/global_step_2/actor/huggingface" });
  });

  test("the rollout pod: register, harness, verify, finish; the token only where task code never runs; retries as new tries", () => {
    const rollout = template(render(), "rollout");
    expect(rollout.metadata.labels["openforge.dev/role"]).toBe("rollout");
    expect(rollout.activeDeadlineSeconds).toBe(600);
    expect(rollout.retryStrategy).toEqual({ limit: 2, retryPolicy: "Always", expression: 'lastRetry.exitCode != "1" && lastRetry.exitCode != "2"', backoff: { duration: "10s", factor: 2, maxDuration: "10m" } });
    // Register, harness and verify never fail (they leave their outcome in a file): no in-pod retries.
    expect(rollout.containerSet.retryStrategy).toBeUndefined();
    const [register, harness, verify, main] = rollout.containerSet.containers;
    expect([register.name, harness.name, verify.name, main.name]).toEqual(["register", "harness", "verify", "main"]);
    expect([harness.dependencies, verify.dependencies, main.dependencies]).toEqual([["register"], ["harness"], ["verify"]]);
    const token = { name: "FORGE_ADMIN_TOKEN", valueFrom: { secretKeyRef: { name: "argo-fixture-admin", key: "token" } } };
    expect(register.args.slice(0, 1)).toEqual(["register"]);
    expect(register.args).toContain("http://argo-fixture-proxy.forge.svc:8080");
    expect(register.env).toContainEqual(token);
    expect(main.args[0]).toBe("finish");
    expect(main.env).toContainEqual(token);
    // Task code (harness, verifier) runs in containers with no token and no secret at all.
    // Their env: only which image they run in (for the bundle's preflight message) and HOME.
    for (const c of [harness, verify]) {
      expect(c.env.map((e: AnyTemplate) => e.name)).toEqual(["FORGE_TASK_IMAGE", "HOME"]);
      expect(c.env.some((e: AnyTemplate) => e.valueFrom)).toBe(false);
      expect(c.envFrom).toBeUndefined();
    }
    // Harness and verifier run inside the task's image, from the harness bundle that the init
    // container copied into an emptyDir (images/harness-bundle; docs/argo.md, "Images").
    expect([harness.image, verify.image]).toEqual(["ghcr.io/openforge/task-base:0.1.0", "ghcr.io/openforge/task-base:0.1.0"]);
    expect(harness.env[0]).toEqual({ name: "FORGE_TASK_IMAGE", value: "ghcr.io/openforge/task-base:0.1.0" });
    for (const c of [harness, verify]) expect(c.command).toEqual(["/opt/forge/bin/busybox", "sh", "/opt/forge/bin/forge-step"]);
    expect(rollout.initContainers.map((c: AnyTemplate) => [c.name, c.image, c.command.join(" ")])).toEqual([
      ["bundle", "ghcr.io/openforge/harness-bundle:0.1.0", "/opt/forge/bin/busybox cp -a /opt/forge/. /forge-bundle/"],
    ]);
    expect(rollout.initContainers[0].securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true });
    expect(rollout.volumes).toContainEqual({ name: "forge-bundle", emptyDir: {} });
    // Each try registers its own id: {{retries}} is Argo's retry number; the rollout is the plan's item at its index.
    for (const c of [register, main]) expect(c.args.slice(-10)).toEqual(["--run", "{{inputs.parameters.run}}", "--iteration", "{{inputs.parameters.iteration}}", "--index", "{{inputs.parameters.index}}", "--item", "/item/item.json", "--retry", "{{retries}}"]);
    expect(register.args).toContain("--plan-dir");
    expect(main.args.slice(main.args.indexOf("--results-dir"), main.args.indexOf("--results-dir") + 2)).toEqual(["--results-dir", "/results"]);
    expect(verify.args.slice(-2)).toEqual(["--item", "/item/item.json"]);
    expect(harness.resources).toEqual({ requests: { cpu: "1", memory: "1Gi" }, limits: { memory: "1Gi" } });
    expect(harness.args).toEqual(["harness", "--state", "/forge", "--workspace", "/workspace", "--harness-out", "/harness-out", "--timeout-seconds", "300", "--sandbox", "auto"]);
    const mounts = (c: AnyTemplate) => Object.fromEntries(c.volumeMounts.map((m: AnyTemplate) => [m.mountPath, m.readOnly ? "ro" : "rw"]));
    // The harness never mounts the tests (in /experiment), the verdict or the control volume.
    expect(mounts(harness)).toEqual({ "/workspace": "rw", "/forge": "rw", "/harness-out": "rw", "/opt/forge": "ro" });
    // The verifier reads the workspace (and works on a copy), writes only its verdict and scratch; no harness state (the rollout's key).
    // Which task it is comes from /item, which only register writes (the verifier reads it).
    expect(mounts(verify)).toEqual({ "/workspace": "ro", "/harness-out": "ro", "/verdict": "rw", "/verify": "rw", "/item": "ro", "/experiment": "ro", "/opt/forge": "ro" });
    expect(mounts(main)).toEqual({ "/harness-out": "ro", "/verdict": "ro", "/control": "rw", "/item": "ro", "/tmp": "rw", "/experiment": "ro", "/results": "rw" });
    expect(mounts(register)).toEqual({ "/workspace": "rw", "/forge": "rw", "/control": "rw", "/item": "rw", "/tmp": "rw", "/experiment": "ro", "/plan": "ro" });
    // Only the iteration's own plan and results directories of the data volume.
    const subPath = (c: AnyTemplate, path: string) => c.volumeMounts.find((m: AnyTemplate) => m.mountPath === path);
    expect(subPath(register, "/plan")).toEqual({ name: "data", mountPath: "/plan", subPath: "plans/{{inputs.parameters.run}}/iteration-{{inputs.parameters.iteration}}", readOnly: true });
    expect(subPath(main, "/results")).toEqual({ name: "data", mountPath: "/results", subPath: "results/{{inputs.parameters.run}}/iteration-{{inputs.parameters.iteration}}" });
    // No output parameter: results go to the data volume.
    expect(rollout.outputs).toBeUndefined();
    expect(rollout.podSpecPatch).toBeUndefined(); // no shareProcessNamespace: containers do not see each other's /proc
  });

  test("the veRL step: GPUs, main_ppo with the experiment's overrides winning", () => {
    const train = template(render(), "train-1");
    expect(train.container.command).toEqual(["python3"]);
    const args: string[] = train.container.args;
    expect(args.slice(0, 2)).toEqual(["-m", "verl.trainer.main_ppo"]);
    expect(args).toContain("algorithm.adv_estimator=grpo");
    expect(args).toContain("trainer.total_training_steps=2");
    expect(args).toContain("trainer.n_gpus_per_node=2");
    expect(args).toContain("actor_rollout_ref.actor.optim.lr=1e-6");
    expect(args.filter((a) => a.startsWith("trainer.save_freq="))).toEqual(["trainer.save_freq=1"]);
    // GRPO groups survive veRL's per-row uid: train on the group dataset (one row per task naming
    // its k samples), each row run rollout.n = k times; the replay reads the per-sample batch.
    const groups = "/data/exports/{{workflow.name}}/iteration-1/batch.groups/dataset.parquet";
    expect(groups).toBe(groupDatasetPath("/data/exports/{{workflow.name}}/iteration-1/batch.parquet"));
    // ...through the train step's init container, which copies its first train_batch_size rows
    // beside the agent-loop config (rows == train_batch_size: one veRL step per iteration)
    expect(args).toContain("data.train_files=/forge/verl/dataset.parquet");
    expect(args).toContain("data.val_files=/forge/verl/dataset.parquet");
    expect(args.filter((a) => a.includes("batch.parquet"))).toEqual([]);
    expect(args).toContain("actor_rollout_ref.rollout.n=4");
    for (const flag of [
      "data.return_raw_chat=True",
      "data.filter_overlong_prompts=False",
      "actor_rollout_ref.rollout.calculate_log_probs=True",
      "actor_rollout_ref.rollout.mode=async",
      "actor_rollout_ref.rollout.name=vllm",
      "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
      "actor_rollout_ref.rollout.agent.agent_loop_config_path=/forge/verl/agent_loop.yaml",
      "data.max_prompt_length=8192",
      "data.max_response_length=16384",
      "actor_rollout_ref.rollout.prompt_length=8192",
      "actor_rollout_ref.rollout.response_length=16384",
      "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=24576",
    ]) expect(args).toContain(flag);
    // Two tasks in the fixture: one batch of two groups, a multiple of the agent-loop workers.
    // The batch is what the admit step let through: the groups that kept all k samples.
    expect(args).toContain("data.train_batch_size={{inputs.parameters.train-batch-size}}");
    expect(args).toContain("actor_rollout_ref.actor.ppo_mini_batch_size={{inputs.parameters.train-batch-size}}");
    expect(args).toContain("actor_rollout_ref.rollout.agent.num_workers=1");
    // Hydra rejects a key given twice.
    const keys = args.slice(2).map((a) => a.slice(0, a.indexOf("=")));
    expect(new Set(keys).size).toBe(keys.length);
    expect(train.container.resources.limits).toEqual({ "nvidia.com/gpu": "2" });
    expect(train.container.image).toBe("ghcr.io/openforge/verl:0.9.1");
    expect(args).toContain("actor_rollout_ref.rollout.agent.default_agent_loop=forge_agent");
    expect(train.initContainers[0].args).toEqual([
      "verl-config", "--out", "/forge/verl", "--batch", "/data/exports/{{workflow.name}}/iteration-1/batch.parquet",
      "--experiment-name", "argo-fixture", "--train-batch-size", "{{inputs.parameters.train-batch-size}}",
    ]);
    expect(train.inputs.parameters).toEqual([{ name: "train-batch-size" }]);
  });

  test("the veRL step: lengths and batch size from the overrides, k = 1, one algorithm each", () => {
    const path = writeExperiment(
      [
        "apiVersion: openforge.dev/v1", "kind: Experiment", "metadata: {name: lengths}", "spec:",
        "  policy: {model: m, upstreams: ['http://vllm:8000'], mode: train}", "  harness: {name: codex}",
        "  environment: {tasks: [{id: a, instruction: x, test: 'true'}, {id: b, instruction: y, test: 'true'}, {id: c, instruction: z, test: 'true'}]}",
        "  rollouts: {k: 1}",
        "  training: {algorithm: ppo, overrides: [data.max_prompt_length=4096, data.train_batch_size=2, actor_rollout_ref.rollout.agent.num_workers=2]}", "",
      ].join("\n"),
    );
    const objects = render(path);
    const args: string[] = template(objects, "train-0").container.args;
    expect(args).toContain("algorithm.adv_estimator=gae");
    expect(args).toContain("critic.model.path=m");
    expect(args).toContain("actor_rollout_ref.rollout.prompt_length=4096");
    expect(args).toContain("actor_rollout_ref.actor.ppo_max_token_len_per_gpu=20480");
    expect(args).toContain("actor_rollout_ref.actor.ppo_mini_batch_size=2");
    expect(args).toContain("actor_rollout_ref.rollout.n=1");
    expect(args.filter((a) => a.startsWith("data.train_batch_size="))).toEqual(["data.train_batch_size=2"]);
    expect(args.filter((a) => a.startsWith("actor_rollout_ref.rollout.agent.num_workers="))).toEqual(["actor_rollout_ref.rollout.agent.num_workers=2"]);
    expect(template(objects, "train-0").initContainers[0].args.slice(-2)).toEqual(["--train-batch-size", "2"]);
    const exported = template(objects, "export").container.args;
    expect(exported.slice(4, 8)).toEqual(["--group-rows", "1", "--min-group-size", "1"]);
    for (const object of objects) expect(() => new MODELS[object.kind]!(object as never).validate()).not.toThrow();
  });

  test("export, weight sync, report, exit handler and podGC use the project's real commands", () => {
    const objects = render();
    const spec = byKind(objects, "WorkflowTemplate").spec;
    expect(spec.onExit).toBe("exit-handler");
    expect(spec.podGC.strategy).toBe("OnPodSuccess");
    const exported = template(objects, "export").container;
    expect([...exported.command, ...exported.args].join(" ")).toBe(
      "bun bin/forge.ts export --data /data --format verl --group-rows 4 --min-group-size 2 --max-group-rows 2 --max-prompt-length 8192 --max-response-length 16384 --experiment argo-fixture " +
        "--iteration {{inputs.parameters.iteration}} --out /data/exports/{{workflow.name}}/iteration-{{inputs.parameters.iteration}}/batch.parquet",
    );
    const sync = template(objects, "sync").container.args;
    expect(sync.slice(0, 5)).toEqual(["sync", "--proxy", "http://argo-fixture-proxy.forge.svc:8080", "--strategy", "update-from-disk"]);
    expect(sync).toContain("http://vllm-1.inference:8000");
    const report = template(objects, "report");
    expect(report.inputs.artifacts).toBeUndefined();
    expect(report.container.args.slice(0, 5)).toEqual(["report", "--plan-dir", "/data/plans/{{inputs.parameters.run}}/iteration-{{inputs.parameters.iteration}}", "--results-dir", "/data/results/{{inputs.parameters.run}}/iteration-{{inputs.parameters.iteration}}"]);
    // Every bun command names a file of this repository, and every forge subcommand exists.
    const forgeCommands = forgeSubcommands();
    for (const t of templates(objects)) {
      for (const c of [t.container, ...(t.containerSet?.containers ?? [])].filter(Boolean)) {
        if (c.command[0] !== "bun") continue;
        expect(existsSync(join(import.meta.dir, "..", "..", c.command[1].replace(/^\/app\//, "")))).toBe(true);
        if (c.command[1] === "bin/forge.ts") expect(forgeCommands).toContain(c.command[2]);
      }
    }
    const proxy = byKind(objects, "Deployment").spec.template.spec.containers[0];
    expect(forgeCommands).toContain(proxy.command[2]);
  });

  test("Argo UI: description, title, labels; commit becomes parameter and label", () => {
    const path = FIXTURE;
    const objects = renderExperiment(parseExperimentFile(path), { namespace: "forge", experimentPath: path, commit: "3f2a9c1" });
    const workflow = byKind(objects, "Workflow");
    expect(workflow.metadata.annotations["workflows.argoproj.io/description"]).toBe("command on Qwen/Qwen3-0.6B (train), ./tasks × k=4, 2 iterations");
    expect(workflow.metadata.labels).toMatchObject({ "openforge.dev/experiment": "argo-fixture", "openforge.dev/commit": "3f2a9c1", team: "rl" });
    expect(workflow.spec).toEqual({ workflowTemplateRef: { name: "argo-fixture" }, arguments: { parameters: [{ name: "commit", value: "3f2a9c1" }] } });
    expect(template(objects, "iteration-0").metadata.labels["openforge.dev/iteration"]).toBe("0");
  });

  test("proxy: Deployment (Recreate, upstreams, token from the Secret), Service, NetworkPolicy to proxy + DNS only", () => {
    const objects = render();
    const deployment = byKind(objects, "Deployment");
    expect(deployment.spec.strategy.type).toBe("Recreate");
    expect(deployment.spec.template.spec.containers).toHaveLength(1);
    expect(deployment.spec.template.spec.containers[0].args).toEqual([
      "--listen", "0.0.0.0:8080", "--data", "/data", "--mode", "train", "--engine", "auto",
      "--upstream", "http://vllm-0.inference:8000", "--upstream", "http://vllm-1.inference:8000",
      "--admin-token", "$(FORGE_ADMIN_TOKEN)",
      "--public-url", "http://argo-fixture-proxy.forge.svc:8080",
    ]);
    // Past Bun's default of 256 concurrent fetches the proxy's upstream calls would queue.
    expect(deployment.spec.template.spec.containers[0].env).toContainEqual({ name: "BUN_CONFIG_MAX_HTTP_REQUESTS", value: "4096" });
    expect(byKind(objects, "Service").spec.selector).toEqual(deployment.spec.selector.matchLabels);
    const policy = byKind(objects, "NetworkPolicy").spec;
    expect(policy.podSelector.matchLabels).toEqual({ "openforge.dev/experiment": "argo-fixture", "openforge.dev/role": "rollout" });
    expect(policy.policyTypes).toEqual(["Ingress", "Egress"]);
    expect(policy.egress[0].to[0].podSelector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    expect(policy.egress[1].ports).toEqual([{ protocol: "UDP", port: 53 }, { protocol: "TCP", port: 53 }]);
    expect(policy.egress).toHaveLength(2);
    const withApi = renderExperiment(parseExperimentFile(FIXTURE), { namespace: "forge", experimentPath: FIXTURE, apiServerCidrs: ["172.18.0.2/32"] });
    expect(byKind(withApi, "NetworkPolicy").spec.egress[2]).toEqual({ to: [{ ipBlock: { cidr: "172.18.0.2/32" } }], ports: [{ protocol: "TCP", port: 443 }, { protocol: "TCP", port: 6443 }] });
    // The harness gets no Kubernetes token; the Argo executor gets the workflow's own.
    expect(template(objects, "rollout")).toMatchObject({ automountServiceAccountToken: false, executor: { serviceAccountName: "argo-fixture-workflow" } });
    const config = byKind(objects, "ConfigMap");
    expect(Object.keys(config.data).sort()).toContain("tasks__count-lines__tests__test.sh");
    expect(parse(config.data["experiment.yaml"]).spec.environment.tasks).toBe("tasks");
    const volume = byKind(objects, "WorkflowTemplate").spec.volumes[1].configMap;
    expect(volume.items).toContainEqual({ key: "tasks__count-lines__tests__test.sh", path: "tasks/count-lines/tests/test.sh" });
  });

  test("no upstream: the policy simulator runs beside the proxy; eval mode has no training steps", () => {
    const path = writeExperiment(
      `apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: {name: evalonly}\nspec:\n  policy: {model: sim, simulator: {seed: 7}}\n  harness: {name: claude-code}\n  environment: {tasks: [{id: t1, instruction: "say hi", expected: hi}]}\n`,
    );
    const objects = render(path, "default");
    const containers = byKind(objects, "Deployment").spec.template.spec.containers;
    expect(containers.map((c: AnyTemplate) => c.name)).toEqual(["proxy", "policy-sim"]);
    expect(containers[0].args).toContain("http://127.0.0.1:8000");
    expect(containers[1].args).toEqual(["--listen", "127.0.0.1:8000", "--seed", "7", "--model", "sim"]);
    const names = templates(objects).map((t) => t.name);
    expect(names).toEqual(["experiment", "iteration-0", "plan", "rollout", "rollout-shard-workflow", "rollout-shard", "report", "analyze", "exit-handler"]);
    // The harness runs in the task's image; the harness comes from the bundle (the init container).
    expect(template(objects, "rollout").containerSet.containers[1].image).toBe("ghcr.io/openforge/task-base:0.1.0");
    expect(template(objects, "rollout").initContainers[0].image).toBe("ghcr.io/openforge/harness-bundle:0.1.0");
  });

  test("task files too large for a ConfigMap: the error says what to do", () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-argo-big-"));
    mkdirSync(join(dir, "tasks", "big"), { recursive: true });
    writeFileSync(join(dir, "tasks", "big", "instruction.md"), "x".repeat(1024 * 1024));
    writeFileSync(join(dir, "experiment.yaml"), `apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: {name: big}\nspec:\n  policy: {model: m}\n  harness: {name: codex}\n  environment: {tasks: tasks}\n`);
    expect(() => render(join(dir, "experiment.yaml"))).toThrow(/too large for a ConfigMap.*bake the tasks into spec\.environment\.image/);
  });
});

/** The `forge` subcommands, read from the dispatcher's table (so a renamed command fails here). */
function forgeSubcommands(): string[] {
  const source = readFileSync(join(import.meta.dir, "..", "..", "bin", "forge.ts"), "utf8");
  return [...source.matchAll(/^\s+"?([a-z-]+)"?: \{ summary:/gm)].map((m) => m[1]!);
}

test("the quickstart renders: simulator beside the proxy, records and exports, no veRL step (no weights)", () => {
  const quickstart = join(import.meta.dir, "..", "..", "examples", "quickstart", "experiment.yaml");
  const objects = renderExperiment(parseExperimentFile(quickstart), { namespace: "forge", experimentPath: quickstart });
  for (const object of objects) expect(() => new MODELS[object.kind]!(object as never).validate()).not.toThrow();
  expect(template(objects, "iteration-0").dag.tasks.map((t: AnyTemplate) => t.name)).toEqual(["plan", "rollouts", "shards", "report", "analyze", "export"]);
  const sim = byKind(objects, "Deployment").spec.template.spec.containers[1];
  expect(sim.args).toEqual(["--listen", "127.0.0.1:8000", "--seed", "7", "--model", "forge-sim/qwen3-sim", "--script", "/experiment/simulator.yaml"]);
  const config = byKind(objects, "ConfigMap");
  expect(config.data["simulator.yaml"]).toBe(readFileSync(join(import.meta.dir, "..", "..", "examples", "policies", "quickstart.yaml"), "utf8"));
  expect(Object.keys(config.data).filter((k) => k.endsWith("instruction.md"))).toHaveLength(5);
});

describe("checkpoints and weight sync (docs/argo.md)", () => {
  const TASKS = join(import.meta.dir, "..", "..", "workflows", "argo", "fixtures", "tasks");
  const experiment = (training: string) =>
    writeExperiment(`apiVersion: openforge.dev/v1
kind: Experiment
metadata: { name: sync }
spec:
  policy: { model: Qwen/Qwen3-8B, upstreams: ["http://vllm-0.inference:8000", "http://vllm-1.inference:8000"], mode: train, engine: vllm }
  harness: { name: command, command: [bash, -c, "true"] }
  environment: { tasks: ${TASKS} }
  training:
${training}
`);

  test("the trainer writes to a ReadWriteMany checkpoint claim, at the path the sync hands the servers", () => {
    const objects = render();
    const claims = objects.filter((o) => o.kind === "PersistentVolumeClaim") as any[];
    const checkpoints = claims.find((c) => c.metadata.name === "argo-fixture-checkpoints");
    expect(checkpoints.spec.accessModes).toEqual(["ReadWriteMany"]);
    expect(checkpoints.spec.resources.requests.storage).toBe("200Gi");
    const spec = byKind(objects, "WorkflowTemplate").spec;
    expect(spec.volumes).toContainEqual({ name: "checkpoints", persistentVolumeClaim: { claimName: "argo-fixture-checkpoints" } });
    const train = template(objects, "train-0").container;
    expect(train.volumeMounts).toContainEqual({ name: "checkpoints", mountPath: "/checkpoints" });
    expect(train.args).toContain("trainer.default_local_dir=/checkpoints/{{workflow.name}}");
    const sync = template(objects, "sync").container.args as string[];
    expect(sync.slice(sync.indexOf("--engine"), sync.indexOf("--engine") + 2)).toEqual(["--engine", "auto"]);
    expect(sync).toContain("--timeout-seconds");
  });

  test("inference servers in another namespace without a shared export: the render says why and how to fix it", () => {
    const path = experiment("    weightSync: { strategy: update-from-disk, namespace: inference }");
    expect(() => render(path)).toThrow(/a PersistentVolumeClaim can only be mounted in its own namespace: give spec.training.checkpoints.nfs/);
  });

  test("with an NFS export: a PersistentVolume and a claim in each namespace; restart gets RBAC in the servers' namespace", () => {
    const path = experiment(
      "    weightSync: { strategy: restart, namespace: inference, deployment: vllm, container: engine }\n    checkpoints: { nfs: { server: nfs.storage.svc, path: /exports/ckpt }, size: 500Gi }",
    );
    const objects = render(path);
    const volumes = objects.filter((o) => o.kind === "PersistentVolume") as any[];
    const claims = objects.filter((o) => o.kind === "PersistentVolumeClaim" && o.metadata.name === "sync-checkpoints") as any[];
    expect(volumes.map((v) => v.metadata.name)).toEqual(["sync-checkpoints-forge", "sync-checkpoints-inference"]);
    expect(claims.map((c) => c.metadata.namespace)).toEqual(["forge", "inference"]);
    for (const v of volumes) {
      new PersistentVolume(v).validate();
      expect(v.spec.nfs).toEqual({ server: "nfs.storage.svc", path: "/exports/ckpt" });
      expect(v.spec.persistentVolumeReclaimPolicy).toBe("Retain");
      const claim = claims.find((c) => c.metadata.namespace === v.spec.claimRef.namespace);
      expect(claim.spec.volumeName).toBe(v.metadata.name);
      expect(claim.spec.storageClassName).toBe("");
      new PersistentVolumeClaim(claim).validate();
    }
    const roles = objects.filter((o) => o.kind === "Role" && o.metadata.namespace === "inference") as any[];
    expect(roles).toHaveLength(1);
    expect(roles[0].rules).toEqual([{ apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "update", "patch"] }]);
    const binding = objects.find((o) => o.kind === "RoleBinding" && o.metadata.namespace === "inference") as any;
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "sync-workflow", namespace: "forge" }]);
    const sync = template(objects, "sync").container.args as string[];
    const flag = (name: string) => sync[sync.indexOf(name) + 1];
    expect([flag("--engine"), flag("--deployment"), flag("--deployment-namespace"), flag("--container"), flag("--checkpoint-claim"), flag("--checkpoint-mount")]).toEqual([
      "vllm",
      "vllm",
      "inference",
      "engine",
      "sync-checkpoints",
      "/checkpoints",
    ]);
  });
});

describe("forge render CLI", () => {
  const ROOT = join(import.meta.dir, "..", "..");
  const forge = async (...args: string[]) => {
    const run = Bun.spawn(["bun", "bin/forge.ts", "render", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
    return { stdout, stderr, code };
  };

  test("prints kubectl-applyable multi-document YAML; --out writes one file per object", async () => {
    const { stdout, code } = await forge(FIXTURE, "--namespace", "forge");
    expect(code).toBe(0);
    expect(parseAllDocuments(stdout).map((d) => d.toJS().kind)).toEqual(KINDS);
    const out = mkdtempSync(join(tmpdir(), "forge-render-out-"));
    expect((await forge(FIXTURE, "--out", out)).code).toBe(0);
    expect(readdirSync(out)).toHaveLength(KINDS.length);
  });

  test("an invalid experiment: exit 2, file:line:col and the field", async () => {
    const path = writeExperiment(`apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: {name: x}\nspec:\n  policy: {model: m}\n  harness: {name: codex}\n  environment: {tasks: t}\n  rollouts:\n    k: three\n`);
    const { stderr, code } = await forge(path);
    expect(code).toBe(2);
    expect(stderr.trim()).toBe(`forge render: ${path}:9:8: spec.rollouts.k: expected a positive integer, got "three"`);
  });
});

describe("a sharded proxy (spec.proxy.shards)", () => {
  test("a StatefulSet of N replicas, each its own volume and base URL; a headless Service; the export reads every shard's claim", async () => {
    const { StatefulSet } = await import("kubernetes-models/apps/v1/StatefulSet");
    const path = writeExperiment(readFileSync(FIXTURE, "utf8").replace("  rollouts:", "  proxy: {shards: 3, storage: {size: 20Gi, storageClassName: nfs}}\n  rollouts:").replace("./tasks", join(import.meta.dir, "..", "..", "workflows", "argo", "fixtures", "tasks")));
    const objects = render(path);
    expect(objects.map((o) => o.kind)).toEqual([...KINDS.slice(0, 6), "Service", "StatefulSet", ...KINDS.slice(7)]);
    expect(objects.some((o) => o.kind === "Deployment")).toBe(false);
    const set = byKind(objects, "StatefulSet");
    expect(() => new StatefulSet(set).validate()).not.toThrow();
    expect(set.spec).toMatchObject({ replicas: 3, serviceName: "argo-fixture-proxy-shards", podManagementPolicy: "Parallel" });
    expect(set.spec.volumeClaimTemplates[0].spec).toEqual({ accessModes: ["ReadWriteMany"], resources: { requests: { storage: "20Gi" } }, storageClassName: "nfs" });
    const proxy = set.spec.template.spec.containers[0];
    expect(proxy.args).toContain("--shard");
    expect(proxy.args.slice(proxy.args.indexOf("--shard"), proxy.args.indexOf("--shard") + 4)).toEqual(["--shard", "auto/3", "--shard-url", "http://argo-fixture-proxy-{i}.argo-fixture-proxy-shards.forge.svc:8080"]);
    expect(proxy.args).not.toContain("--public-url");
    expect(proxy.args[proxy.args.indexOf("--data") + 1]).toBe("/shard");
    expect(proxy.volumeMounts).toContainEqual({ name: "log", mountPath: "/shard" });
    const headless = objects.find((o) => o.kind === "Service" && o.metadata.name === "argo-fixture-proxy-shards") as any;
    expect(headless.spec).toMatchObject({ clusterIP: "None", publishNotReadyAddresses: true, selector: set.spec.selector.matchLabels });
    // The Service the pods register through still selects every replica.
    expect(objects.find((o) => o.kind === "Service" && o.metadata.name === "argo-fixture-proxy")).toBeDefined();
    const exported = template(objects, "export");
    expect(exported.container.args[exported.container.args.indexOf("--data") + 1]).toBe("/logs");
    expect(exported.volumes.filter((v: AnyTemplate) => v.persistentVolumeClaim).map((v: AnyTemplate) => v.persistentVolumeClaim.claimName)).toEqual(["log-argo-fixture-proxy-0", "log-argo-fixture-proxy-1", "log-argo-fixture-proxy-2"]);
    expect(exported.container.volumeMounts.filter((m: AnyTemplate) => m.mountPath.startsWith("/logs/")).map((m: AnyTemplate) => [m.mountPath, m.readOnly])).toEqual([
      ["/logs/shard-0", true],
      ["/logs/shard-1", true],
      ["/logs/shard-2", true],
    ]);
  });
});

describe("async iterations (training.async)", () => {
  const asyncFixture = (staleness: number) =>
    writeExperiment(
      readFileSync(FIXTURE, "utf8")
        .replace("iterations: 2", `iterations: 4\n    async: true\n    maxStaleness: ${staleness}`)
        .replace("./tasks", join(import.meta.dir, "..", "..", "workflows", "argo", "fixtures", "tasks")),
    );

  test("each iteration split into its rollouts and its step; iteration i+1's rollouts after step i-S only, steps in order", () => {
    const objects = render(asyncFixture(1));
    const entry = template(objects, "experiment");
    const order = Object.fromEntries(entry.dag.tasks.map((t: AnyTemplate) => [t.name, t.dependencies ?? []]));
    expect(order).toEqual({
      "iteration-0-rollouts": [],
      "iteration-0-train": ["iteration-0-rollouts"],
      "iteration-1-rollouts": ["iteration-0-rollouts"],
      "iteration-1-train": ["iteration-1-rollouts", "iteration-0-train"],
      "iteration-2-rollouts": ["iteration-1-rollouts", "iteration-0-train"],
      "iteration-2-train": ["iteration-2-rollouts", "iteration-1-train"],
      "iteration-3-rollouts": ["iteration-2-rollouts", "iteration-1-train"],
      "iteration-3-train": ["iteration-3-rollouts", "iteration-2-train"],
    });
    expect(template(objects, "iteration-2-rollouts").dag.tasks.map((t: AnyTemplate) => t.name)).toEqual(["plan", "rollouts", "shards", "report", "analyze"]);
    expect(template(objects, "iteration-2-rollouts").parallelism).toBe(16);
    const step = template(objects, "iteration-2-train").dag.tasks;
    expect(step[0]).toMatchObject({ name: "export" });
    expect(step[0].dependencies).toBeUndefined();
    expect(step.map((t: AnyTemplate) => t.name)).toContain("sync");
    const exported = template(objects, "export").container.args;
    expect(exported.slice(-4)).toEqual(["--train-version", "{{inputs.parameters.iteration}}", "--max-staleness", "1"]);
    for (const document of parseAllDocuments(manifestsToYaml(objects)).map((d) => d.toJS())) expect(() => new MODELS[document.kind]!(document as never).validate()).not.toThrow();
  });

  test("staleness 0 is the synchronous order; without async nothing changes", () => {
    const order = (path: string) => template(render(path), "experiment").dag.tasks.map((t: AnyTemplate) => `${t.name}<${(t.dependencies ?? []).join(",")}`);
    expect(order(asyncFixture(0))).toContain("iteration-1-rollouts<iteration-0-rollouts,iteration-0-train");
    expect(order(FIXTURE)).toEqual(["iteration-0<", "iteration-1<iteration-0"]);
  });
});
