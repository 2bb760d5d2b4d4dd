/** GitOps: experiments in a git repo; a commit triggers a run. */
export { initGitopsRepo } from "./init.ts";
export { triggerCommit, COMMIT_LABEL, type ExperimentOutcome } from "./trigger.ts";
export { watchOnce, watchRepo } from "./watch.ts";
export { commitExperimentChanges, experimentChanges } from "./changes.ts";
export { buildApplication } from "./argocd.ts";
export { buildEventSource, buildExperimentSensor } from "./argo-events.ts";
export { readGitopsSettings, GitopsSettingsSchema } from "./settings.ts";
