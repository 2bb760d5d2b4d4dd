/**
 * Async iterations on Argo (`training.async`; docs/argo.md, "Async iterations"): each rendered
 * iteration DAG is split in two — its rollouts (plan, the fan-out, report) and its training
 * step (export, admit, train, sync, and whatever else follows the report) — and the top DAG
 * orders them so that the rollouts of iteration i+1 run while step i trains:
 *
 *   iteration-i-rollouts  after iteration-(i-1)-rollouts and iteration-(i-1-S)-train
 *   iteration-i-train     after iteration-i-rollouts and iteration-(i-1)-train
 *
 * (S = `training.maxStaleness`): the proxy serves version ≥ i - S when iteration i's rollouts
 * start, so none is more than S versions behind the step that trains on it (step i starts from
 * version i), and the steps stay in order. The export step of iteration i leaves out anything
 * older than that (`--train-version i --max-staleness S`), counted in its manifest.
 */
import type { IComGithubArgoprojArgoWorkflowsV4PkgApisWorkflowV1alpha1Template as Template } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/Template";
import type { IComGithubArgoprojArgoWorkflowsV4PkgApisWorkflowV1alpha1DAGTask as Task } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/DAGTask";
import type { Experiment } from "../../schemas/index.ts";

/**
 * The tasks of an iteration that are its rollouts (and their analysis, which needs only them);
 * everything else is its training step.
 */
const ROLLOUT_TASK = /^(plan|rollouts|rollouts-e\d+|shards|report|analyze)$/;
const ROLLOUT_TASKS = { has: (name: string) => ROLLOUT_TASK.test(name) };

/**
 * The templates with every `iteration-i` split into `iteration-i-rollouts` and
 * `iteration-i-train`, the `experiment` DAG ordering them as above, and the export step given
 * the staleness bound. Templates without iterations come back unchanged.
 *
 * @example
 * splitForAsync(templates, experiment).map((t) => t.name) // ["experiment", "iteration-0-rollouts", "iteration-0-train", …]
 */
export function splitForAsync(templates: Template[], experiment: Experiment): Template[] {
  const staleness = experiment.spec.training.maxStaleness;
  const iterations = templates.filter((t) => /^iteration-\d+$/.test(t.name ?? "")).length;
  const out: Template[] = [];
  for (const template of templates) {
    const match = /^iteration-(\d+)$/.exec(template.name ?? "");
    if (template.name === "experiment") {
      const tasks: Task[] = [];
      for (let i = 0; i < iterations; i++) {
        tasks.push({
          name: `iteration-${i}-rollouts`,
          template: `iteration-${i}-rollouts`,
          ...dependencies([i > 0 ? `iteration-${i - 1}-rollouts` : undefined, i - 1 - staleness >= 0 ? `iteration-${i - 1 - staleness}-train` : undefined]),
        });
        tasks.push({ name: `iteration-${i}-train`, template: `iteration-${i}-train`, ...dependencies([`iteration-${i}-rollouts`, i > 0 ? `iteration-${i - 1}-train` : undefined]) });
      }
      out.push({ ...template, dag: { tasks } });
    } else if (match && template.dag) {
      const tasks = template.dag.tasks ?? [];
      const rollouts = tasks.filter((t) => ROLLOUT_TASKS.has(t.name));
      // The training step's tasks, without their dependencies on the rollout part (the top DAG holds that one).
      const training = tasks
        .filter((t) => !ROLLOUT_TASKS.has(t.name))
        .map(({ dependencies: needs, ...task }) => ({ ...task, ...dependencies((needs ?? []).filter((d) => !ROLLOUT_TASKS.has(d))) }));
      out.push({ ...template, name: `${template.name}-rollouts`, dag: { tasks: rollouts } });
      const { parallelism: _bound, ...rest } = template;
      out.push({ ...rest, name: `${template.name}-train`, dag: { tasks: training } });
    } else if (template.name === "export" && template.container) {
      // Step i starts from version i: a rollout served more than S versions before is left out.
      const args = [...(template.container.args ?? []), "--train-version", "{{inputs.parameters.iteration}}", "--max-staleness", String(staleness)];
      out.push({ ...template, container: { ...template.container, args } });
    } else out.push(template);
  }
  return out;
}

function dependencies(names: (string | undefined)[]): { dependencies?: string[] } {
  const list = names.filter((n): n is string => n !== undefined);
  return list.length > 0 ? { dependencies: list } : {};
}
