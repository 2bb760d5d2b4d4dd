/**
 * The GitOps repository layout: where experiments, tasks and rendered manifests live.
 */
export const EXPERIMENTS_DIR = "experiments";
export const TASKS_DIR = "tasks";
/** Policy scripts of the policy simulator (the stand-in model for an experiment without upstreams). */
export const POLICIES_DIR = "policies";
export const DEPLOY_DIR = "deploy";
/** Manifests Argo CD keeps in sync with the cluster. */
export const MANIFESTS_DIR = `${DEPLOY_DIR}/manifests`;
/** The Argo CD Application that points at MANIFESTS_DIR (applied once by hand). */
export const ARGOCD_DIR = `${DEPLOY_DIR}/argocd`;
/** Per-repo settings written by `forge gitops init`. */
export const SETTINGS_FILE = "openforge.gitops.json";
/** Where the local trigger writes its logs and run records (git-ignored). */
export const LOCAL_STATE_DIR = ".forge";
/** The per-clone git config key that says where the forge CLI is (set by `forge gitops init`). */
export const CLI_CONFIG_KEY = "openforge.cli";
