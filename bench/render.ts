/**
 * Time to render an experiment of 10,000 rollouts (1,000 JSONL tasks × k=10) to manifests.
 * The rollouts are runtime data (fanned out by index from the plan the plan step writes to the
 * data volume), so render cost does not grow with them; the per-iteration cost that does is the
 * plan's JSON. For comparison, the same iteration unrolled into 10,000 explicit DAG tasks (what
 * a static render without a run-time fan-out would emit).
 *
 *   bun bench/render.ts [--rollouts 10000] [--runs 5]
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { WorkflowTemplate } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1";
import { parseExperimentFile } from "../schemas/index.ts";
import { listTaskIds, planRollouts } from "../workflows/argo/plan.ts";
import { manifestsToYaml, renderExperiment } from "../workflows/argo/render.ts";

const { values } = parseArgs({ options: { rollouts: { type: "string", default: "10000" }, runs: { type: "string", default: "5" } } });
const rollouts = Number(values.rollouts);
const runs = Number(values.runs);
const k = 10;
const tasks = Math.ceil(rollouts / k);

const dir = mkdtempSync(join(tmpdir(), "forge-bench-render-"));
writeFileSync(
  join(dir, "tasks.jsonl"),
  Array.from({ length: tasks }, (_, i) => JSON.stringify({ id: `task-${i}`, instruction: `Write ${i} to out.txt`, test: `grep -qx ${i} out.txt` })).join("\n"),
);
const path = join(dir, "experiment.yaml");
writeFileSync(
  path,
  `apiVersion: openforge.dev/v1
kind: Experiment
metadata: {name: bench}
spec:
  policy: {model: Qwen/Qwen3-8B, upstreams: ["http://vllm:8000"], mode: train}
  harness: {name: codex}
  environment: {tasks: tasks.jsonl}
  rollouts: {k: ${k}, parallelism: 256}
  training: {iterations: 1}
`,
);

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
function time<T>(fn: () => T): { ms: number; value: T } {
  const samples: number[] = [];
  let value!: T;
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    value = fn();
    samples.push(performance.now() - start);
  }
  return { ms: median(samples), value };
}

const experiment = parseExperimentFile(path);
const render = time(() => manifestsToYaml(renderExperiment(experiment, { namespace: "forge", experimentPath: path })));
const plan = time(() => JSON.stringify(planRollouts({ taskIds: listTaskIds(experiment, dir), k })));

// The unrolled alternative: one explicit DAG task per rollout, serialised. (Argo's CRD schema
// caps a DAG at 200 tasks, so it is not even a valid object: checked once below, not timed.)
const objects = renderExperiment(experiment, { namespace: "forge", experimentPath: path });
const template = objects.find((o) => o.kind === "WorkflowTemplate") as unknown as { spec: { templates: { name: string; dag?: { tasks: Record<string, unknown>[] } }[] } };
const items = JSON.parse(plan.value) as Record<string, string>[];
const unrolled = time(() => {
  const copy = structuredClone(template);
  const iteration = copy.spec.templates.find((t) => t.name === "iteration-0")!;
  const [, fanOut, ...rest] = iteration.dag!.tasks;
  const { withParam: _, ...base } = fanOut!;
  iteration.dag!.tasks = [
    ...items.map((item, i) => ({ ...base, name: `rollout-${i}`, dependencies: [], arguments: { parameters: Object.entries(item).map(([name, value]) => ({ name, value })) } })),
    ...rest.map((t) => ({ ...t, dependencies: t.name === "report" ? items.map((_, i) => `rollout-${i}`) : t.dependencies })),
  ];
  return { yaml: manifestsToYaml([copy as never]), object: copy };
});
let unrolledValid = "valid";
try {
  new WorkflowTemplate(unrolled.value.object as never).validate();
} catch (error) {
  unrolledValid = `rejected by the Argo CRD schema: ${(error as Error).message.slice(0, 80)}`;
}

const kib = (s: string) => `${(Buffer.byteLength(s) / 1024).toFixed(0)} KiB`;
const rows = [
  [`render experiment (withParam), ${rollouts} rollouts`, render.ms, kib(render.value)],
  [`plan JSON for ${rollouts} rollouts (runtime, per iteration)`, plan.ms, kib(plan.value)],
  [`render unrolled: ${rollouts} explicit DAG tasks`, unrolled.ms, kib(unrolled.value.yaml)],
] as const;
console.log(`render bench: ${tasks} tasks × k=${k} = ${rollouts} rollouts, median of ${runs} runs`);
for (const [name, ms, size] of rows) console.log(`  ${name.padEnd(58)} ${ms.toFixed(1).padStart(8)} ms  ${size.padStart(9)}`);
console.log(`  unrolled / withParam render time: ${(unrolled.ms / render.ms).toFixed(1)}×, size: ${(Buffer.byteLength(unrolled.value.yaml) / Buffer.byteLength(render.value)).toFixed(1)}×`);
console.log(`  unrolled template: ${unrolledValid}`);
