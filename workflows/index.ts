/**
 * The workflows area: tasks, harness adapters, the local executor and `forge run`, and the Argo
 * Workflows / Kubernetes builders, submission and watching.
 */
export { loadExperimentTasks } from "./tasks/index.ts";
export { manifestsToYaml, renderExperiment, renderWorkflow, type KubeObject } from "./argo/index.ts";
