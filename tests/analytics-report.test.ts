/**
 * The HTML report rendered in headless Chromium: every chart must be laid out (non-empty
 * bounding box) and carry its marks. Skipped, saying why, when Chromium is not installed
 * (`apt-get install -y chromium`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { analyze, type Analysis } from "../analytics/analysis.ts";
import { episode, scored } from "../analytics/fixtures.ts";
import { renderReport } from "../analytics/report.ts";
import { openAnalytics } from "../analytics/session.ts";
import { fakeLog } from "../analytics/testing.ts";

const chromium = "/usr/bin/chromium";
const haveChromium = existsSync(chromium);
if (!haveChromium) console.warn(`analytics-report: ${chromium} not found, skipping the headless render test (install with: apt-get install -y chromium)`);

let analysis: Analysis;
let html: string;
let scratch: string;

beforeAll(async () => {
  const log = await fakeLog();
  const records = [];
  for (const harness of ["codex", "claude-code"]) {
    for (const iteration of [0, 1, 2]) {
      for (const task of ["A", "B"]) {
        for (const attempt of [0, 1, 2]) {
          const id = `${harness}-${iteration}-${task}-${attempt}`;
          const pass = (attempt + iteration + (harness === "codex" ? 1 : 0)) % 3 !== 0;
          records.push(...scored({ id, task, harness, iteration, attempt }, pass ? "ok" : "failed", pass ? 1 : attempt * 0.25));
          const shell = harness === "codex" ? "shell" : "Bash";
          records.push(
            ...episode(id, harness === "codex" ? "responses" : "anthropic", [shell, "Edit"], [
              [{ id: `${id}-1`, name: "Edit", args: { file_path: "a" }, result: "ok", isError: false }],
              [{ id: `${id}-2`, name: shell, args: { command: "npm test" }, result: pass ? "ok" : "Error: failed", isError: !pass }],
            ]),
          );
        }
      }
    }
  }
  await log.addSegment(records);
  const session = await openAnalytics(log.dir, { readSegment: log.readSegment });
  try {
    analysis = await analyze(session.connection, { by: ["harness"], ks: [1, 2], convention: "unbiased", threshold: 1 }, session.compaction);
  } finally {
    session.close();
  }
  html = renderReport(analysis);
  scratch = await mkdtemp(join(tmpdir(), "forge-report-"));
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("report", () => {
  test("is self-contained: no external scripts, styles or images", () => {
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    expect(analysis.pass.map((r) => r.harness)).toEqual(["claude-code", "codex"]);
  });

  test.skipIf(!haveChromium)("charts are drawn in headless Chromium", async () => {
    const file = join(scratch, "report.html");
    await writeFile(file, html);
    const profile = await mkdtemp(join(tmpdir(), "forge-chromium-"));
    try {
      const proc = Bun.spawn(
        [
          chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
          `--user-data-dir=${profile}`, "--dump-dom", `file://${file}`,
        ],
        { stdout: "pipe", stderr: "pipe" },
      );
      const timer = setTimeout(() => proc.kill(), 45_000);
      const [dom, code] = [await new Response(proc.stdout).text(), await proc.exited];
      clearTimeout(timer);
      expect(code).toBe(0);
      const charts = [...dom.matchAll(/<svg class="chart" data-chart="([^"]+)"[^>]*>/g)];
      // pass trend for k = 1 and 2, groups, behaviour, reward distribution, token budgets
      expect(charts.map((m) => m[1])).toEqual(["pass-trend-1", "pass-trend-2", "pass-groups", "behaviour", "reward-distribution", "token-budgets"]);
      for (const [tag] of charts) {
        expect(tag).toContain('data-rendered="true"');
        const marks = Number(/data-marks="(\d+)"/.exec(tag)?.[1] ?? 0);
        expect(marks).toBeGreaterThan(0);
      }
      // The trend chart: 2 harnesses × (pass@k, pass^k) lines with a point per iteration.
      const trend = dom.slice(dom.indexOf('data-chart="pass-trend-1"'));
      expect(trend.slice(0, trend.indexOf("</svg>")).match(/class="point"/g)?.length).toBe(2 * 2 * 3);
    } finally {
      await rm(profile, { recursive: true, force: true });
    }
  }, 60_000);
});
