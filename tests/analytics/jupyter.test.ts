/**
 * The Jupyter notebooks in analytics/notebooks/ (jupytext pairs: the `.py` is the source, the
 * `.ipynb` is what Jupyter opens) run top to bottom on the quickstart's real run data, in the
 * venv python/build-notebooks-env.sh builds, and every figure they compute from the
 * `forge analyze --db` database with DuckDB's Python API and pandas equals `forge analyze --json`'s.
 * A missing venv fails, naming the script that builds it: never a skip.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "..", "..");
const notebooks = join(root, "analytics", "notebooks");
type Row = Record<string, unknown>;

function notebookPython(): string {
  const python = process.env.FORGE_NOTEBOOK_PYTHON ?? join(root, ".venv", "notebooks", "bin", "python");
  if (!existsSync(python)) {
    throw new Error(`the notebooks' venv (${python}) is missing; build it with \`bash python/build-notebooks-env.sh\` in the repo root (.ci/run does this before the tests)`);
  }
  return python;
}

function spawn(cmd: string[], env: Record<string, string> = {}) {
  const result = Bun.spawnSync(cmd, { cwd: root, stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } });
  return { code: result.exitCode, out: result.stdout.toString(), err: result.stderr.toString() };
}
const forge = (args: string[]) => spawn([process.execPath, join(root, "bin", "forge.ts"), ...args]);

let data = "";
let db = "";
let analysis: { pass: Row[]; passCurve: Row[]; behaviour: Row[]; behaviourByHarness: Row[]; tokenBudgets: Row[]; totals: Row; options: { ks: number[] } };

beforeAll(() => {
  data = mkdtempSync(join(tmpdir(), "forge-jupyter-"));
  // Two runs of the quickstart in one data directory: two groups, as after a second iteration.
  for (let i = 0; i < 2; i++) {
    const run = forge(["run", "examples/quickstart/experiment.yaml", "--data", join(data, "run"), "--quiet"]);
    if (run.code !== 0) throw new Error(`forge run failed: ${run.err}`);
  }
  db = join(data, "forge.duckdb");
  const analyzed = forge(["analyze", "--data", join(data, "run"), "--db", db, "--json", "--quiet"]);
  if (analyzed.code !== 0) throw new Error(`forge analyze failed: ${analyzed.err}`);
  analysis = JSON.parse(analyzed.out);
}, 180_000);

afterAll(() => rmSync(data, { recursive: true, force: true }));

/** Runs a notebook with parameters and returns the figures it wrote. */
function execute(name: string, params: Record<string, string> = {}): Row {
  const figures = join(data, `${name}.json`);
  const executed = join(data, `${name}.out.ipynb`);
  const args = Object.entries({ db, figures_out: figures, ...params }).map(([key, value]) => `${key}=${value}`);
  const result = spawn([notebookPython(), join(notebooks, "execute.py"), join(notebooks, `${name}.ipynb`), executed, ...args], { MPLBACKEND: "Agg" });
  if (result.code !== 0) throw new Error(`${name}.ipynb failed:\n${result.err}`);
  // Every cell ran, none left an error output.
  const nb = JSON.parse(readFileSync(executed, "utf8")) as { cells: { cell_type: string; execution_count: number | null; outputs?: { output_type: string }[] }[] };
  const code = nb.cells.filter((cell) => cell.cell_type === "code");
  expect(code.every((cell) => cell.execution_count !== null)).toBe(true);
  expect(code.flatMap((cell) => cell.outputs ?? []).some((output) => output.output_type === "error")).toBe(false);
  return JSON.parse(readFileSync(figures, "utf8"));
}

/** Each of forge's rows has a notebook row with the same keys and every number equal (to 1e-12). */
function expectSameRows(notebook: Row[], forgeRows: Row[], keys: string[]) {
  expect(forgeRows.length).toBeGreaterThan(0);
  expect(notebook).toHaveLength(forgeRows.length);
  for (const expected of forgeRows) {
    const id = keys.map((key) => expected[key]);
    const row = notebook.find((candidate) => keys.every((key, i) => candidate[key] === id[i]));
    if (!row) throw new Error(`no notebook row for ${JSON.stringify(id)}`);
    for (const [column, value] of Object.entries(expected)) {
      if (typeof value === "number") {
        expect({ column, id, value: row[column] }).toEqual({ column, id, value: expect.any(Number) });
        expect(Math.abs((row[column] as number) - value)).toBeLessThan(1e-12);
      } else if (value === null && column in row) {
        expect({ column, id, value: row[column] }).toEqual({ column, id, value: null });
      }
    }
  }
}

test("the .ipynb files are the jupytext conversions of their .py sources", () => {
  const sources = readdirSync(notebooks).filter((file) => /^\d\d-.*\.py$/.test(file)).sort();
  expect(sources.length).toBeGreaterThanOrEqual(4);
  const check = spawn([
    notebookPython(),
    "-c",
    `import sys, jupytext, nbformat
bad = []
for py in sys.argv[1:]:
    want = [(c.cell_type, c.source) for c in jupytext.read(py).cells]
    have = [(c.cell_type, c.source) for c in nbformat.read(py[:-3] + ".ipynb", as_version=4).cells]
    if want != have: bad.append(py)
if bad: sys.exit("out of date (run: jupytext --to ipynb FILE.py): " + ", ".join(bad))`,
    ...sources.map((file) => join(notebooks, file)),
  ]);
  expect(check.err).toBe("");
  expect(check.code).toBe(0);
}, 60_000);

test("01-pass-at-k: pass@k, pass^k, mean reward and task counts per experiment, run and iteration, and the curves over k", () => {
  const figures = execute("01-pass-at-k") as { ks: number[]; pass: Row[]; passCurve: Row[] };
  expect(figures.ks).toEqual(analysis.options.ks);
  expect(analysis.pass).toHaveLength(2);
  expectSameRows(figures.pass, analysis.pass, ["experiment", "run", "iteration"]);
  expectSameRows(figures.passCurve, analysis.passCurve, ["experiment", "run", "iteration"]);
  // Explicit k: the notebook's parameter works, and k above the trials leaves every task out.
  const wide = execute("01-pass-at-k", { ks: "[1, 8]" }) as { pass: Row[] };
  expect(wide.pass.every((row) => row.tasks_scored === 0 && row["pass@8"] === null)).toBe(true);
}, 120_000);

test("02-behaviour: the behaviour metrics per experiment, run and iteration and per harness", () => {
  const figures = execute("02-behaviour") as { behaviour: Row[]; behaviourByHarness: Row[] };
  expectSameRows(figures.behaviour, analysis.behaviour, ["experiment", "run", "iteration"]);
  expectSameRows(figures.behaviourByHarness, analysis.behaviourByHarness, ["harness"]);
}, 120_000);

test("03-tokens-latency: token budgets per harness and the pooled call latency", () => {
  const figures = execute("03-tokens-latency") as { tokenBudgets: Row[]; pooled: { latency_ms: number; calls: number } };
  expectSameRows(figures.tokenBudgets, analysis.tokenBudgets, ["harness"]);
  expect(figures.pooled.calls).toBe(analysis.totals.calls as number);
  const pooled = analysis.behaviourByHarness[0]!.latency_ms as number;
  expect(Math.abs(figures.pooled.latency_ms - pooled)).toBeLessThan(1e-9);
}, 120_000);

test("04-trajectories: every rollout and call listed; a rollout shown call by call, a missing one named", () => {
  const figures = execute("04-trajectories") as { rollouts: number; calls: number; rollout: string; shown_calls: number };
  expect(figures.rollouts).toBe(analysis.totals.rollouts as number);
  expect(figures.calls).toBe(analysis.totals.calls as number);
  expect(figures.shown_calls).toBeGreaterThan(0);
  const failed = spawn([notebookPython(), join(notebooks, "execute.py"), join(notebooks, "04-trajectories.ipynb"), join(data, "bad.ipynb"), `db=${db}`, "rollout_id=no-such-rollout"]);
  expect(failed.code).toBe(1);
  expect(failed.err).toContain("no rollout 'no-such-rollout'");
}, 120_000);
