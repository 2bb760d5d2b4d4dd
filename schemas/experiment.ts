/**
 * The experiment file (`apiVersion: openforge.dev/v1`, `kind: Experiment`): its zod schema and
 * a parser whose errors name the file, the line:column and the field, e.g.
 * `experiments/foo.yaml:12:5: spec.rollouts.k: expected a positive integer, got "three"`.
 *
 * Every optional field has a default, so consumers (local executor, Argo builders, gitops)
 * read a fully populated `Experiment` and never re-decide defaults themselves.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { parseYamlAgainst } from "./yaml-file.ts";

/** A problem with an experiment file; `message` is `file:line:col: field: what is wrong`. */
export class ExperimentError extends Error {
  override name = "ExperimentError";
  constructor(
    message: string,
    /** Each problem found, already formatted with file, position and field. */
    readonly problems: string[] = [message],
  ) {
    super(message);
  }
}

const text = (what = "a non-empty string") => z.string({ error: `expected ${what}` }).min(1, { error: `expected ${what}` });
const positiveInt = () =>
  z.number({ error: "expected a positive integer" }).int({ error: "expected a positive integer" }).positive({ error: "expected a positive integer" });
const nonNegativeInt = () =>
  z.number({ error: "expected an integer ≥ 0" }).int({ error: "expected an integer ≥ 0" }).min(0, { error: "expected an integer ≥ 0" });
/** Kubernetes quantities ("500m", "2", "4Gi"); numbers are accepted and kept as strings. */
const quantity = (what: string) =>
  z
    .union([z.string(), z.number()], { error: `expected a Kubernetes quantity for ${what} (e.g. "2", "500m", "4Gi")` })
    .transform((value) => String(value))
    .refine((value) => /^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/.test(value), {
      error: `expected a Kubernetes quantity for ${what} (e.g. "2", "500m", "4Gi")`,
    });
/** RFC 1123 label: the experiment name becomes part of Kubernetes object names. */
const dnsLabel = () =>
  z
    .string({ error: "expected a name" })
    .max(40, { error: "expected at most 40 characters (it prefixes Kubernetes object names)" })
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, {
      error: "expected lower-case letters, digits and '-' (a Kubernetes name), starting and ending with a letter or digit",
    });

export const HARNESS_NAMES = ["codex", "claude-code", "opencode", "qwen-code", "pi", "openclaw", "command", "forge-react"] as const;
export const TRAINING_ALGORITHMS = ["grpo", "ppo", "rloo", "reinforce_plus_plus", "remax", "gpg"] as const;

/** An inline task (also the shape of one line of a JSONL task list). */
export const TaskSpecSchema = z.strictObject({
  id: text("a task id"),
  instruction: text("the task instruction"),
  /** Files to create in the rollout workspace, path → content. */
  files: z.record(z.string(), z.string()).default({}),
  /** Verifier script (bash), run on a copy of the workspace like a task's tests/test.sh. */
  test: z.string().optional(),
  /** For prompt tasks without a test: the reward is 1 when the final answer contains this. */
  expected: z.string().optional(),
  /** Where `test`'s reward comes from: its exit code (default for an inline test) or `$FORGE_LOGS/reward.txt|json`. */
  reward: z.enum(["exit-code", "file"], { error: 'expected "exit-code" or "file"' }).optional(),
  /** The rewards `test` may give, [min, max] (default [0, 1]); one outside it is a verifier error. */
  rewardRange: z.tuple([z.number(), z.number()], { error: "expected [min, max]" }).optional(),
  timeoutSeconds: positiveInt().optional(),
  /** The harness gets a headless browser to drive (docs/gui.md); a site needs a task directory. */
  browser: z.boolean({ error: "expected true or false" }).optional(),
  metadata: z.record(z.string(), z.unknown()).default({}),
});
export type TaskSpec = z.infer<typeof TaskSpecSchema>;

const SimulatorSchema = z.strictObject({
  seed: nonNegativeInt().default(0),
  /** Path (relative to the experiment file) to a simulator script; see simulator/. */
  script: z.string().optional(),
  /**
   * The server the simulator stands in for: vLLM with --tool-call-parser hermes serving Qwen3
   * (default) or qwen3_coder serving Qwen3-Coder's template (the default with tokenIn.modelDir
   * qwen3-coder). The simulator's own list: simulator/model.ts SIM_TOOL_PARSERS.
   */
  toolCallParser: z.enum(["hermes", "qwen3_coder"], { error: 'expected "hermes" or "qwen3_coder"' }).optional(),
});

/** Token-in mode's model (docs/token-in.md): what the proxy renders and parses with, as the engine is started. */
const TokenInSchema = z.strictObject({
  /** The served model's directory (tokenizer.json, tokenizer_config.json); "qwen3": the Qwen3 files OpenForge ships (the simulator's, the default without upstreams). */
  modelDir: text("a model directory").optional(),
  /** vLLM's --tool-call-parser the engine runs with (default: the model's; hermes for Qwen3, qwen3_coder for qwen3-coder). */
  toolParser: text("a tool-call parser name").optional(),
  /** vLLM's --reasoning-parser (default: the model's; qwen3 for Qwen3, none for qwen3-coder). */
  reasoningParser: text("a reasoning parser name").optional(),
  /** The engine's context length (default: its /v1/models max_model_len). */
  maxModelLen: positiveInt().optional(),
  /** Where a vLLM engine gets the calls: "auto" (default: generate where served), "completions" (/v1/completions) or "generate" (/inference/v1/generate, vLLM started with --enable-scale-out). */
  route: z.enum(["auto", "completions", "generate"], { error: 'expected "auto" (the default: generate where the engine serves it), "completions" or "generate" (vLLM\'s /inference/v1/generate, served with --enable-scale-out)' }).optional(),
});

const PolicySchema = z.strictObject({
  model: text("a model name"),
  /** Inference servers (vLLM / SGLang / any OpenAI-compatible API). Empty → the policy simulator. */
  upstreams: z.array(z.url({ error: "expected a URL (e.g. http://vllm:8000)" })).default([]),
  mode: z.enum(["train", "eval"], { error: 'expected "train" or "eval"' }).default("eval"),
  /**
   * The inference engine of the upstreams (docs/engines.md): how the proxy asks for token ids and
   * how weight sync loads a checkpoint. auto: each server says who it is.
   */
  engine: z.enum(["vllm", "sglang", "auto"], { error: 'expected "vllm", "sglang" or "auto"' }).default("auto"),
  simulator: SimulatorSchema.default({ seed: 0 }),
  /**
   * Who renders prompts into token ids (docs/token-in.md). engine (default): the engine renders
   * each request and the proxy records its ids (any model, vision models, vendor APIs).
   * token-in: the proxy renders with the model's tokenizer and template (tokenIn), keeps each
   * conversation's ids canonical across calls and sends the engine token ids (train mode).
   */
  tokenMode: z.enum(["engine", "token-in"], { error: 'expected "engine" or "token-in"' }).default("engine"),
  tokenIn: TokenInSchema.optional(),
}).superRefine((policy, ctx) => {
  if (policy.tokenMode !== "token-in") {
    if (policy.tokenIn) ctx.addIssue({ code: "custom", path: ["tokenIn"], message: "tokenIn configures token-in mode: set tokenMode: token-in (or leave tokenIn out)" });
    return;
  }
  if (policy.mode !== "train") ctx.addIssue({ code: "custom", path: ["tokenMode"], message: "token-in mode records the ids it renders for training: it needs mode: train" });
  if (policy.upstreams.length > 0 && !policy.tokenIn?.modelDir) {
    ctx.addIssue({ code: "custom", path: ["tokenIn", "modelDir"], message: "token-in mode with inference servers needs the served model's directory (tokenizer.json, tokenizer_config.json)" });
  }
});

const HarnessSchema = z
  .strictObject({
    name: z.enum(HARNESS_NAMES, { error: `expected one of ${HARNESS_NAMES.join(", ")}` }),
    options: z.record(z.string(), z.unknown()).default({}),
    /**
     * The harness bundle image (Kubernetes only): its /opt/forge is copied into each rollout pod
     * and the harness and verifier run from it inside the task's image (images/harness-bundle;
     * default ghcr.io/openforge/harness-bundle:0.1.0, docs/argo.md "Images").
     */
    image: z.string().min(1).optional(),
    /** argv of the program, for `name: command`. */
    command: z.array(z.string(), { error: "expected a list of strings (the argv)" }).min(1).optional(),
  })
  .superRefine((harness, ctx) => {
    if (harness.name === "command" && !harness.command) {
      ctx.addIssue({ code: "custom", path: ["command"], message: 'harness "command" needs command: [argv...]' });
    }
  });

const EnvironmentSchema = z.strictObject({
  /** A task directory, a .jsonl file (relative to the experiment file), or an inline list. */
  tasks: z.union([text("a task directory or .jsonl path"), z.array(TaskSpecSchema).min(1)], {
    error: "expected a task directory path, a .jsonl file path, or a list of tasks",
  }),
  /**
   * Image a task runs in when it names none of its own (task.toml `docker_image`, an
   * environment/Dockerfile); Kubernetes only. The harness and the verifier are copied in from
   * the harness bundle (harness.image). The default is built from images/task-base (docs/argo.md, "Images").
   */
  image: z.string().min(1).default("ghcr.io/openforge/task-base:0.1.0"),
  /**
   * Repository `forge images build` pushes the tasks' environment/Dockerfile images to, each as
   * REGISTRY:env-HASH (the environment folder's hash); needed by tasks with a Dockerfile on Kubernetes.
   */
  registry: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._\-/:]*[a-z0-9]$/, { error: "expected an image repository without a tag, e.g. registry.example.com/forge-tasks" })
    .refine((value) => !/:[^/]*$/.test(value) || /^[^/]+:\d+\/.+/.test(value), { error: "expected an image repository without a tag (the tag is each environment's hash)" })
    .optional(),
  /** The headless browser of browser tasks (`task.toml [environment] browser = true`, docs/gui.md). */
  browser: z
    .strictObject({
      /**
       * Chromium's binary; default the first of chromium, chromium-browser, google-chrome on PATH.
       * Required on Argo: Chromium's path in spec.harness.image (docs/gui.md, "On Argo").
       */
      executablePath: text("a path to Chromium").optional(),
      /** The viewport in CSS pixels, which is the screenshots' size. */
      viewport: z.string().regex(/^[1-9]\d{1,4}x[1-9]\d{1,4}$/, { error: 'expected WIDTHxHEIGHT, e.g. "1280x720"' }).default("1280x720"),
    })
    .default({ viewport: "1280x720" }),
});

const RolloutsSchema = z.strictObject({
  k: positiveInt().default(1),
  parallelism: positiveInt().default(4),
  timeoutSeconds: positiveInt().default(600),
  /** Retries for infrastructure errors only (pod evicted, image pull, node lost); never for a failed task. */
  infraRetries: nonNegativeInt().default(2),
  /**
   * The harness and verify containers' requests (memory also their limit) on Kubernetes. Unset:
   * 1 CPU and 2Gi, and 3Gi for the harness of a browser experiment (Chromium beside the harness,
   * docs/gui.md "On Argo"); what is set here applies to every rollout.
   */
  resources: z
    .strictObject({
      cpu: quantity("cpu").optional(),
      memory: quantity("memory").optional(),
      /**
       * Local executor: what the workspace and HOME may hold together (default 10Gi); past it the
       * harness is killed and the rollout ends failed with a "disk limit" error.
       */
      disk: quantity("disk").optional(),
      /** Local executor, sandboxed: the size of the sandbox's /tmp, a tmpfs (default 1Gi). */
      tmp: quantity("tmp").optional(),
    })
    .default({}),
  sandbox: z.enum(["auto", "bwrap", "none"], { error: 'expected "auto", "bwrap" or "none"' }).default("auto"),
  /**
   * On Argo, an iteration with more rollouts than this runs them in child Workflows of at most
   * this many each, so no Workflow object's node status outgrows what Kubernetes stores
   * (docs/argo.md, "Scale"). 1,000 keeps a child's status (retries included) under Argo's
   * 1 MiB once compressed; raise it only with node status offloading.
   */
  maxPerWorkflow: positiveInt().default(1000),
});

const WeightSyncSchema = z.strictObject({
  /**
   * update-from-disk: each inference server loads the new checkpoint in place through its own
   * API (SGLang /update_weights_from_disk; vLLM /pause, /collective_rpc reload_weights,
   * /resume with VLLM_SERVER_DEV_MODE=1); restart: roll the inference Deployment with its
   * FORGE_CHECKPOINT pointing at the checkpoint; none: keep serving the old weights
   * (evaluation of a fixed policy). docs/engines.md and docs/argo.md.
   */
  strategy: z.enum(["update-from-disk", "restart", "none"], { error: 'expected "update-from-disk", "restart" or "none"' }).default("update-from-disk"),
  /** Inference servers to load into (each one, not a Service in front of several); defaults to policy.upstreams. */
  servers: z.array(z.url({ error: "expected a URL" })).optional(),
  /** Deployment rolled by strategy restart. */
  deployment: z.string().optional(),
  /** Namespace of the inference servers (default: the experiment's). */
  namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { error: "expected a Kubernetes namespace name" }).optional(),
  /** The Deployment's container that serves the model (strategy restart; default its first). */
  container: z.string().min(1).optional(),
  timeoutSeconds: positiveInt().default(600),
});

/**
 * Where veRL writes checkpoints and the inference servers load them from: one
 * ReadWriteMany volume both sides mount at `mountPath` (docs/argo.md, "Checkpoints").
 */
const CheckpointsSchema = z.strictObject({
  /** The path of the volume in the trainer and in every inference server. */
  mountPath: z.string().regex(/^\/[^\s]*$/, { error: "expected an absolute path" }).default("/checkpoints"),
  size: quantity("checkpoint storage").default("200Gi"),
  /** A ReadWriteMany storage class (NFS, CephFS, a cloud file store). */
  storageClassName: z.string().optional(),
  /**
   * An NFS export both namespaces bind a claim to, for inference servers in another namespace
   * than the experiment (a claim can only be mounted in its own namespace).
   */
  nfs: z.strictObject({ server: text("the NFS server"), path: z.string().regex(/^\//, { error: "expected the export's absolute path" }) }).optional(),
});

/** Environment variables of the veRL step that forge sets itself (workflows/argo/workflow.ts). */
export const TRAIN_ENV_RESERVED = ["PYTHONPATH", "HYDRA_FULL_ERROR", "TENSORBOARD_DIR", "WANDB_RUN_ID", "WANDB_RESUME", "WANDB_DIR"] as const;

/** One environment variable of the train step from a Kubernetes Secret (never its value in the experiment). */
const SecretEnvSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: "expected an environment variable name (letters, digits, _)" }).refine((name) => !(TRAIN_ENV_RESERVED as readonly string[]).includes(name), {
    error: `forge sets this variable itself (${TRAIN_ENV_RESERVED.join(", ")})`,
  }),
  /** The Secret, in the experiment's namespace. */
  secret: z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { error: "expected a Secret name" }),
  key: z.string().regex(/^[-._a-zA-Z0-9]+$/, { error: "expected a key of the Secret" }),
});

const TrainingSchema = z.strictObject({
  algorithm: z.enum(TRAINING_ALGORITHMS, { error: `expected one of ${TRAINING_ALGORITHMS.join(", ")}` }).default("grpo"),
  iterations: positiveInt().default(1),
  /**
   * The veRL step's image: veRL 0.9.1 with its verl-core extra on veRL's CUDA image
   * (images/verl; veRL's own images uninstall veRL itself, docs/argo.md "Images").
   */
  verlImage: z.string().min(1).default("ghcr.io/openforge/verl:0.9.1"),
  /** Hydra overrides passed to `python -m verl.trainer.main_ppo`, e.g. `actor_rollout_ref.actor.optim.lr=1e-6`. */
  overrides: z
    .array(z.string().regex(/^[+~]{0,2}[A-Za-z0-9_.\-/]+=/, { error: "expected a hydra override key=value" }), {
      error: "expected a list of hydra overrides (key=value)",
    })
    .default([]),
  gpus: positiveInt().default(1),
  /**
   * An iteration trains when at least this share of its groups (tasks) kept all k samples;
   * groups short of k (lost rollouts, infrastructure errors) are dropped and counted. Below it
   * the iteration fails.
   */
  minGroupFraction: z.number({ error: "expected a number in (0, 1]" }).gt(0, { error: "expected a number in (0, 1]" }).max(1, { error: "expected a number in (0, 1]" }).default(0.5),
  /**
   * veRL checkpoints (`global_step_N`) kept on the data volume after each iteration's step, newest
   * first; older ones are deleted. At least 1: the next iteration resumes from the newest.
   */
  keepCheckpoints: positiveInt().default(3),
  /**
   * Asynchronous iterations (docs/scale.md, "Async iterations"): the rollouts of iteration i+1
   * run while iteration i trains, each call recording the policy version that served it; a
   * step trains only on rollouts served at most `maxStaleness` versions behind it.
   */
  async: z.boolean({ error: "expected true or false" }).default(false),
  /** Versions a rollout may lag the step that trains on it (with `async`; 0 is synchronous). */
  maxStaleness: nonNegativeInt().default(1),
  /**
   * `forge run`: the command that trains one iteration on this machine (its exported batch in
   * $FORGE_BATCH, its GRPO group dataset in $FORGE_GROUPS, the checkpoint to write in
   * $FORGE_CHECKPOINT); iterations after the first run only with it (docs/local-executor.md).
   */
  localCommand: z.array(z.string().min(1), { error: "expected a command as a list of strings" }).min(1).optional(),
  /**
   * veRL's trackers (`trainer.logger`): console and TensorBoard (on the data volume, one run per
   * Workflow) by default; `wandb` needs WANDB_API_KEY from a Secret in `secretEnv`. One run
   * across iterations either way (docs/metrics.md, "Training curves").
   */
  trackers: z
    .array(z.enum(["console", "tensorboard", "wandb"], { error: 'expected "console", "tensorboard" or "wandb"' }))
    .min(1)
    .default(["console", "tensorboard"]),
  /** The train step's environment from Kubernetes Secrets, e.g. `{name: WANDB_API_KEY, secret: wandb, key: api-key}`. */
  secretEnv: z.array(SecretEnvSchema).default([]),
  weightSync: WeightSyncSchema.default({ strategy: "update-from-disk", timeoutSeconds: 600 }),
  checkpoints: CheckpointsSchema.default({ mountPath: "/checkpoints", size: "200Gi" }),
});

const MetricsSchema = z.strictObject({
  k: z.array(positiveInt(), { error: "expected a list of positive integers" }).min(1).default([1]),
  /** A rollout passes when reward ≥ passThreshold. */
  passThreshold: z.number({ error: "expected a number" }).default(1),
  /**
   * A task with fewer valid trials than k (infra errors, unfinished rollouts): `exclude` leaves it
   * out of pass@k / pass^k and the figures say how many tasks they score; `fail` counts each
   * missing trial as a failure, as tau-bench does (docs/metrics.md).
   */
  missingTrials: z.enum(["exclude", "fail"], { error: 'expected "exclude" or "fail"' }).default("exclude"),
  /**
   * On Argo, each iteration's analyze step saves the HTML report, the pass@k table and the
   * analysis as output artifacts the UI shows (docs/argo.md, "Analyse a run"); that needs an
   * artifact repository configured for the namespace (without one that step ends in Error, which
   * the run continues past). false: figures and gauges only.
   */
  argoArtifacts: z.boolean({ error: "expected true or false" }).default(true),
});

const ProxySchema = z.strictObject({
  /** Image with this project (`bun bin/forge.ts …`); also runs the plan, verify and export steps. */
  image: z.string().min(1).default("ghcr.io/openforge/forge:0.1.0"),
  port: z.number({ error: "expected a port number" }).int().min(1).max(65535, { error: "expected a port 1–65535" }).default(8080),
  /**
   * Proxy shards, each its own process (on Kubernetes a StatefulSet replica) with its own log
   * and volume, owning the rollouts hashed to it (docs/scale.md, "A sharded proxy").
   */
  shards: positiveInt().default(1),
  /**
   * The largest request body the proxy takes (`forge proxy --max-body-bytes`; unset: the proxy's
   * default, 32 MiB). Harnesses resend every screenshot of a conversation on every call: raise
   * it for long browser sessions on image-heavy pages (docs/gui.md, "Size limits").
   */
  maxBodyBytes: positiveInt().optional(),
  /** The volume the proxy records to and training reads from (ReadWriteMany on a cluster). */
  storage: z
    .strictObject({ size: quantity("storage").default("50Gi"), storageClassName: z.string().optional() })
    .default({ size: "50Gi" }),
});

export const ExperimentSpecSchema = z
  .strictObject({
    policy: PolicySchema,
    harness: HarnessSchema,
    environment: EnvironmentSchema,
    rollouts: RolloutsSchema.default(RolloutsSchema.parse({})),
    training: TrainingSchema.default(TrainingSchema.parse({})),
    metrics: MetricsSchema.default(MetricsSchema.parse({})),
    proxy: ProxySchema.default(ProxySchema.parse({})),
  })
  .superRefine((spec, ctx) => {
    const { trackers, secretEnv } = spec.training;
    if (trackers.includes("wandb") && !secretEnv.some((e) => e.name === "WANDB_API_KEY")) {
      ctx.addIssue({ code: "custom", path: ["training", "trackers"], message: "wandb needs its key: add {name: WANDB_API_KEY, secret: SECRET, key: KEY} to training.secretEnv" });
    }
    spec.metrics.k.forEach((k, index) => {
      if (k > spec.rollouts.k) {
        ctx.addIssue({ code: "custom", path: ["metrics", "k", index], message: `pass@${k} needs rollouts.k ≥ ${k} (rollouts.k is ${spec.rollouts.k})` });
      }
    });
  });

export const ExperimentSchema = z.strictObject({
  apiVersion: z.literal("openforge.dev/v1", { error: 'expected "openforge.dev/v1"' }),
  kind: z.literal("Experiment", { error: 'expected "Experiment"' }),
  metadata: z.strictObject({
    name: dnsLabel(),
    labels: z.record(z.string(), z.string({ error: "expected a string label value" })).optional(),
  }),
  spec: ExperimentSpecSchema,
});

/** A parsed experiment with every default filled in. */
export type Experiment = z.infer<typeof ExperimentSchema>;
/** What a user may write (defaults not yet applied). */
export type ExperimentInput = z.input<typeof ExperimentSchema>;

/**
 * Reads and validates an experiment file.
 *
 * @example
 * const experiment = parseExperimentFile("examples/quickstart/experiment.yaml");
 * experiment.spec.rollouts.k; // 1 unless the file says otherwise
 */
export function parseExperimentFile(path: string): Experiment {
  let source: string;
  try {
    source = readFileSync(path, "utf8");
  } catch (error) {
    throw new ExperimentError(`${path}: cannot read the experiment file: ${(error as Error).message}`);
  }
  return parseExperimentText(source, path);
}

/**
 * Validates experiment YAML; `path` is only used in messages.
 *
 * @example
 * parseExperimentText("apiVersion: openforge.dev/v1\nkind: Experiment\n...", "inline.yaml");
 */
export function parseExperimentText(source: string, path: string): Experiment {
  const result = parseYamlAgainst(ExperimentSchema, source, path, "a YAML mapping with apiVersion, kind, metadata and spec");
  if (!result.ok) throw new ExperimentError(result.problems.join("\n"), result.problems);
  return result.data;
}
