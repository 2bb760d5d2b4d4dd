/**
 * Argo's and Kubernetes' size limits, and a check of a rendered experiment against them at a
 * given number of rollouts: what the Workflow becomes at run time (every parameter and output
 * substituted, each fan-out expanded, every child Workflow created, the node status Argo stores)
 * measured against what Argo v4.1.2 and the API server accept (docs/argo.md, "Scale").
 *
 * The limits, from the sources:
 *
 * - `workflow/executor/executor.go` (CaptureScriptResult): a step's stdout becomes
 *   `outputs.result` minus anything before its last 256 KiB.
 * - `workflow/common/common.go` MaxEnvVarLen = 131072 and `workflow/controller/workflowpod.go`:
 *   a container's args (as JSON) or the template the executor gets in ARGO_TEMPLATE (the
 *   template with its inputs substituted, raw artifacts included) over 128 KiB is moved into a
 *   ConfigMap, which Kubernetes caps at 1 MiB of data (before 3.6 it was an env var and exec
 *   failed with "argument list too long": Linux's MAX_ARG_STRLEN is the same 128 KiB).
 * - `workflow/packer/packer.go`: a Workflow whose JSON is over MAX_WORKFLOW_SIZE (default
 *   1 MiB) has its nodes compressed (gzip + base64 into `status.compressedNodes`); still over,
 *   and the update fails unless node status offloading is on.
 * - The API server stores objects in etcd, whose default request limit is 1.5 MiB; every
 *   object is held under 1 MiB here (what Argo's own packer uses), and label values under 63.
 */
import { gzipSync } from "node:zlib";
import { parse } from "yaml";
import type { KubeObject } from "../../workflows/argo/render.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

export const ARGO_LIMITS = {
  /** `outputs.result`: only the last 256 KiB of stdout are kept (executor.go). */
  stdoutResultBytes: 256 * KiB,
  /** Container args (JSON) or ARGO_TEMPLATE over this are offloaded to a ConfigMap (common.go MaxEnvVarLen). */
  inlineBytes: 128 * KiB,
  /** Kubernetes: a ConfigMap holds at most 1 MiB of data (the offload ConfigMap, the experiment's). */
  configMapBytes: MiB,
  /** Argo's MAX_WORKFLOW_SIZE default: a Workflow's JSON, after compressing its nodes (packer.go). */
  workflowBytes: MiB,
  /** Every object kept under this (etcd's request limit is 1.5 MiB). */
  objectBytes: MiB,
  /** Linux MAX_ARG_STRLEN: one argv or environment string. */
  argStringBytes: 128 * KiB,
  /** Linux ARG_MAX with the default 8 MiB stack: argv and environment together. */
  argTotalBytes: 2 * MiB,
  /** Kubernetes label values. */
  labelValueChars: 63,
} as const;

/** One measured quantity against its limit. */
export type LimitCheck = { subject: string; what: string; value: number; limit: number; ok: boolean };

/** The node status one Workflow object carries at the end of the iteration, worst case (every retry used). */
export type WorkflowStatusSize = {
  workflow: string;
  /** Pod nodes, retries included. */
  pods: number;
  nodes: number;
  /** JSON of `status.nodes`. */
  nodesBytes: number;
  /** `status.compressedNodes`: gzip + base64 of that JSON, as packer.go writes it. */
  compressedBytes: number;
  /** The whole Workflow object as Argo stores it (nodes compressed when over MAX_WORKFLOW_SIZE). */
  objectBytes: number;
};

export type ScaleReport = { checks: LimitCheck[]; workflows: WorkflowStatusSize[]; violations: LimitCheck[] };

/** What the steps produce at run time, which the rendered objects only refer to. */
export type RuntimeValues = {
  /** Output parameter values by template name, then parameter name (e.g. plan → shards). */
  outputs: Record<string, Record<string, string>>;
  /** Each step's stdout by template name, where a template's `outputs.result` is used. */
  stdout?: Record<string, string>;
  /** Retries a pod node may use (rollouts.infraRetries); every one is counted as used. */
  retries: number;
};

type Template = Record<string, any>;
type Vars = Map<string, string>;
type Node = Record<string, unknown>;

const bytes = (value: unknown) => Buffer.byteLength(typeof value === "string" ? value : JSON.stringify(value));

/** Replaces `{{ name }}` for every name in `vars`; other expressions are left as they are. */
function substitute(text: string, vars: Vars, escape = (value: string) => value): string {
  return text.replace(/\{\{\s*([^{}=\s][^{}]*?)\s*\}\}/g, (whole, name: string) => {
    const value = vars.get(name);
    return value === undefined ? whole : escape(value);
  });
}

/** A template with its variables substituted; inside its JSON, values are JSON-escaped (as Argo's substitution does). */
const resolve = <T>(value: T, vars: Vars): T => JSON.parse(substitute(JSON.stringify(value), vars, (v) => JSON.stringify(v).slice(1, -1))) as T;

/** A deterministic pseudo-random source, so the status estimate is the same on every run. */
function prng(seed: number) {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

/**
 * Checks rendered objects at run time: substitutes every parameter and output (the plan's, from
 * `runtime`), expands every fan-out, follows resource steps into the child Workflows they
 * create, and measures each object, parameter, container argument list, ARGO_TEMPLATE and
 * Workflow status against ARGO_LIMITS.
 *
 * @example
 * const report = checkArgoLimits(renderExperiment(experiment, options), { outputs: { plan: planOutputs(manifest) }, retries: 2 });
 * report.violations // []
 */
export function checkArgoLimits(objects: KubeObject[], runtime: RuntimeValues): ScaleReport {
  const checks: LimitCheck[] = [];
  const check = (subject: string, what: string, value: number, limit: number) => checks.push({ subject, what, value, limit, ok: value <= limit });
  const template = objects.find((o) => o.kind === "WorkflowTemplate") as (KubeObject & { spec: Template }) | undefined;
  const workflow = objects.find((o) => o.kind === "Workflow") as (KubeObject & { spec: Template }) | undefined;
  if (!template || !workflow) throw new Error("checkArgoLimits: the objects hold no WorkflowTemplate and Workflow (pass what renderExperiment returns)");
  const templates = new Map<string, Template>((template.spec.templates as Template[]).map((t) => [t.name as string, t]));
  const namespace = workflow.metadata.namespace ?? "default";

  for (const object of objects) {
    const name = `${object.kind} ${object.metadata.name ?? object.metadata.generateName}`;
    check(name, "object JSON", bytes(object), ARGO_LIMITS.objectBytes);
    if (object.kind === "ConfigMap") check(name, "ConfigMap data", bytes((object as { data?: unknown }).data ?? {}) + bytes((object as { binaryData?: unknown }).binaryData ?? {}), ARGO_LIMITS.configMapBytes);
    for (const [key, value] of Object.entries(object.metadata.labels ?? {})) check(name, `label ${key}`, value.length, ARGO_LIMITS.labelValueChars);
  }

  // One status per Workflow object; nodes are generated as the controller would name them.
  const statuses = new Map<string, { nodes: Record<string, Node>; pods: number; spec: unknown }>();
  const random = prng(0x5eed);
  const nodeId = (workflowName: string) => `${workflowName}-${String(Math.floor(random() * 4e9)).padStart(10, "0")}`;
  const time = () => new Date(Date.UTC(2026, 0, 1) + Math.floor(random() * 864e5)).toISOString().replace(/\.\d+Z$/, "Z");
  const host = () => `ip-10-0-${Math.floor(random() * 256)}-${Math.floor(random() * 256)}.ec2.internal`;

  const globals = (workflowName: string): Vars =>
    new Map([
      ["workflow.name", workflowName],
      ["workflow.namespace", namespace],
      ["workflow.status", "Succeeded"],
      ["workflow.duration", "123456.789012"],
      ["retries", String(runtime.retries)],
      ["workflow.parameters.commit", "0123456789abcdef0123456789abcdef01234567"],
    ]);

  /** Adds a node to `workflowName`'s status; returns its id. */
  const addNode = (workflowName: string, node: Node): string => {
    const status = statuses.get(workflowName)!;
    const id = (node.id as string | undefined) ?? nodeId(workflowName);
    status.nodes[id] = { id, ...node };
    if (node.type === "Pod") status.pods++;
    return id;
  };

  /** A pod template's node(s) for one call: a Retry node over 1 + retries pod attempts, or one pod. */
  const podNodes = (workflowName: string, name: string, tmpl: Template, inputs: Record<string, string>, boundary: string): string => {
    const base = {
      templateName: tmpl.name,
      templateScope: "local/",
      boundaryID: boundary,
      inputs: Object.keys(inputs).length ? { parameters: Object.entries(inputs).map(([n, value]) => ({ name: n, value })) } : undefined,
    };
    const pod = (podName: string, last: boolean): Node => ({
      name: podName,
      displayName: podName.slice(podName.lastIndexOf(".") + 1),
      type: "Pod",
      ...base,
      phase: last ? "Succeeded" : "Failed",
      ...(last ? {} : { message: "Error (exit code 75)" }),
      startedAt: time(),
      finishedAt: time(),
      progress: "1/1",
      resourcesDuration: { cpu: Math.floor(random() * 2000), memory: Math.floor(random() * 4000) },
      outputs: {
        // archiveLogs (the usual setting) adds the main container's log artifact to every pod node.
        artifacts: [{ name: "main-logs", s3: { key: `${workflowName}/${workflowName}-${tmpl.name}-${Math.floor(random() * 4e9)}/main.log` } }],
        exitCode: last ? "0" : "75",
      },
      hostNodeName: host(),
      ...(last ? {} : { nodeFlag: { retried: true } }),
      taskResultSynced: true,
    });
    if (!tmpl.retryStrategy) return addNode(workflowName, pod(name, true));
    const attempts = Array.from({ length: runtime.retries + 1 }, (_, attempt) => addNode(workflowName, pod(`${name}(${attempt})`, attempt === runtime.retries)));
    return addNode(workflowName, { name, displayName: name.slice(name.lastIndexOf(".") + 1), type: "Retry", ...base, phase: "Succeeded", startedAt: time(), finishedAt: time(), progress: "1/1", children: attempts, outboundNodes: [attempts.at(-1)!] });
  };

  /**
   * Runs template `name` with `inputs` inside Workflow `workflowName`; returns its node id and
   * its output parameters. `measure`: check its containers (false for the 2nd… item of a fan-out
   * whose worst case was checked already).
   */
  const run = (workflowName: string, name: string, inputs: Record<string, string>, nodeName: string, boundary: string, measure: boolean): { id: string; outputs: Record<string, string> } => {
    const tmpl = templates.get(name);
    if (!tmpl) throw new Error(`checkArgoLimits: template "${name}" is referred to but not rendered`);
    const vars = globals(workflowName);
    for (const [key, value] of Object.entries(inputs)) vars.set(`inputs.parameters.${key}`, value);
    const subject = `${workflowName}/${name}`;
    if (tmpl.dag) return { id: runDag(workflowName, tmpl, vars, nodeName, boundary, measure), outputs: {} };
    // Resolving the template costs a JSON round trip: only for what is measured or created.
    const resolved = measure || tmpl.resource ? resolve(tmpl, vars) : undefined;
    if (resolved && measure) {
      // What the executor gets in ARGO_TEMPLATE: the template with its inputs substituted.
      check(subject, "ARGO_TEMPLATE (template with inputs)", bytes({ ...resolved, inputs: { parameters: Object.entries(inputs).map(([n, value]) => ({ name: n, value })) } }), ARGO_LIMITS.inlineBytes);
      const containers: Template[] = [...(resolved.container ? [resolved.container] : []), ...(resolved.containerSet?.containers ?? []), ...(resolved.initContainers ?? [])];
      for (const container of containers) {
        const args: string[] = [...(container.command ?? []), ...(container.args ?? [])];
        const env: string[] = (container.env ?? []).map((e: Template) => `${e.name}=${e.value ?? ""}`);
        check(`${subject}/${container.name}`, "args JSON", bytes(container.args ?? []), ARGO_LIMITS.inlineBytes);
        check(`${subject}/${container.name}`, "longest argument", Math.max(0, ...args.map((a) => bytes(a))), ARGO_LIMITS.argStringBytes);
        check(`${subject}/${container.name}`, "argv + environment", [...args, ...env].reduce((n, a) => n + bytes(a) + 1, 0), ARGO_LIMITS.argTotalBytes);
      }
    }
    const outputs: Record<string, string> = {};
    for (const p of (tmpl.outputs?.parameters ?? []) as Template[]) {
      const value = runtime.outputs[name]?.[p.name];
      if (value === undefined) throw new Error(`checkArgoLimits: no run-time value for output parameter "${p.name}" of template "${name}" (pass it in runtime.outputs)`);
      outputs[p.name] = value;
      if (measure) check(subject, `output parameter ${p.name}`, bytes(value), ARGO_LIMITS.inlineBytes);
    }
    if (runtime.stdout?.[name] !== undefined) outputs.__result = runtime.stdout[name]!;
    let id: string;
    if (resolved?.resource) {
      id = podNodes(workflowName, nodeName, tmpl, inputs, boundary);
      const manifest = resolved.resource.manifest as string;
      if (/\{\{/.test(manifest)) throw new Error(`checkArgoLimits: ${subject}: resource manifest keeps an unresolved expression: ${manifest.match(/\{\{[^}]*\}\}/)![0]}`);
      const child = parse(manifest) as KubeObject & { spec: Template };
      check(subject, "resource manifest", bytes(manifest), ARGO_LIMITS.inlineBytes);
      if (child.kind === "Workflow") runWorkflow(child);
    } else {
      id = podNodes(workflowName, nodeName, tmpl, inputs, boundary);
    }
    return { id, outputs };
  };

  const runDag = (workflowName: string, tmpl: Template, vars: Vars, nodeName: string, boundary: string, measure: boolean): string => {
    const id = nodeName === workflowName ? workflowName : nodeId(workflowName);
    const children: string[] = [];
    const outbound: string[] = [];
    const dependedOn = new Set(((tmpl.dag.tasks ?? []) as Template[]).flatMap((t) => t.dependencies ?? []));
    for (const task of tmpl.dag.tasks as Template[]) {
      const taskVars = new Map(vars);
      const args = (task.arguments?.parameters ?? []) as { name: string; value: string }[];
      const calls: { item: string | Record<string, string> | undefined }[] = [];
      if (task.withSequence) {
        const seq = resolve(task.withSequence, vars) as { count?: string; start?: string; end?: string };
        const start = Number(seq.start ?? 0);
        const end = seq.end !== undefined ? Number(seq.end) : start + Number(seq.count) - 1;
        if (!Number.isInteger(start) || !Number.isInteger(end)) throw new Error(`checkArgoLimits: ${workflowName}/${tmpl.name}.${task.name}: withSequence does not resolve to numbers: ${JSON.stringify(seq)}`);
        for (let i = start; i <= end; i++) calls.push({ item: String(i) });
      } else if (task.withParam) {
        const value = substitute(task.withParam, vars);
        check(`${workflowName}/${tmpl.name}.${task.name}`, "withParam value", bytes(value), ARGO_LIMITS.inlineBytes);
        let items: unknown;
        try {
          items = JSON.parse(value);
        } catch {
          throw new Error(`checkArgoLimits: ${workflowName}/${tmpl.name}.${task.name}: withParam is not a JSON list: ${value.slice(0, 200)}`);
        }
        for (const item of items as (string | Record<string, string>)[]) calls.push({ item });
      } else {
        calls.push({ item: undefined });
      }
      const fanOut = Boolean(task.withSequence || task.withParam);
      const group = fanOut ? nodeId(workflowName) : undefined;
      const expanded: string[] = [];
      const results: Record<string, string>[] = [];
      // The longest item is checked (its arguments are the largest); the rest only make nodes.
      const longest = calls.reduce((best, c, i) => (bytes(c.item ?? "") > bytes(calls[best]?.item ?? "") ? i : best), 0);
      calls.forEach((call, i) => {
        const itemVars = new Map(taskVars);
        if (typeof call.item === "string") itemVars.set("item", call.item);
        else if (call.item) for (const [key, value] of Object.entries(call.item)) itemVars.set(`item.${key}`, String(value));
        const inputs = Object.fromEntries(args.map((a) => [a.name, substitute(a.value ?? "", itemVars)]));
        if (measure && i === longest) for (const [key, value] of Object.entries(inputs)) check(`${workflowName}/${tmpl.name}.${task.name}`, `argument ${key}`, bytes(value), ARGO_LIMITS.inlineBytes);
        const name = fanOut ? `${nodeName}.${task.name}(${i}:${typeof call.item === "string" ? call.item : JSON.stringify(call.item)})` : `${nodeName}.${task.name}`;
        const result = run(workflowName, task.template, inputs, name, id, measure && i === longest);
        expanded.push(result.id);
        results.push(result.outputs);
      });
      // What later tasks read: a fan-out's outputs are aggregated into a JSON list.
      const names = new Set(results.flatMap((r) => Object.keys(r)));
      for (const output of names) {
        const key = output === "__result" ? `tasks.${task.name}.outputs.result` : `tasks.${task.name}.outputs.parameters.${output}`;
        vars.set(key, fanOut ? JSON.stringify(results.map((r) => r[output])) : results[0]![output]!);
      }
      if (group) {
        addNode(workflowName, { id: group, name: `${nodeName}.${task.name}`, displayName: task.name, type: calls.length ? "TaskGroup" : "Skipped", templateName: task.template, templateScope: "local/", boundaryID: id, phase: calls.length ? "Succeeded" : "Skipped", children: expanded });
        children.push(group);
      } else children.push(...expanded);
      if (!dependedOn.has(task.name)) outbound.push(...expanded);
    }
    // `result` references (stdout) must fit the 256 KiB Argo keeps.
    for (const match of JSON.stringify(tmpl).matchAll(/\{\{tasks\.([^.]+)\.outputs\.result\}\}/g)) {
      const task = (tmpl.dag.tasks as Template[]).find((t) => t.name === match[1]);
      const stdout = runtime.stdout?.[task?.template];
      if (stdout === undefined) throw new Error(`checkArgoLimits: ${tmpl.name} uses the stdout of ${match[1]}; pass it in runtime.stdout`);
      check(`${workflowName}/${tmpl.name}`, `stdout of ${match[1]} (outputs.result)`, bytes(stdout), ARGO_LIMITS.stdoutResultBytes);
    }
    addNode(workflowName, { id, name: nodeName, displayName: nodeName.slice(nodeName.lastIndexOf(".") + 1), type: "DAG", templateName: tmpl.name, templateScope: "local/", ...(boundary ? { boundaryID: boundary } : {}), phase: "Succeeded", startedAt: time(), finishedAt: time(), progress: "1/1", children, outboundNodes: outbound });
    return id;
  };

  const runWorkflow = (object: KubeObject & { spec: Template }) => {
    const workflowName = object.metadata.name ?? `${object.metadata.generateName}x7k2p`;
    statuses.set(workflowName, { nodes: {}, pods: 0, spec: object.spec });
    check(`Workflow ${workflowName}`, "object JSON (before status)", bytes(object), ARGO_LIMITS.objectBytes);
    const entrypoint = (object.spec.entrypoint as string | undefined) ?? (template.spec.entrypoint as string);
    const args = Object.fromEntries(((object.spec.arguments?.parameters ?? []) as { name: string; value: string }[]).map((p) => [p.name, p.value]));
    run(workflowName, entrypoint, args, workflowName, "", true);
    // The exit handler runs in every Workflow of the template.
    if (template.spec.onExit) run(workflowName, template.spec.onExit, {}, `${workflowName}.onExit`, "", true);
  };
  runWorkflow(workflow);

  const workflows: WorkflowStatusSize[] = [];
  for (const [name, status] of statuses) {
    const nodesJson = JSON.stringify(status.nodes);
    const compressed = gzipSync(nodesJson).toString("base64");
    const completion = Object.fromEntries(Object.entries(status.nodes).filter(([, n]) => n.type === "Pod").map(([id]) => [id, true]));
    const stored = {
      apiVersion: "argoproj.io/v1alpha1",
      kind: "Workflow",
      metadata: { name, namespace, uid: "00000000-0000-0000-0000-000000000000", resourceVersion: "123456789", labels: { "workflows.argoproj.io/phase": "Succeeded", "workflows.argoproj.io/completed": "true" } },
      spec: status.spec,
      status: {
        phase: "Succeeded",
        startedAt: time(),
        finishedAt: time(),
        progress: `${status.pods}/${status.pods}`,
        // The controller keeps the WorkflowTemplate's spec with a Workflow that refers to it.
        storedWorkflowTemplateSpec: template.spec,
        taskResultsCompletionStatus: completion,
        ...(bytes(nodesJson) + bytes(template.spec) > ARGO_LIMITS.workflowBytes ? { compressedNodes: compressed } : { nodes: status.nodes }),
      },
    };
    const size: WorkflowStatusSize = { workflow: name, pods: status.pods, nodes: Object.keys(status.nodes).length, nodesBytes: bytes(nodesJson), compressedBytes: compressed.length, objectBytes: bytes(stored) };
    workflows.push(size);
    check(`Workflow ${name}`, "stored object, node status compressed when over MAX_WORKFLOW_SIZE (no offloading)", size.objectBytes, ARGO_LIMITS.workflowBytes);
  }
  return { checks, workflows, violations: checks.filter((c) => !c.ok) };
}
