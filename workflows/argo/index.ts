/**
 * The Argo Workflows / Kubernetes part of the workflows area, for other areas (gitops):
 * render an experiment to manifests, submit them, watch a workflow.
 */
export { collectExperimentFiles, manifestsToYaml, renderExperiment, type KubeObject, type RenderOptions } from "./render.ts";
export {
  describeExperiment,
  exportArgs,
  harnessImage,
  INFRA_EXIT_CODE,
  renderWorkflow,
  renderWorkflowTemplate,
  verlCommand,
  verlTrainBatchSize,
  type VerlOptions,
  type WorkflowOptions,
} from "./workflow.ts";
export {
  renderDataVolume,
  renderExperimentConfig,
  renderProxyDeployment,
  renderProxyService,
  renderRolloutNetworkPolicy,
  renderWorkflowRbac,
} from "./cluster.ts";
export { listTaskIds, planRollouts, rolloutIdentity, type PlannedRollout } from "./plan.ts";
export { planDir, planOutputs, readPlanItem, readPlanManifest, resultsDir, splitPlan, writePlan, type PlanManifest } from "./plan-files.ts";
export { childWorkflowName, LABEL_PARENT, LABEL_SHARD } from "./fanout.ts";
export { adminSecret, argoUiLink, submitExperiment, type SubmitResult } from "./submit.ts";
export { formatProgress, summarizeWorkflow, watchWorkflow, type WorkflowProgress } from "./watch.ts";
export { loadKubeConfig, applyObject } from "./kube.ts";
export { LABEL_COMMIT, LABEL_EXPERIMENT, LABEL_ITERATION, LABEL_ROLE, objectNames } from "./names.ts";
