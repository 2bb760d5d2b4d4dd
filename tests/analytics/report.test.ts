/**
 * The report and the trajectory viewer, written from a log with two harnesses over two
 * iterations, failures with verifier output, an infra error, an unfinished rollout, a rollout
 * whose trajectory forks, and text that tries to inject markup; then rendered in headless
 * Chromium: the elements are there, the charts are laid out, nothing recorded runs, and a
 * screenshot of each page is taken. Skipped, saying why, without Chromium (`apt-get install -y chromium`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { analyze, type Analysis } from "../../analytics/analysis.ts";
import { callRecord, episode, fromArray, rolloutRecord, scored } from "../../analytics/testing.ts";
import { writeReport } from "../../analytics/report.ts";
import { openAnalytics } from "../../analytics/session.ts";
import { chromiumPath, fakeLog, headlessChromium } from "../../analytics/testing.ts";
import type { Record } from "../../schemas/index.ts";

const haveChromium = existsSync(chromiumPath);
if (!haveChromium) console.warn(`analytics-report: ${chromiumPath} not found, skipping the headless render tests (install with: apt-get install -y chromium)`);

let analysis: Analysis;
let scratch: string;
let report: string;
let pagesDir: string;

const injected = `<img src=x onerror="document.title='owned'"><script>document.title='owned'</script>`;

beforeAll(async () => {
  const records: Record[] = [];
  for (const harness of ["codex", "claude-code"]) {
    for (const iteration of [0, 1]) {
      for (const task of ["A", "B"]) {
        for (const attempt of [0, 1, 2]) {
          const id = `run-1.i${iteration}.${task}-${harness}.${attempt}`;
          const pass = (attempt + iteration + (harness === "codex" ? 1 : 0)) % 3 !== 0;
          const [registered, finished] = scored({ id, task, harness, iteration, attempt, labels: { "openforge.dev/run": "run-1", "openforge.dev/metrics-k": "1,2,3", "openforge.dev/commit": "abc1234" } }, pass ? "ok" : "failed", pass ? 1 : 0);
          const shell = harness === "codex" ? "shell" : "Bash";
          // As the proxy writes them: registration, the calls, then the result.
          records.push(
            registered!,
            ...episode(id, harness === "codex" ? "responses" : "anthropic", [shell, "Edit"], [
              [{ id: `${id}-1`, name: "Edit", args: { file_path: "a.py" }, result: "ok", isError: false }],
              [{ id: `${id}-2`, name: shell, args: { command: "npm test" }, result: pass ? "ok" : "1 failing", isError: !pass }],
            ]),
            finished!,
          );
        }
      }
    }
  }
  // A failure whose verifier output and tool result try to inject markup.
  const bad = "run-1.i1.B-codex.9";
  const [badRegistered, badResult] = scored({ id: bad, task: "B", harness: "codex", iteration: 1, attempt: 9 }, "failed", 0);
  if (badResult!.kind.case === "rolloutResult") badResult!.kind.value.verifierOutput = `expected 3, got 2\n${injected}`;
  records.push(badRegistered!, ...episode(bad, "chat", ["bash"], [[{ id: "x", name: "bash", args: { command: "cat page.html" }, result: injected }]]), badResult!);
  // An infra error and a rollout that never finished.
  records.push(...scored({ id: "run-1.i1.A-codex.7", task: "A", harness: "codex", iteration: 1, attempt: 7 }, "infra_error", 0));
  records.push(rolloutRecord({ id: "run-1.i1.A-codex.8", task: "A", harness: "codex", iteration: 1, attempt: 8 }));
  // A rollout whose second call does not extend the first: its trajectory forks.
  const fork = "run-1.i0.A-fork.5";
  records.push(rolloutRecord({ id: fork, task: "A", harness: "codex", attempt: 5 }));
  records.push(callRecord({ rollout: fork, seq: 1, protocol: "chat", tools: [], history: [], calls: [], text: "first", tokens: { prompt: [151644, 872, 9707], completion: [9707, 11, 151645], logprobs: [-0.01, -2.5, -0.2] } }));
  records.push(callRecord({ rollout: fork, seq: 2, protocol: "chat", tools: [], history: [], calls: [], text: "second", tokens: { prompt: [151644, 8948, 11], completion: [11, 151645] } }));
  records.push(...scored({ id: fork, task: "A", harness: "codex", attempt: 5 }, "ok", 1).slice(1));

  const log = await fakeLog();
  await log.addSegment(records);
  scratch = await mkdtemp(join(tmpdir(), "forge-report-"));
  report = join(scratch, "report.html");
  const session = await openAnalytics(log.dir, { readSegment: log.readSegment });
  try {
    analysis = await analyze(session.connection, { details: true }, session.compaction);
    const written = await writeReport(session.connection, log.dir, analysis, report, { records: fromArray(records), tokenizer: "qwen3" });
    pagesDir = written.pagesDir;
  } finally {
    session.close();
    await rm(log.dir, { recursive: true, force: true });
  }
}, 120_000);
afterAll(async () => {
  if (scratch && !process.env.FORGE_KEEP_REPORT) await rm(scratch, { recursive: true, force: true });
  else if (scratch) console.log(`report kept in ${scratch}`);
});

describe("report", () => {
  test("self-contained, one page per listed rollout, recorded text escaped", async () => {
    const html = await readFile(report, "utf8");
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&lt;img src=x");
    const pages = await readdir(pagesDir);
    expect(pages.length).toBe(analysis.rollouts.length);
    expect(analysis.rollouts.length).toBe(28); // 24 + the injected one + infra error + unfinished + fork
    expect(analysis.totals.infra_errors).toBe(1);
  });

  test.skipIf(!haveChromium)("renders in headless Chromium with everything a researcher looks for first", async () => {
    const shot = join(scratch, "report.png");
    const { dom, code } = await headlessChromium(report, shot);
    expect(code).toBe(0);
    expect(statSync(shot).size).toBeGreaterThan(20_000);
    // Who, what, when.
    const runs = dom.slice(dom.indexOf('id="runs"'), dom.indexOf("</table>", dom.indexOf('id="runs"')));
    // The model the calls asked for (the fixtures' "m"), the commit gitops recorded.
    for (const text of ["run-1", "abc1234", "<td class=\"\">m</td>", "exp", " UTC"]) expect(runs).toContain(text);
    expect(dom).toContain("the experiment's metrics.k");
    // Infra errors counted, tasks scored counted.
    expect(dom).toMatch(/id="infra-errors"><div class="value">1</);
    expect(dom).toMatch(/id="tasks-scored"><div class="value">\d+ of \d+</);
    // The curves: pass@k and pass^k for k = 1..3 per group, task counts in the legend; the trend over two iterations.
    const charts = [...dom.matchAll(/<svg class="chart" data-chart="([^"]+)"[^>]*>/g)];
    expect(charts.map((m) => m[1])).toEqual(["pass-curve", "pass-trend-1", "pass-trend-2", "pass-trend-3", "behaviour", "reward-distribution", "token-budgets"]);
    for (const [tag] of charts) {
      expect(tag).toContain('data-rendered="true"');
      expect(Number(/data-marks="(\d+)"/.exec(tag)?.[1] ?? 0)).toBeGreaterThan(0);
    }
    const curve = dom.slice(dom.indexOf('data-chart="pass-curve"'), dom.indexOf("</svg>", dom.indexOf('data-chart="pass-curve"')));
    expect(curve).toMatch(/pass@k exp · run-1 · 0 \(\d+ of \d+ tasks\)/);
    // Tables: per group, per task, per rollout (linked to the viewer), behaviour with its n.
    for (const id of ["pass-table", "task-table", "rollout-table", "behaviour-table"]) expect(dom).toContain(`<table id="${id}">`);
    const rolloutTable = dom.slice(dom.indexOf('id="rollout-table"'), dom.indexOf("</table>", dom.indexOf('id="rollout-table"')));
    for (const column of ["status", "reward", "calls", "total_tokens", "duration_ms", "forks", "drift_tokens"]) expect(rolloutTable).toContain(`<th>${column}</th>`);
    expect(rolloutTable).toMatch(/<a href="report\.rollouts\/run-1\.i0\.A-fork\.5\.html">/);
    expect(rolloutTable).toContain("unfinished");
    expect(dom).toContain("<th>self_verification_n</th>");
    // Failing rollouts with their verifier output; the injected markup is text, and nothing ran.
    const failing = dom.slice(dom.indexOf('id="failing"'));
    expect(failing).toContain("expected 3, got 2");
    expect(failing).toContain('data-status="infra_error"');
    expect(dom).not.toContain("<title>owned</title>");
    expect(dom).not.toContain('<img src="x"');
    // No data is said: the unfinished rollout has no reward.
    expect(dom).toContain('<span class="na">n/a</span>');
  }, 120_000);
});

describe("trajectory viewer", () => {
  test.skipIf(!haveChromium)("a forking rollout: calls in order, messages, tokens by mask and logprob, the fork point, timings", async () => {
    const page = join(pagesDir, "run-1.i0.A-fork.5.html");
    const shot = join(scratch, "viewer.png");
    const { dom, code } = await headlessChromium(page, shot, "1200,1600");
    expect(code).toBe(0);
    expect(statSync(shot).size).toBeGreaterThan(10_000);
    expect(dom).toContain('id="rollout-header"');
    expect([...dom.matchAll(/<section class="call[^"]*" id="call-(\d+)"/g)].map((m) => m[1])).toEqual(["1", "2"]);
    // The second call starts a new sample: a fork point.
    expect(dom).toMatch(/<section class="call fork-point" id="call-2"/);
    expect(dom).toContain("fork: new sample 1");
    expect(dom).toMatch(/data-role="user"/);
    expect(dom).toMatch(/data-role="assistant"/);
    // Tokens as Qwen3 text, sampled ones shaded by probability, context grey.
    expect(dom).toMatch(/<span class="token sampled" data-mask="1" data-logprob="-2\.5"[^>]*style="background:hsl\(0,85%,59%\)"[^>]*>,<\/span>/);
    expect(dom).toMatch(/data-mask="1"[^>]*>Hello<\/span>/);
    // Timings: a bar per call and each call's latency.
    expect([...dom.matchAll(/<div class="bar" data-seq="/g)]).toHaveLength(2);
    expect(dom).toContain("latency 50 ms");
  }, 120_000);

  test.skipIf(!haveChromium)("tool calls and results as sent; injected markup stays text", async () => {
    const page = join(pagesDir, "run-1.i1.B-codex.9.html");
    const { dom, code } = await headlessChromium(page, join(scratch, "viewer-injected.png"), "1200,1200");
    expect(code).toBe(0);
    expect(dom).toContain('class="tool-call" data-tool="bash"');
    expect(dom).toContain('class="message tool-result"');
    expect(dom).toContain("&lt;img src=x onerror=");
    expect(dom).not.toContain("<title>owned</title>");
    expect(dom).toContain('id="verifier-output"');
    expect(dom).toContain("expected 3, got 2");
  }, 120_000);
});
