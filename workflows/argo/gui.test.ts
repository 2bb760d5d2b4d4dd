import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseExperimentText } from "../../schemas/index.ts";
import { checkGuiExperiment, guiNeeds, guiVolumes, podBrowserServer, rolloutResources, siteSidecar } from "./gui.ts";
import { startSiteSidecar } from "./site-step.ts";
import { loadExperimentTasks } from "../tasks/index.ts";

const scratch = mkdtempSync(join(tmpdir(), "forge-argo-gui-unit-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A task directory `shop` with a site and `browser = true`, and `plain` without either. */
function experimentDir(extra = ""): string {
  const dir = mkdtempSync(join(scratch, "exp-"));
  for (const [id, browser] of [["shop", true], ["plain", false]] as const) {
    mkdirSync(join(dir, "tasks", id, "tests"), { recursive: true });
    writeFileSync(join(dir, "tasks", id, "instruction.md"), browser ? "Buy a mug at {site_url}." : "Count the lines of data.txt.");
    writeFileSync(join(dir, "tasks", id, "tests", "test.sh"), "echo 1 > $FORGE_LOGS/reward.txt\n");
    if (browser) {
      writeFileSync(join(dir, "tasks", id, "task.toml"), "[environment]\nbrowser = true\n");
      mkdirSync(join(dir, "tasks", id, "site"));
      writeFileSync(join(dir, "tasks", id, "site", "index.html"), "<h1>Mugs</h1>");
    }
  }
  writeFileSync(join(dir, "experiment.yaml"), `apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: {name: shop}\nspec:\n  policy: {model: m}\n  harness: {name: claude-code${extra}}\n  environment: {tasks: tasks, browser: {executablePath: /usr/bin/chromium}}\n`);
  return dir;
}
const experimentIn = (dir: string) => parseExperimentText(readFileSync(join(dir, "experiment.yaml"), "utf8"), join(dir, "experiment.yaml"));

describe("GUI rollout pods", () => {
  test("which tasks need a browser and a site; a browser experiment must name Chromium's path in the task's image", () => {
    const dir = experimentDir();
    const experiment = experimentIn(dir);
    const needs = guiNeeds(loadExperimentTasks(experiment, dir));
    expect(needs).toEqual({ browser: ["shop"], site: ["shop"] });
    // Node and the MCP server come with the harness bundle; Chromium must be in the task's image.
    expect(() => checkGuiExperiment(experiment, needs)).not.toThrow();
    delete experiment.spec.environment.browser.executablePath;
    expect(() => checkGuiExperiment(experiment, needs)).toThrow(/browser tasks \(shop\).*set spec\.environment\.browser\.executablePath/);
    expect(() => checkGuiExperiment(experiment, { browser: [], site: ["shop"] })).not.toThrow();
    expect(guiVolumes({ browser: [], site: ["shop"] }).map((v) => v.name)).toEqual(["site-log", "site-tmp"]);
  });

  test("resources: GUI defaults for a browser experiment, the experiment's where it sets them", () => {
    const experiment = experimentIn(experimentDir());
    expect(rolloutResources(experiment, true)).toEqual({ requests: { cpu: "1", memory: "3Gi" }, limits: { memory: "3Gi" } });
    expect(rolloutResources(experiment, false)).toEqual({ requests: { cpu: "1", memory: "2Gi" }, limits: { memory: "2Gi" } });
    experiment.spec.rollouts.resources = { memory: "5Gi" };
    expect(rolloutResources(experiment, true).requests).toEqual({ cpu: "1", memory: "5Gi" });
  });

  test("the pod's browser: node from PATH, the CLI in the bundle (/opt/forge/app), the image's Chromium, --no-sandbox; checked before the harness starts", () => {
    const experiment = experimentIn(experimentDir(", image: h:1"));
    const { server, preflight } = podBrowserServer(experiment, "/forge/home");
    expect(server.command).toBe("node");
    expect(server.args[0]).toBe("/opt/forge/app/node_modules/@playwright/mcp/cli.js");
    expect(server.args.at(-1)).toBe("--no-sandbox");
    expect(preflight.map((need) => need.path)).toEqual(["/usr/bin/chromium", "node", "/opt/forge/app/node_modules/@playwright/mcp/cli.js"]);
    delete experiment.spec.environment.browser.executablePath;
    expect(() => podBrowserServer(experiment, "/forge/home")).toThrow(/spec\.environment\.browser\.executablePath: not set/);
  });

  test("the site sidecar is a restricted native sidecar without a token", () => {
    const sidecar = siteSidecar(experimentIn(experimentDir()), { planMount: { name: "data", mountPath: "/plan", subPath: "plans/x", readOnly: true }, index: "3", stepCommand: (...args) => ({ command: ["bun", "step.ts"], args }) });
    expect(sidecar.restartPolicy).toBe("Always");
    expect(sidecar.args).toContain("--index");
    expect(JSON.stringify(sidecar.env)).not.toContain("FORGE_ADMIN_TOKEN");
    expect(sidecar.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
  });
});

describe("the site sidecar's step", () => {
  test("serves the task's site and records it; a task without a site, or a plan it cannot read, still becomes ready (register reports the error)", async () => {
    const dir = experimentDir();
    const experiment = experimentIn(dir);
    const state = join(scratch, "site-log");
    const site = await startSiteSidecar({ experiment, experimentDir: dir, taskId: () => "shop", stateDir: state, port: 0, readyFile: join(scratch, "ready") });
    try {
      expect(await (await fetch(`${site.server!.url}/`)).text()).toBe("<h1>Mugs</h1>");
      expect(JSON.parse(readFileSync(join(state, "requests.jsonl"), "utf8"))).toMatchObject({ seq: 1, method: "GET", path: "/" });
      expect(readFileSync(join(scratch, "ready"), "utf8")).toContain("serving task shop's site");
    } finally {
      await site.close();
    }
    const none = await startSiteSidecar({ experiment, experimentDir: dir, taskId: () => "plain", stateDir: join(scratch, "none"), port: 0, readyFile: join(scratch, "ready-none") });
    expect(none.server).toBeUndefined();
    expect(readFileSync(join(scratch, "ready-none"), "utf8")).toContain("task plain has no site/");
    const lost = await startSiteSidecar({ experiment, experimentDir: dir, taskId: () => { throw new Error("plan.json: no such file"); }, stateDir: join(scratch, "lost"), port: 0, readyFile: join(scratch, "ready-lost") });
    expect(lost.note).toBe("no site served: plan.json: no such file");
    expect(existsSync(join(scratch, "ready-lost"))).toBe(true);
  });
});
