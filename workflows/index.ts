/**
 * The workflows area: tasks, harness adapters, the local executor and `forge run`, and the Argo
 * Workflows / Kubernetes builders, submission and watching.
 */
export { loadExperimentTasks, loadJsonlTasks, loadTaskDir, loadTasks, loadTaskTree, taskFromSpec, TaskError, type Task, type TaskVerifier } from "./tasks/index.ts";
export { HARNESS_ADAPTERS, HARNESS_BINARIES, harnessUnavailable, launchHarness, prepareHarness, type HarnessContext, type HarnessLaunch } from "./harnesses/index.ts";
export { planLocalRollouts, runLocal, type LocalRunOptions, type LocalRunResult } from "./local/executor.ts";
export { runExperiment, type RunExperimentOptions, type RunExperimentResult } from "./local/run.ts";
export { runLabelsOf, scoreRun, type RunScore } from "./local/passk.ts";
export type { RolloutOutcome } from "./local/rollout.ts";
export * from "./argo/index.ts";
