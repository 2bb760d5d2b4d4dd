/**
 * Calls and training samples per rollout for every installed harness, on the multi-step example
 * (examples/multistep: read, bash, write, check, then the final answer; k = 2) run offline by
 * `forge run`'s code path against the policy simulator. For each harness: the protocol it speaks,
 * model calls per rollout, agent samples per rollout (what the export trains on), the auxiliary
 * calls recognised (titles, compaction summaries, …), whether the reward sits on the agent's final
 * answer, and, where a rollout forks, what the harness sent where the held tokens said otherwise
 * (the first differing text, decoded by the simulator's tokenizer). docs/harnesses.md's tables
 * are this script's output, in both token modes: engine mode (the engine renders each prompt;
 * the default) and token-in mode (`--token-in`, `spec.policy.tokenMode: token-in`: the proxy
 * keeps each conversation's ids canonical; docs/token-in.md), or both one after the other
 * (`--both`). In token-in mode it also counts the chains the proxy started and why (the
 * ModelCall's chain_start).
 *
 *   bun bench/harness-samples.ts [--harness codex,pi,pi:compaction,...] [--k 2] [--token-in | --both] [--keep DIR] [--json]
 *
 * A harness whose CLI is not installed is listed as skipped.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { readRecords } from "../records/index.ts";
import { ChainStart, parseExperimentFile, Protocol, TokenMode } from "../schemas/index.ts";
import { startPolicySimulator } from "../simulator/index.ts";
import { commonPrefix } from "../lib/index.ts";
import { assembleTrajectory, collectRollouts, exportTrajectories, withThinkDefaults, type RolloutTrajectory } from "../trajectories/index.ts";
import { type ResolvedCall } from "../trajectories/types.ts";
import { harnessUnavailable } from "../workflows/harnesses/index.ts";
import { runExperiment } from "../workflows/local/run.ts";
import { benchFlags } from "./lib/flags.ts";

type Case = { key: string; label: string; harness: string; options: Record<string, unknown> };

const CASES: Case[] = [
  { key: "codex", label: "codex", harness: "codex", options: {} },
  { key: "claude-code", label: "claude-code", harness: "claude-code", options: {} },
  { key: "pi:openai-completions", label: "pi (openai-completions)", harness: "pi", options: { api: "openai-completions" } },
  { key: "pi:openai-responses", label: "pi (openai-responses)", harness: "pi", options: { api: "openai-responses" } },
  { key: "pi:anthropic-messages", label: "pi (anthropic-messages)", harness: "pi", options: { api: "anthropic-messages" } },
  // The window pi was given before it came from the server, shrunk so this short task crosses
  // contextWindow - 16384: pi summarises the conversation after the final answer.
  { key: "pi:compaction", label: "pi (openai-completions, contextWindow 17000)", harness: "pi", options: { api: "openai-completions", contextWindow: 17000 } },
  { key: "qwen-code", label: "qwen-code", harness: "qwen-code", options: {} },
  { key: "opencode", label: "opencode", harness: "opencode", options: {} },
  { key: "openclaw", label: "openclaw", harness: "openclaw", options: {} },
  { key: "forge-react", label: "forge-react", harness: "forge-react", options: { maxTurns: 10 } },
];

const PROTOCOL_NAMES: Record<number, string> = {
  [Protocol.CHAT]: "Chat",
  [Protocol.COMPLETIONS]: "Completions",
  [Protocol.RESPONSES]: "Responses",
  [Protocol.ANTHROPIC_MESSAGES]: "Messages",
};

export type HarnessSamples = {
  label: string;
  skipped?: string;
  protocol: string;
  rollouts: number;
  passed: number;
  calls: number[];
  agentSamples: number[];
  exportedRows: number;
  auxiliary: { [fingerprint: string]: number };
  forks: number;
  broken: number;
  rewardOnFinalAnswer: boolean;
  /** Tokens of context the policy saw that differ from the training sequence (realigned away), all rollouts. */
  driftTokens: number;
  /** Token-in mode: the chains started, by why (ChainStart), over all rollouts. */
  chainStarts?: { [why: string]: number };
  /** Where a rollout first forked: the text the held sample had and the text the harness sent. */
  divergence?: { call: number; held: string; sent: string };
};

/** The first fork of a trajectory: held tokens vs the prompt sent, from where they part. */
function firstFork(t: RolloutTrajectory, calls: readonly ResolvedCall[]): { call: number; held: number[]; sent: number[] } | undefined {
  const fork = t.kinds.find((k) => k.kind === "fork");
  if (!fork) return undefined;
  const bySeq = new Map(calls.map((c) => [c.call.seq, c]));
  const call = bySeq.get(fork.seq)!;
  const prompt = call.prompt ?? [];
  // The agent calls before it, each rebuilt as prompt + completion: the one sharing the longest prefix.
  let best: number[] = [];
  let lcp = -1;
  for (const k of t.kinds) {
    if (k.seq >= fork.seq || k.kind === "auxiliary" || k.kind === "broken") continue;
    const c = bySeq.get(k.seq)!;
    const tokens = [...(c.prompt ?? []), ...c.call.completionTokenIds];
    const l = commonPrefix(tokens, prompt);
    if (l > lcp) [lcp, best] = [l, tokens];
  }
  const from = Math.max(0, lcp - 4);
  return { call: fork.seq, held: best.slice(from, lcp + 12), sent: prompt.slice(from, lcp + 12) };
}

async function measure(c: Case, k: number, dataDir: string, detokenize: (ids: number[]) => Promise<string>, tokenIn: boolean): Promise<HarnessSamples> {
  const base: HarnessSamples = { label: c.label, protocol: "", rollouts: 0, passed: 0, calls: [], agentSamples: [], exportedRows: 0, auxiliary: {}, forks: 0, broken: 0, rewardOnFinalAnswer: true, driftTokens: 0, ...(tokenIn ? { chainStarts: {} } : {}) };
  const why = harnessUnavailable(c.harness);
  if (why) return { ...base, skipped: why };
  const experimentPath = resolve(import.meta.dir, "../examples/multistep/experiment.yaml");
  const experiment = parseExperimentFile(experimentPath);
  experiment.spec.harness.name = c.harness as typeof experiment.spec.harness.name;
  experiment.spec.harness.options = c.options;
  experiment.spec.rollouts.k = k;
  experiment.spec.rollouts.parallelism = k;
  experiment.spec.metrics.k = [1];
  if (tokenIn) experiment.spec.policy.tokenMode = "token-in";
  const result = await runExperiment({ experiment, experimentPath, dataDir, quiet: true, log: () => {} });
  const manifest = await exportTrajectories(readRecords(dataDir), { format: "jsonl", out: join(dataDir, "exports", "bench.jsonl"), minGroupSize: 1 });
  base.exportedRows = manifest.rows;
  const protocols = new Set<string>();
  for await (const collected of collectRollouts(readRecords(dataDir))) {
    const t = assembleTrajectory(collected.calls, collected.rollout, collected.result, withThinkDefaults({}), collected.content);
    base.rollouts++;
    if (t.status === "ok" && t.reward >= 1) base.passed++;
    for (const c of collected.calls) protocols.add(PROTOCOL_NAMES[c.call.protocol] ?? String(c.call.protocol));
    base.calls.push(t.stats.calls);
    base.agentSamples.push(t.samples.filter((s) => !s.auxiliary).length);
    base.forks += t.stats.fork;
    base.broken += t.stats.broken;
    base.driftTokens += t.stats.drift_tokens;
    for (const c of collected.calls) {
      if (c.call.tokenMode !== TokenMode.TOKEN_IN || c.call.chainStart === ChainStart.UNSPECIFIED) continue;
      const why = chainStartName(c.call.chainStart);
      base.chainStarts![why] = (base.chainStarts![why] ?? 0) + 1;
    }
    for (const kind of t.kinds) if (kind.fingerprint) base.auxiliary[kind.fingerprint] = (base.auxiliary[kind.fingerprint] ?? 0) + 1;
    // The reward sits on the sample holding the last agent call, and only there.
    const lastAgent = [...t.kinds].reverse().find((x) => x.kind !== "auxiliary" && x.kind !== "broken");
    const final = t.samples.filter((s) => s.is_final);
    const ok = final.length === 1 && final[0]!.call_ids.includes(lastAgent?.call_id ?? "") && final[0]!.reward === t.reward && !final[0]!.auxiliary;
    if (!ok || t.samples.some((s) => s.auxiliary && s.reward !== 0)) base.rewardOnFinalAnswer = false;
    if (!base.divergence) {
      const fork = firstFork(t, collected.calls);
      if (fork) base.divergence = { call: fork.call, held: await detokenize(fork.held), sent: await detokenize(fork.sent) };
    }
  }
  base.protocol = [...protocols].join(", ");
  if (result.local.outcomes.length !== base.rollouts) base.skipped = `${result.local.outcomes.length} rollouts ran but ${base.rollouts} were recorded`;
  return base;
}

/** A chain start as the tables print it: HISTORY_REWRITTEN → "history rewritten". */
const chainStartName = (why: ChainStart): string => (ChainStart[why] ?? String(why)).toLowerCase().replaceAll("_", " ");

const perRollout = (xs: number[]): string => (xs.length === 0 ? "-" : new Set(xs).size === 1 ? String(xs[0]) : xs.join(", "));

/** The markdown table of docs/harnesses.md. */
function table(rows: HarnessSamples[], tokenIn: boolean): string {
  const out = [
    `| harness | protocol | calls/rollout | agent samples/rollout | exported rows | auxiliary calls | forks | drift tokens | ${tokenIn ? "chains started (why) | " : ""}reward on final answer | passed |`,
    `|---|---|---|---|---|---|---|---|${tokenIn ? "---|" : ""}---|---|`,
  ];
  for (const r of rows) {
    if (r.skipped && r.rollouts === 0) {
      out.push(`| ${r.label} | skipped: ${r.skipped} | | | | | | |${tokenIn ? " |" : ""} | |`);
      continue;
    }
    const aux = Object.entries(r.auxiliary).map(([name, n]) => `${name} ×${n}`).join(", ") || "none";
    const chains = r.chainStarts ? `${Object.entries(r.chainStarts).map(([why, n]) => `${why} ×${n}`).join(", ") || "none"} | ` : "";
    out.push(
      `| ${r.label} | ${r.protocol} | ${perRollout(r.calls)} | ${perRollout(r.agentSamples)} | ${r.exportedRows} / ${r.rollouts} rollouts | ${aux} | ${r.forks} | ${r.driftTokens} | ${chains}${r.rewardOnFinalAnswer ? "yes" : "NO"} | ${r.passed}/${r.rollouts} |`,
    );
  }
  return out.join("\n");
}

if (import.meta.main) {
  const { flag, has } = benchFlags();
  const k = Number(flag("k", "2"));
  const wanted = flag("harness", "");
  const cases = wanted
    ? wanted.split(",").flatMap((w) => {
        const found = CASES.filter((c) => c.key === w || c.harness === w);
        if (found.length === 0) throw new Error(`--harness ${w}: not one of ${CASES.map((c) => c.key).join(", ")}`);
        return found;
      })
    : CASES;
  const keep = flag("keep", "");
  const modes = has("both") ? [false, true] : [has("token-in")];
  const root = keep || mkdtempSync(join(tmpdir(), "forge-harness-samples-"));
  const sim = await startPolicySimulator({ seed: 0 });
  const detokenize = async (ids: number[]): Promise<string> => {
    const response = await fetch(`${sim.url}/detokenize`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ tokens: ids }) });
    return ((await response.json()) as { prompt: string }).prompt;
  };
  const results: { tokenIn: boolean; rows: HarnessSamples[] }[] = [];
  try {
    for (const tokenIn of modes) {
      const rows: HarnessSamples[] = [];
      for (const c of cases) {
        process.stderr.write(`${c.label}${tokenIn ? " (token-in)" : ""}… `);
        const started = performance.now();
        const row = await measure(c, k, join(root, `${tokenIn ? "token-in-" : ""}${c.label.replace(/[^a-z0-9-]+/gi, "_")}`), detokenize, tokenIn);
        rows.push(row);
        process.stderr.write(`${row.skipped ?? `${row.rollouts} rollouts`} (${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
      }
      results.push({ tokenIn, rows });
    }
  } finally {
    await sim.stop();
    if (!keep) rmSync(root, { recursive: true, force: true });
  }
  if (has("json")) console.log(JSON.stringify(results.length === 1 ? results[0]!.rows : results, null, 2));
  else {
    for (const { tokenIn, rows } of results) {
      console.log(`examples/multistep (read, bash, write, check, answer), k = ${k}, policy simulator, ${tokenIn ? "token-in mode" : "engine mode"}:\n`);
      console.log(table(rows, tokenIn));
      const forks = rows.filter((r) => r.divergence);
      if (forks.length > 0) {
        console.log("\nwhere rollouts fork (call n's prompt against the tokens held from the calls before it):");
        for (const r of forks) console.log(`- ${r.label}, call ${r.divergence!.call}: held ${JSON.stringify(r.divergence!.held)}, sent ${JSON.stringify(r.divergence!.sent)}`);
      }
      console.log("");
    }
  }
}
