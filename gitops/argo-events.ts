/**
 * Argo Events objects for commit-triggered runs: one EventSource that receives the
 * repo's push webhooks, and one Sensor per experiment that submits the experiment's
 * Workflow (from its WorkflowTemplate) when a push to the branch changes its file.
 *
 * No typed model package exists for Argo Events, so the subset we emit is described
 * by strict zod schemas that follow the v1alpha1 Go types field for field
 * (github.com/argoproj/argo-events/pkg/apis/events/v1alpha1); `validate*` rejects any
 * field the CRD does not define.
 */
import { z } from "zod";

const Name = z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "a DNS-1123 name (lowercase letters, digits, '-')");
const ObjectMeta = z
  .object({
    name: Name,
    namespace: Name.optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  })
  .strict();
const SecretKeySelector = z.object({ name: z.string(), key: z.string() }).strict();
const WebhookContext = z
  .object({
    endpoint: z.string().startsWith("/"),
    method: z.enum(["POST", "PUT"]),
    port: z.string().regex(/^\d+$/),
    url: z.string().optional(),
    authSecret: SecretKeySelector.optional(),
  })
  .strict();

export const EventSourceSchema = z
  .object({
    apiVersion: z.literal("argoproj.io/v1alpha1"),
    kind: z.literal("EventSource"),
    metadata: ObjectMeta,
    spec: z
      .object({
        service: z
          .object({ ports: z.array(z.object({ port: z.number().int(), targetPort: z.number().int() }).strict()).min(1) })
          .strict()
          .optional(),
        webhook: z.record(z.string(), WebhookContext).optional(),
        github: z
          .record(
            z.string(),
            z
              .object({
                repositories: z.array(z.object({ owner: z.string(), names: z.array(z.string()).min(1) }).strict()).min(1),
                webhook: WebhookContext,
                events: z.array(z.string()).min(1),
                apiToken: SecretKeySelector.optional(),
                webhookSecret: SecretKeySelector.optional(),
                insecure: z.boolean().optional(),
                active: z.boolean().optional(),
                contentType: z.enum(["json", "form"]).optional(),
              })
              .strict(),
          )
          .optional(),
      })
      .strict(),
  })
  .strict();

const DataFilter = z
  .object({ path: z.string().min(1), type: z.enum(["string", "number", "bool"]), value: z.array(z.string()).min(1) })
  .strict();
const ExprFilter = z
  .object({
    expr: z.string().min(1),
    fields: z.array(z.object({ name: z.string(), path: z.string() }).strict()).min(1),
  })
  .strict();
const TriggerParameter = z
  .object({
    src: z.object({ dependencyName: z.string(), dataKey: z.string() }).strict(),
    dest: z.string().min(1),
    operation: z.enum(["prepend", "append", "overwrite"]).optional(),
  })
  .strict();

export const SensorSchema = z
  .object({
    apiVersion: z.literal("argoproj.io/v1alpha1"),
    kind: z.literal("Sensor"),
    metadata: ObjectMeta,
    spec: z
      .object({
        template: z.object({ serviceAccountName: z.string() }).strict().optional(),
        dependencies: z
          .array(
            z
              .object({
                name: z.string(),
                eventSourceName: Name,
                eventName: z.string(),
                filtersLogicalOperator: z.enum(["and", "or"]).optional(),
                filters: z
                  .object({
                    dataLogicalOperator: z.enum(["and", "or"]).optional(),
                    data: z.array(DataFilter).optional(),
                    exprs: z.array(ExprFilter).optional(),
                  })
                  .strict()
                  .optional(),
              })
              .strict(),
          )
          .min(1),
        triggers: z
          .array(
            z
              .object({
                template: z
                  .object({
                    name: z.string(),
                    argoWorkflow: z
                      .object({
                        operation: z.enum(["submit", "resubmit", "resume", "retry", "suspend", "terminate", "stop"]),
                        source: z.object({ resource: z.record(z.string(), z.unknown()) }).strict(),
                        parameters: z.array(TriggerParameter).optional(),
                      })
                      .strict(),
                  })
                  .strict(),
                retryStrategy: z.object({ steps: z.number().int().positive() }).strict().optional(),
              })
              .strict(),
          )
          .min(1),
      })
      .strict(),
  })
  .strict();

export type EventSource = z.infer<typeof EventSourceSchema>;
export type Sensor = z.infer<typeof SensorSchema>;

/** The event source name, its event name and the port its webhook listens on. */
export const PUSH_EVENT = { eventSource: "openforge-git", event: "push", port: 12000, endpoint: "/push" } as const;

export type EventSourceSpec = {
  namespace: string;
  kind: "github" | "webhook";
  github?: { owner: string; repository: string };
};

/**
 * The EventSource that receives push events of the experiments repo.
 *
 * @example
 * buildEventSource({ namespace: "argo-events", kind: "webhook" }).spec.webhook?.push?.endpoint // "/push"
 */
export function buildEventSource(spec: EventSourceSpec): EventSource {
  const webhook = { endpoint: PUSH_EVENT.endpoint, method: "POST" as const, port: String(PUSH_EVENT.port) };
  const source: EventSource = {
    apiVersion: "argoproj.io/v1alpha1",
    kind: "EventSource",
    metadata: { name: PUSH_EVENT.eventSource, namespace: spec.namespace, labels: { "app.kubernetes.io/part-of": "openforge" } },
    spec: {
      service: { ports: [{ port: PUSH_EVENT.port, targetPort: PUSH_EVENT.port }] },
      ...(spec.kind === "github" && spec.github
        ? {
            github: {
              [PUSH_EVENT.event]: {
                repositories: [{ owner: spec.github.owner, names: [spec.github.repository] }],
                webhook,
                events: ["push"],
                apiToken: { name: "openforge-github", key: "token" },
                webhookSecret: { name: "openforge-github", key: "webhook-secret" },
                active: true,
                insecure: false,
                contentType: "json" as const,
              },
            },
          }
        : { webhook: { [PUSH_EVENT.event]: webhook } }),
    },
  };
  return EventSourceSchema.parse(source);
}

/** Escapes a path for use inside a regular expression. */
function regexLiteral(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

export type SensorSpec = {
  namespace: string;
  experimentName: string;
  /** Path of the experiment file in the repo, e.g. `experiments/quickstart.yaml`. */
  experimentPath: string;
  /** Repo paths (files or folders) the experiment reads: its tasks, its policy script (inputs.ts). */
  inputs?: string[];
  branch: string;
  /** The Workflow submitted on a matching push (it refers to the experiment's WorkflowTemplate). */
  workflow: Record<string, unknown>;
  /** Index of the `commit` parameter in `workflow.spec.arguments.parameters`. */
  commitParameterIndex: number;
};

/**
 * The Sensor that submits an experiment's Workflow when a push to `branch` adds or
 * modifies its experiment file, or adds, modifies or removes a file it reads (`inputs`), with the pushed commit SHA (`body.after`, sent by
 * GitHub, Gitea and GitLab alike) as the workflow's `commit` parameter and label.
 *
 * The file test matches a regex against the JSON of `body.commits.#.added` /
 * `.modified` (gjson paths, as Argo Events evaluates them).
 */
export function buildExperimentSensor(spec: SensorSpec): Sensor {
  const dependency = "push";
  const fileRegex = `"${regexLiteral(spec.experimentPath)}"`;
  // An input is a file or a folder: the path itself, or anything under it.
  const inputRegexes = (spec.inputs ?? []).map((input) => `"${regexLiteral(input)}(/[^"]*)?"`);
  const sensor: Sensor = {
    apiVersion: "argoproj.io/v1alpha1",
    kind: "Sensor",
    metadata: {
      name: `openforge-${spec.experimentName}`,
      namespace: spec.namespace,
      labels: { "app.kubernetes.io/part-of": "openforge", "openforge.dev/experiment": spec.experimentName },
      annotations: { "openforge.dev/experiment-path": spec.experimentPath },
    },
    spec: {
      template: { serviceAccountName: "openforge-sensor" },
      dependencies: [
        {
          name: dependency,
          eventSourceName: PUSH_EVENT.eventSource,
          eventName: PUSH_EVENT.event,
          filtersLogicalOperator: "and",
          filters: {
            exprs: [{ expr: `ref == "refs/heads/${spec.branch}"`, fields: [{ name: "ref", path: "body.ref" }] }],
            dataLogicalOperator: "or",
            data: [
              { path: "body.commits.#.added", type: "string", value: [fileRegex, ...inputRegexes] },
              { path: "body.commits.#.modified", type: "string", value: [fileRegex, ...inputRegexes] },
              // A task file removed changes the experiment too (its own removal unschedules it).
              ...(inputRegexes.length > 0 ? [{ path: "body.commits.#.removed", type: "string" as const, value: inputRegexes }] : []),
            ],
          },
        },
      ],
      triggers: [
        {
          template: {
            name: `submit-${spec.experimentName}`,
            argoWorkflow: {
              operation: "submit",
              source: { resource: spec.workflow },
              parameters: [
                { src: { dependencyName: dependency, dataKey: "body.after" }, dest: `spec.arguments.parameters.${spec.commitParameterIndex}.value` },
                { src: { dependencyName: dependency, dataKey: "body.after" }, dest: "metadata.labels.openforge\\.dev/commit" },
              ],
            },
          },
          retryStrategy: { steps: 3 },
        },
      ],
    },
  };
  return SensorSchema.parse(sensor);
}
