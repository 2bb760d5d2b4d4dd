/**
 * Browser tasks on Argo (docs/gui.md, "On Argo"): what a GUI rollout pod adds to the four
 * containers of workflow.ts, so a browser task runs as it does with the local executor.
 *
 *   site      forge image, a native sidecar (an init container with `restartPolicy: Always`,
 *             Kubernetes ≥ 1.29): forge's site server serving the task's `site/` on
 *             127.0.0.1:SITE_PORT of the pod, recording every request to the `site-log`
 *             volume, which only it (rw) and `verify` (ro, at /logs/site) mount
 *   harness   + Playwright's MCP server and Chromium from the harness image (no display:
 *             headless), a memory-backed /dev/shm, GUI resource defaults
 *   verify    + $FORGE_SITE_LOG = /logs/site/requests.jsonl
 *
 * The harness container never mounts the site's log: the agent changes it only by sending the
 * site requests, over the pod's loopback. Its processes die with its container before `verify`
 * starts (each container has its own PID namespace), so the log the verifier reads is what the
 * agent did.
 */
import type { IComGithubArgoprojArgoWorkflowsV4PkgApisWorkflowV1alpha1UserContainer as UserContainer } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/UserContainer";
import type { Experiment } from "../../schemas/index.ts";
import type { Task } from "../tasks/index.ts";
import { browserMcpArgs } from "../gui/browser.ts";
import { SITE_LOG_DIR, SITE_PORT } from "../gui/rollout-site.ts";
import type { McpServer } from "../harnesses/index.ts";
import { EXPERIMENT_DIR, FORGE_APP_DIR } from "./names.ts";
import { READ_ONLY_ROOT_ENV, restrictedContainer } from "./security.ts";

/** The site's URL inside a rollout pod (`{site_url}`, `$FORGE_SITE_URL`): the same for every rollout. */
export const POD_SITE_URL = `http://127.0.0.1:${SITE_PORT}`;
/** Where the verify container sees the site's log (as the local sandbox shows it). */
export const POD_SITE_LOG_DIR = SITE_LOG_DIR;
/** Where the site sidecar writes its log (the `site-log` volume). */
export const SITE_STATE_DIR = "/site-log";
/** The sidecar's own /tmp, where it marks itself ready for its startup probe. */
export const SITE_READY_FILE = "/tmp/site-ready";
/** @playwright/mcp's CLI in the harness bundle (this repository at /opt/forge/app, images/harness-bundle; docs/argo.md "Images"). */
export const POD_PLAYWRIGHT_MCP_CLI = "/opt/forge/app/node_modules/@playwright/mcp/cli.js";

/**
 * Requests/limits of a GUI rollout's harness container when `spec.rollouts.resources` does not
 * set them. Measured on the GUI quickstart's newsletter-signup (tests/argo/gui.test.ts, the real
 * Claude Code, Playwright MCP and Chromium): the harness's process tree peaks at ≈ 740 MiB PSS
 * (1.3 GB of RSS summed, shared pages counted in each process); a memory-backed /dev/shm is
 * charged to the container too, and image-heavy pages take more. The CPU is a request (no
 * limit): Chromium's rendering bursts above it.
 */
export const GUI_ROLLOUT_RESOURCES = { cpu: "1", memory: "3Gi" } as const;
/** Any other rollout's harness and verify containers (and a GUI rollout's verify container). */
export const ROLLOUT_RESOURCES = { cpu: "1", memory: "2Gi" } as const;
/** Chromium's shared memory: Docker's 64 MiB /dev/shm crashes tabs. */
export const DEV_SHM_SIZE = "1Gi";

/** Which of an experiment's tasks need a browser, and which a site (task ids). */
export type GuiNeeds = { browser: string[]; site: string[] };

/**
 * @example
 * guiNeeds(loadExperimentTasks(experiment, dir)) // { browser: ["add-to-cart"], site: ["add-to-cart"] }
 */
export function guiNeeds(tasks: Task[]): GuiNeeds {
  return { browser: tasks.filter((task) => task.browser).map((task) => task.id), site: tasks.filter((task) => task.siteDir).map((task) => task.id) };
}

export const needsGui = (needs: GuiNeeds | undefined): boolean => !!needs && (needs.browser.length > 0 || needs.site.length > 0);

const listed = (ids: string[]) => (ids.length > 3 ? `${ids.slice(0, 3).join(", ")} and ${ids.length - 3} more` : ids.join(", "));

/**
 * Refuses, at render time, a browser experiment whose harness image is not named: Chromium runs
 * inside the harness container (the harness's MCP server starts it), so the image must carry it,
 * and the forge image that prepares the invocation cannot look for it there.
 *
 * @example
 * checkGuiExperiment(experiment, { browser: ["shop"], site: ["shop"] }); // throws naming spec.environment.browser.executablePath
 */
export function checkGuiExperiment(experiment: Experiment, needs: GuiNeeds): void {
  if (needs.browser.length === 0) return;
  // Node and @playwright/mcp come with the harness bundle (images/harness-bundle); Chromium is the task image's.
  if (!experiment.spec.environment.browser.executablePath) {
    throw new Error(
      `browser tasks (${listed(needs.browser)}) run Chromium in the harness container on Argo, inside the task's image: set spec.environment.browser.executablePath (Chromium's path in the task's image, e.g. /usr/bin/chromium); docs/gui.md, "On Argo"`,
    );
  }
}

/**
 * The harness container's requests and limits: `spec.rollouts.resources` where it sets them,
 * else the GUI defaults for a browser rollout and the plain ones otherwise. The memory limit is
 * the request (an OOM kill is reported as such, not a node under pressure).
 *
 * @example
 * rolloutResources(experiment, true) // { requests: { cpu: "1", memory: "3Gi" }, limits: { memory: "3Gi" } }
 */
export function rolloutResources(experiment: Experiment, gui: boolean) {
  const defaults = gui ? GUI_ROLLOUT_RESOURCES : ROLLOUT_RESOURCES;
  const { cpu = defaults.cpu, memory = defaults.memory } = experiment.spec.rollouts.resources;
  return { requests: { cpu, memory }, limits: { memory } };
}

/**
 * The browser's MCP server as the harness container starts it: `node` from the harness image's
 * PATH, the CLI at /app, Chromium at `spec.environment.browser.executablePath`, `--no-sandbox`
 * (the restricted pod has no user namespaces for Chromium's own sandbox; the container is the
 * isolation). `preflight` is what the harness step checks before it starts the harness, so a
 * harness image without them is an infrastructure error naming the field, not a failed task.
 *
 * @example
 * podBrowserServer(experiment, "/forge/home").server.args.slice(0, 2) // ["/app/node_modules/@playwright/mcp/cli.js", "--headless"]
 */
export function podBrowserServer(experiment: Experiment, home: string, cli: string = POD_PLAYWRIGHT_MCP_CLI): { server: McpServer; preflight: { path: string; why: string }[] } {
  const { executablePath, viewport } = experiment.spec.environment.browser;
  const image = "the task's image";
  const bundle = experiment.spec.harness.image ?? "ghcr.io/openforge/harness-bundle:0.1.0";
  if (!executablePath) throw new Error(`spec.environment.browser.executablePath: not set; a browser task on Argo needs Chromium's path in ${image} (docs/gui.md, "On Argo")`);
  const args = browserMcpArgs({ cli, executablePath, viewport, outputDir: `${home}/.playwright-mcp`, chromiumSandbox: false });
  return {
    server: { name: "browser", command: "node", args },
    preflight: [
      { path: executablePath, why: `Chromium (spec.environment.browser.executablePath) is not in ${image}` },
      { path: "node", why: `node (≥ 18, for @playwright/mcp) is not on PATH in ${image}` },
      { path: cli, why: `@playwright/mcp is not in the harness bundle ${bundle} (images/harness-bundle puts this repository's at /opt/forge/app)` },
    ],
  };
}

/**
 * The site sidecar: forge's site server for this rollout's task, as a native sidecar (an init
 * container with `restartPolicy: Always`: started before the pod's containers, its startup probe
 * holding them until it listens, stopped by the kubelet after they all exited; Kubernetes ≥ 1.29,
 * docs/argo.md). It reads the rollout's task from the plan like `register`, mounts the plan and
 * the experiment read-only and the site's log volume read-write, and runs restricted on a
 * read-only root with no token.
 *
 * @example
 * siteSidecar(experiment, { planMount, index: "{{inputs.parameters.index}}", stepCommand }).restartPolicy // "Always"
 */
export function siteSidecar(
  experiment: Experiment,
  options: { planMount: { name: string; mountPath: string; subPath: string; readOnly?: boolean }; index: string; stepCommand: (...args: string[]) => { command: string[]; args: string[] } },
): UserContainer {
  return {
    name: "site",
    image: experiment.spec.proxy.image,
    workingDir: FORGE_APP_DIR,
    restartPolicy: "Always",
    ...options.stepCommand(
      "site",
      "--experiment",
      `${EXPERIMENT_DIR}/experiment.yaml`,
      "--plan-dir",
      options.planMount.mountPath,
      "--index",
      options.index,
      "--port",
      String(SITE_PORT),
      "--site-log",
      SITE_STATE_DIR,
      "--ready-file",
      SITE_READY_FILE,
    ),
    env: READ_ONLY_ROOT_ENV,
    // An exec probe: an HTTP probe would come from the kubelet to the pod's IP, where the site
    // does not listen (loopback only), and would land in the log the verifier reads.
    startupProbe: { exec: { command: ["bun", "-e", `process.exit(require("fs").existsSync(${JSON.stringify(SITE_READY_FILE)}) ? 0 : 1)`] }, periodSeconds: 1, failureThreshold: 120 },
    resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "512Mi" } },
    securityContext: restrictedContainer({ readOnlyRoot: true }),
    volumeMounts: [
      { name: "site-log", mountPath: SITE_STATE_DIR },
      { name: "site-tmp", mountPath: "/tmp" },
      { name: "experiment", mountPath: EXPERIMENT_DIR, readOnly: true },
      options.planMount,
    ],
  };
}

/** The GUI pod's extra volumes: the site's log, the sidecar's /tmp, Chromium's /dev/shm. */
export function guiVolumes(needs: GuiNeeds) {
  return [
    ...(needs.site.length > 0 ? [{ name: "site-log", emptyDir: {} }, { name: "site-tmp", emptyDir: {} }] : []),
    ...(needs.browser.length > 0 ? [{ name: "dshm", emptyDir: { medium: "Memory", sizeLimit: DEV_SHM_SIZE } }] : []),
  ];
}
