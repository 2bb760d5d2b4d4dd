/**
 * The GUI sibling of bench/harness-samples.ts: the GUI quickstart (examples/gui-quickstart: four
 * browser tasks, screenshots through Playwright MCP, docs/gui.md) run by `forge run`'s code path
 * against the policy simulator, for claude-code, codex and opencode, with the simulator playing
 * each engine (`spec.policy.engine`: vllm, sglang), in engine mode and in token-in mode
 * (`spec.policy.tokenMode: token-in`, docs/token-in.md). For each: model calls per rollout, agent
 * samples per rollout (what the export trains on), drift tokens, forks, image tokens per
 * rollout's final sample, the calls that did not complete (with the first error), and the
 * rollouts that passed. The goal in token-in mode: one agent sample per rollout, 0 drift tokens.
 *
 *   bun bench/gui-samples.ts [--harness claude-code,codex,opencode] [--engine vllm,sglang]
 *                            [--mode engine,token-in] [--k 1] [--keep DIR] [--json]
 *
 * A harness whose CLI is not installed, or a machine without chromium or node, is listed as skipped.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { readRecords } from "../records/index.ts";
import { CallStatus, parseExperimentFile, TokenStatus } from "../schemas/index.ts";
import { assembleTrajectory, collectRollouts, exportTrajectories, withThinkDefaults } from "../trajectories/index.ts";
import { harnessUnavailable } from "../workflows/harnesses/index.ts";
import { runExperiment } from "../workflows/local/run.ts";
import { benchFlags } from "./lib/flags.ts";

const HARNESSES = ["claude-code", "codex", "opencode"] as const;
const ENGINES = ["vllm", "sglang"] as const;
const MODES = ["engine", "token-in"] as const;
const IMAGE_PAD = 151655; // <|image_pad|>, Qwen2.5-VL's (and the simulator's Qwen3 vocabulary's)

export type GuiSamples = {
  harness: string;
  engine: string;
  mode: string;
  skipped?: string;
  rollouts: number;
  passed: number;
  calls: number[];
  agentSamples: number[];
  exportedRows: number;
  forks: number;
  driftTokens: number;
  /** `<|image_pad|>` tokens in each rollout's final sample (the screenshots the trainer sees). */
  imageTokens: number[];
  /** Calls whose tokens are not COMPLETE or that did not end OK, and the first such reason. */
  incomplete: number;
  firstProblem?: string;
  seconds: number;
};

function unavailable(harness: string): string | undefined {
  const missing = [harnessUnavailable(harness), Bun.which("chromium") ?? Bun.which("chromium-browser") ? undefined : "chromium", Bun.which("node") ? undefined : "node"].filter(Boolean);
  return missing.length > 0 ? missing.join(", ") : undefined;
}

async function measure(harness: string, engine: string, mode: string, k: number, dataDir: string): Promise<GuiSamples> {
  const row: GuiSamples = { harness, engine, mode, rollouts: 0, passed: 0, calls: [], agentSamples: [], exportedRows: 0, forks: 0, driftTokens: 0, imageTokens: [], incomplete: 0, seconds: 0 };
  const why = unavailable(harness);
  if (why) return { ...row, skipped: why };
  const started = performance.now();
  const experimentPath = resolve(import.meta.dir, "../examples/gui-quickstart/experiment.yaml");
  const experiment = parseExperimentFile(experimentPath);
  experiment.spec.harness.name = harness as typeof experiment.spec.harness.name;
  experiment.spec.policy.engine = engine as typeof experiment.spec.policy.engine;
  experiment.spec.rollouts.k = k;
  experiment.spec.metrics.k = [1];
  if (mode === "token-in") experiment.spec.policy.tokenMode = "token-in";
  try {
    await runExperiment({ experiment, experimentPath, dataDir, quiet: true, log: () => {} });
  } catch (error) {
    return { ...row, skipped: `forge run refused: ${(error as Error).message.split("\n")[0]}`, seconds: (performance.now() - started) / 1000 };
  }
  const manifest = await exportTrajectories(readRecords(dataDir), { format: "jsonl", out: join(dataDir, "exports", "bench.jsonl"), minGroupSize: 1 });
  row.exportedRows = manifest.rows;
  for await (const collected of collectRollouts(readRecords(dataDir))) {
    const t = assembleTrajectory(collected.calls, collected.rollout, collected.result, withThinkDefaults({}), collected.content);
    row.rollouts++;
    if (t.status === "ok" && t.reward >= 1) row.passed++;
    row.calls.push(t.stats.calls);
    row.agentSamples.push(t.samples.filter((s) => !s.auxiliary).length);
    row.forks += t.stats.fork;
    row.driftTokens += t.stats.drift_tokens;
    const final = t.samples.find((s) => s.is_final);
    row.imageTokens.push(final ? [...final.prompt_ids, ...final.response_ids].filter((id) => id === IMAGE_PAD).length : 0);
    for (const { call } of collected.calls) {
      if (call.status === CallStatus.OK && call.tokenStatus === TokenStatus.COMPLETE) continue;
      row.incomplete++;
      row.firstProblem ??= `${CallStatus[call.status]}/${TokenStatus[call.tokenStatus]}${call.error ? `: ${call.error.slice(0, 160)}` : ""}`;
    }
  }
  row.seconds = (performance.now() - started) / 1000;
  return row;
}

const perRollout = (xs: number[]): string => (xs.length === 0 ? "-" : new Set(xs).size === 1 ? String(xs[0]) : xs.join(", "));

function table(rows: GuiSamples[]): string {
  const out = ["| harness | engine | token mode | calls/rollout | agent samples/rollout | drift tokens | forks | image tokens (final sample) | calls not complete | passed | s |", "|---|---|---|---|---|---|---|---|---|---|---|"];
  for (const r of rows) {
    if (r.skipped) {
      out.push(`| ${r.harness} | ${r.engine} | ${r.mode} | skipped: ${r.skipped} | | | | | | | |`);
      continue;
    }
    out.push(`| ${r.harness} | ${r.engine} | ${r.mode} | ${perRollout(r.calls)} | ${perRollout(r.agentSamples)} | ${r.driftTokens} | ${r.forks} | ${perRollout(r.imageTokens)} | ${r.incomplete}${r.firstProblem ? ` (${r.firstProblem})` : ""} | ${r.passed}/${r.rollouts} | ${r.seconds.toFixed(0)} |`);
  }
  return out.join("\n");
}

function pick<T extends string>(value: string, all: readonly T[], name: string): T[] {
  if (!value) return [...all];
  return value.split(",").map((v) => {
    if (!all.includes(v as T)) throw new Error(`--${name} ${v}: not one of ${all.join(", ")}`);
    return v as T;
  });
}

if (import.meta.main) {
  const { flag, has } = benchFlags();
  const k = Number(flag("k", "1"));
  const harnesses = pick(flag("harness", ""), HARNESSES, "harness");
  const engines = pick(flag("engine", ""), ENGINES, "engine");
  const modes = pick(flag("mode", ""), MODES, "mode");
  const keep = flag("keep", "");
  const root = keep || mkdtempSync(join(tmpdir(), "forge-gui-samples-"));
  const rows: GuiSamples[] = [];
  try {
    for (const mode of modes)
      for (const harness of harnesses)
        for (const engine of engines) {
          process.stderr.write(`${harness} ${engine} ${mode}… `);
          const row = await measure(harness, engine, mode, k, join(root, `${mode}-${harness}-${engine}`));
          rows.push(row);
          process.stderr.write(`${row.skipped ?? `${row.rollouts} rollouts`} (${row.seconds.toFixed(1)} s)\n`);
        }
  } finally {
    if (!keep) rmSync(root, { recursive: true, force: true });
  }
  if (has("json")) console.log(JSON.stringify(rows, null, 2));
  else {
    console.log(`examples/gui-quickstart (4 browser tasks, screenshots 1280x720), k = ${k}, policy simulator; goal in token-in mode: 1 agent sample per rollout, 0 drift tokens:\n`);
    console.log(table(rows));
  }
}
