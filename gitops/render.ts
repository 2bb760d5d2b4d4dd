/**
 * `forge gitops render`: every experiment of the repo → `deploy/`, deterministically.
 *
 * Files are named after the experiment file (`experiments/<file>.yaml`):
 * - `deploy/manifests/<file>.yaml`: the experiment's WorkflowTemplate and what it needs
 *   (proxy, RBAC, config), kept in sync by Argo CD; the Workflow itself is not there:
 * - `deploy/manifests/<file>.sensor.yaml`: the Argo Events Sensor that submits it when
 *   a push changes the experiment file or a file it reads (its tasks, its policy script), with
 *   the commit SHA as parameter and label;
 * - `deploy/manifests/_eventsource.yaml`: the EventSource receiving the repo's push webhooks;
 * - `deploy/argocd/application.yaml`: the Argo CD Application over `deploy/manifests`.
 *
 * Same repo content → byte-identical files. An invalid experiment is reported (file, line,
 * field) and skipped; the others still render. Files of deleted experiments are removed.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { parseExperimentFile } from "../schemas/index.ts";
import { manifestsToYaml, renderExperiment, renderWorkflow, type KubeObject } from "../workflows/index.ts";
import { buildApplication } from "./argocd.ts";
import { buildEventSource, buildExperimentSensor } from "./argo-events.ts";
import { isExperimentPath } from "./changes.ts";
import { experimentInputs } from "./inputs.ts";
import { ARGOCD_DIR, EXPERIMENTS_DIR, MANIFESTS_DIR } from "./layout.ts";
import { readGitopsSettings } from "./settings.ts";

export type RenderReport = {
  /** Paths (relative to the repo) written, or that would be written. */
  written: string[];
  /** Paths whose content differs from what is committed (for --check). */
  stale: string[];
  /** One message per experiment that failed validation. */
  invalid: string[];
};

function toYaml(object: unknown): string {
  return stringify(object, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** Renders the repo into a map of repo-relative path → file content. */
export function renderGitopsFiles(repo: string): { files: Map<string, string>; invalid: string[]; invalidFiles: string[] } {
  const settings = readGitopsSettings(repo);
  const files = new Map<string, string>();
  const invalid: string[] = [];
  const invalidFiles: string[] = [];
  const names = new Map<string, string>();
  const experimentsDir = join(repo, EXPERIMENTS_DIR);
  const entries = existsSync(experimentsDir) ? readdirSync(experimentsDir).sort() : [];
  for (const entry of entries) {
    const relPath = `${EXPERIMENTS_DIR}/${entry}`;
    if (!isExperimentPath(relPath)) continue;
    const file = entry.replace(/\.ya?ml$/, "");
    let objects: KubeObject[];
    let workflow: Record<string, unknown>;
    let name: string;
    let inputs: string[];
    try {
      const experiment = parseExperimentFile(join(repo, relPath));
      name = experiment.metadata.name;
      inputs = experimentInputs(experiment, relPath);
      const clash = names.get(name);
      if (clash) throw new Error(`${relPath}: metadata.name: "${name}" is already used by ${clash}; experiment names must be unique`);
      names.set(name, relPath);
      const options = { namespace: settings.namespace, experimentPath: join(repo, relPath) };
      objects = renderExperiment(experiment, options).filter((object) => object.kind !== "Workflow");
      workflow = renderWorkflow(experiment, { ...options, generateName: true }).toJSON() as Record<string, unknown>;
    } catch (error) {
      invalid.push((error as Error).message.split(`${repo}/`).join(""));
      invalidFiles.push(file);
      continue;
    }
    files.set(`${MANIFESTS_DIR}/${file}.yaml`, manifestsToYaml(objects));
    const sensor = buildExperimentSensor({
      namespace: settings.eventsNamespace,
      experimentName: name,
      experimentPath: relPath,
      inputs,
      branch: settings.branch,
      workflow,
      commitParameterIndex: 0,
    });
    files.set(`${MANIFESTS_DIR}/${file}.sensor.yaml`, toYaml(sensor));
  }
  files.set(
    `${MANIFESTS_DIR}/_eventsource.yaml`,
    toYaml(buildEventSource({ namespace: settings.eventsNamespace, kind: settings.eventSource, github: settings.github })),
  );
  const application = buildApplication({
    name: "openforge-experiments",
    repoURL: settings.repoURL,
    branch: settings.branch,
    argocdNamespace: settings.argocdNamespace,
    namespace: settings.namespace,
  });
  files.set(`${ARGOCD_DIR}/application.yaml`, toYaml(application.toJSON()));
  return { files, invalid, invalidFiles };
}

/** The rendered files currently in deploy/ (what a render may overwrite or remove). */
function existingRendered(repo: string): string[] {
  const found: string[] = [];
  for (const dir of [MANIFESTS_DIR, ARGOCD_DIR]) {
    const abs = join(repo, dir);
    if (!existsSync(abs)) continue;
    for (const entry of readdirSync(abs)) if (entry.endsWith(".yaml")) found.push(`${dir}/${entry}`);
  }
  return found.sort();
}

/**
 * Renders the repo to deploy/ (or, with `check`, only compares).
 *
 * @example
 * const report = renderGitopsRepo(repo, { check: true }); report.stale // [] when deploy/ is current
 */
export function renderGitopsRepo(repo: string, options: { check: boolean }): RenderReport {
  const { files, invalid, invalidFiles } = renderGitopsFiles(repo);
  const stale: string[] = [];
  for (const [path, content] of files) {
    const abs = join(repo, path);
    if (!existsSync(abs) || readFileSync(abs, "utf8") !== content) stale.push(path);
  }
  // An experiment that fails validation keeps its last good manifests: a typo must not
  // unschedule it (only deleting the file does).
  const keep = new Set(invalidFiles.flatMap((file) => [`${MANIFESTS_DIR}/${file}.yaml`, `${MANIFESTS_DIR}/${file}.sensor.yaml`]));
  const removed = existingRendered(repo).filter((path) => !files.has(path) && !keep.has(path));
  stale.push(...removed.map((path) => `${path} (to be removed)`));
  if (!options.check) {
    for (const [path, content] of files) {
      mkdirSync(join(repo, path, ".."), { recursive: true });
      writeFileSync(join(repo, path), content);
    }
    for (const path of removed) rmSync(join(repo, path));
  }
  return { written: [...files.keys()], stale, invalid };
}
