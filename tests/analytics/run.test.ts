/**
 * `forge run` and `forge analyze` print the same numbers for a run: both go through one
 * analysis (analytics/analysis.ts) and one formatter (analytics/summary.ts). Run as a user runs
 * them: separate processes, text output.
 */
import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromiumPath, headlessChromium } from "../../analytics/testing.ts";

const root = join(import.meta.dir, "..", "..");
const forge = (args: string[]) => {
  const result = Bun.spawnSync([process.execPath, join(root, "bin", "forge.ts"), ...args], { cwd: root, stdout: "pipe", stderr: "pipe" });
  return { code: result.exitCode, out: result.stdout.toString(), err: result.stderr.toString() };
};

/** The tables of the pass@k block: from its header line to the blank line after the per-task table. */
function passTables(out: string): string {
  const lines = out.split("\n");
  const start = lines.findIndex((line) => /^experiment\s+run\s+iteration\s+tasks\s+scored/.test(line));
  expect(start).toBeGreaterThan(-1);
  const end = lines.findIndex((line, i) => i > start && /^(the same from the log|behaviour)/.test(line));
  return lines.slice(start, end).join("\n").trim();
}

test("the quickstart: forge run's pass@k block is forge analyze's, for the run and for the data dir; the report and its trajectory pages", async () => {
  const data = mkdtempSync(join(tmpdir(), "forge-run-analyze-"));
  try {
    const run = forge(["run", "examples/quickstart/experiment.yaml", "--data", data, "--quiet"]);
    expect(run.code).toBe(0);
    const runId = /--run (\S+)/.exec(run.out)?.[1];
    expect(runId).toBeDefined();
    expect(run.out).toContain("k = 1, 2, 4 (the experiment's metrics.k)");
    // The quickstart runs token-in, the mode training should use, and says what that gives.
    expect(run.out).toContain("token-in: one training sample per rollout (20 samples, 20 rollouts)");
    const tables = passTables(run.out);
    expect(tables).toMatch(/^quickstart\s+\S+\s+0\s+5\s+5\s+20\s+20\s/m);

    const scoped = forge(["analyze", "--data", data, "--run", runId!, "--quiet"]);
    expect(scoped.code).toBe(0);
    expect(passTables(scoped.out)).toBe(tables);
    // Without --run: every run is its own row; with one run in the directory, the same rows.
    const whole = forge(["analyze", "--data", data, "--quiet"]);
    expect(passTables(whole.out)).toBe(tables);
    const latest = forge(["analyze", "--data", data, "--run", "latest", "--quiet", "--json"]);
    const analysis = JSON.parse(latest.out);
    expect(analysis.options.scope).toEqual({ run: runId });
    expect(analysis.options.ks).toEqual([1, 2, 4]);
    expect(analysis.runs.map((r: { model: string }) => r.model)).toEqual(["forge-sim/qwen3-sim"]);

    // The report over the run: a trajectory page per rollout, with the simulator's real token ids
    // shown as Qwen3 text; token-in keeps every conversation's ids canonical, so no call drifts.
    const report = join(data, "report.html");
    const written = forge(["analyze", "--data", data, "--run", runId!, "--report", report, "--quiet"]);
    expect(written.code).toBe(0);
    const pages = readdirSync(join(data, "report.rollouts"));
    expect(pages).toHaveLength(20);
    const html = pages.map((page) => readFileSync(join(data, "report.rollouts", page), "utf8"));
    expect(html.every((page) => page.includes('<span class="token sampled" data-mask="1"'))).toBe(true);
    expect(html.some((page) => page.includes("&lt;|im_start|&gt;"))).toBe(true);
    // Every call's messages rebuilt from the stored bodies, none reported unreadable.
    expect(html.every((page) => page.includes('data-role="user"') && page.includes('class="tool-call"'))).toBe(true);
    expect(html.some((page) => /is not JSON|not held|class="error"/.test(page))).toBe(false);
    expect(html.some((page) => page.includes('class="call drift-point"'))).toBe(false);

    // The same tasks in engine mode: the realigned (drift) calls of the tasks whose reasoning was
    // stripped are shown, and the run says it exported more samples than rollouts.
    const engineExperiment = join(data, "engine-experiment.yaml");
    const quickstart = join(root, "examples", "quickstart");
    writeFileSync(
      engineExperiment,
      readFileSync(join(quickstart, "experiment.yaml"), "utf8")
        .replace(/^    tokenMode: token-in\n/m, "    tokenMode: engine\n")
        .replace("script: ../policies/quickstart.yaml", `script: ${join(quickstart, "..", "policies", "quickstart.yaml")}`)
        .replace("tasks: tasks", `tasks: ${join(quickstart, "tasks")}`),
    );
    const engineData = join(data, "engine");
    const engineRun = forge(["run", engineExperiment, "--data", engineData, "--quiet"]);
    expect(engineRun.code).toBe(0);
    expect(engineRun.out).toMatch(/^engine mode: \d+ training samples from 20 rollouts; a rollout whose harness re-serialized its history forks into several/m);
    const engineReport = join(engineData, "report.html");
    expect(forge(["analyze", "--data", engineData, "--report", engineReport, "--quiet"]).code).toBe(0);
    const enginePages = readdirSync(join(engineData, "report.rollouts"));
    const drift = enginePages.filter((page) => readFileSync(join(engineData, "report.rollouts", page), "utf8").includes('class="call drift-point"'));
    expect(drift.length).toBeGreaterThan(0);
    if (existsSync(chromiumPath)) {
      const shown = await headlessChromium(join(engineData, "report.rollouts", drift[0]!), join(data, "viewer.png"), "1200,2000");
      expect(shown.code).toBe(0);
      expect(shown.dom).toContain("realign · sample 0");
      expect(statSync(join(data, "viewer.png")).size).toBeGreaterThan(20_000);
      const page = await headlessChromium(report, join(data, "report.png"));
      expect(page.dom).toContain('data-chart="pass-curve"');
      expect(page.dom).toContain("forge-sim/qwen3-sim");
    }
  } finally {
    rmSync(data, { recursive: true, force: true });
  }
}, 240_000);
