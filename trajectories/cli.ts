/**
 * `forge export --data DIR --out FILE --format verl|sft|jsonl`: trajectories for training.
 */
import { join } from "node:path";
import { parseCommand, intFlag, UsageError } from "../lib/index.ts";
import { existsSync } from "node:fs";
import { dataDirsOf, describeCorruption, listSegments, readRecords, resolveLogDir, type Corruption } from "../records/index.ts";
import { exportTrajectories } from "./export.ts";
import type { ExportManifest } from "./export-manifest.ts";
import type { ExportFormat, ExportOptions } from "./export-options.ts";
import { manifestPath } from "./export-files.ts";
import type { RewardPolicy } from "./types.ts";

const usage = `
usage: forge export --data DIR [--out FILE] [--format verl|sft|jsonl] [options]

  --train-version V       the policy version the training step starts from: each rollout's
                          staleness (versions behind V) is counted in the manifest
  --max-staleness S       with --train-version: leave out rollouts with a call served more than
                          S versions before V (asynchronous iterations; docs/scale.md)
  --data DIR              data directory (segments in DIR/log), or a sharded proxy's root (its
                          shard-N/ data directories); repeat it to read several
  --out FILE              output (default DIR/exports/batch-verl.parquet, DIR/exports/batch-jsonl.jsonl, DIR/exports/sft/batch-sft.parquet)
  --format F              verl (parquet, one row per sample; default) | sft (chat parquet) | jsonl
  --min-group-size N      drop groups with fewer valid rollouts (default 2)
  --reward-policy P       final (reward on the final sample only; default) | same | discounted
  --gamma G               discount for --reward-policy discounted (default 0.9)
  --timeouts T            score (a timeout is the policy's failure; default) | exclude
  --think-tokens A,B      reasoning open/close token ids the template strips (default 151667,151668: Qwen3); "none" disables realign
  --auxiliary A           drop (auxiliary samples — titles, compaction summaries, classifiers — left out, counted; default) | keep (rows of their own, reward 0)
  --group-rows N          also write a GRPO dataset, one row per group naming N rollouts (veRL rollout.n=N)
  --max-group-rows B      at most B rows in that dataset (veRL data.train_batch_size); further groups are counted
  --max-prompt-length N   leave out samples whose prompt exceeds N tokens (veRL rollout.prompt_length)
  --max-response-length N leave out samples whose response exceeds N tokens (veRL rollout.response_length);
                          a rollout whose final sample is too long is left out whole (excluded: overlong)
  --experiment NAME       only rollouts registered under this experiment
  --iteration N           only rollouts of this iteration
  --data-source NAME      veRL data_source column (default: the experiment name)
  --sft-min-reward R      sft: keep ok rollouts with reward >= R (default 1)
  --skip-corrupt          read past damaged bytes in the log (each printed, with counts at the end);
                          without it, damage makes the export fail (exit 1) naming the segment and offset
  --json                  print the manifest as JSON
`;

/** A flag that must be a whole number of at least 1. */
function positive(name: string, value: string): number {
  const n = intFlag(name, value, 0);
  if (n < 1) throw new UsageError(`--${name} must be at least 1, got "${value}"`);
  return n;
}

/**
 * Runs `forge export`.
 *
 * @example
 * await exportCommand(["--data", "data", "--format", "verl"]); // 0
 */
export async function exportCommand(argv: string[]): Promise<number> {
  const args = parseCommand(FLAGS, argv);
  if (!args) return 0;
  const v = args.values;
  if (!v.data?.length) throw new UsageError(`forge export: --data DIR is required\n${usage.trim()}`);
  const dataDirs = v.data;
  await checkDataDirs(dataDirs);
  const options = exportOptionsOf(v, dataDirs[0]!);
  // Damage fails the export unless --skip-corrupt: a batch missing calls must not pass unnoticed.
  const skipped: Corruption[] = [];
  const onCorruption = (c: Corruption): void => {
    skipped.push(c);
    process.stderr.write(`\n${describeCorruption(c)}; skipped (--skip-corrupt)\n`);
  };
  const manifest = await exportTrajectories(readRecords(dataDirs, v["skip-corrupt"] ? { onCorruption } : {}), {
    ...options,
    onProgress: (p) => process.stderr.write(`\rexport: ${p.records} records, ${p.rollouts} rollouts, ${p.samples} samples`),
  });
  report(manifest, skipped, v.json ?? false);
  return 0;
}

const FLAGS = {
  name: "export",
  usage,
  options: {
    out: { type: "string" },
    format: { type: "string", default: "verl" },
    "min-group-size": { type: "string" },
    "reward-policy": { type: "string", default: "final" },
    gamma: { type: "string" },
    timeouts: { type: "string", default: "score" },
    "think-tokens": { type: "string", default: "151667,151668" },
    "data-source": { type: "string" },
    experiment: { type: "string" },
    "group-rows": { type: "string" },
    "max-group-rows": { type: "string" },
    "max-prompt-length": { type: "string" },
    "max-response-length": { type: "string" },
    auxiliary: { type: "string", default: "drop" },
    iteration: { type: "string" },
    "sft-min-reward": { type: "string" },
    "skip-corrupt": { type: "boolean", default: false },
    data: { type: "string", multiple: true },
    "train-version": { type: "string" },
    "max-staleness": { type: "string" },
    json: { type: "boolean", default: false },
  },
} as const;

/** Each data directory exists and holds a segment log (its own or its shards'). */
async function checkDataDirs(dataDirs: readonly string[]): Promise<void> {
  for (const dir of dataDirs) {
    if (!existsSync(dir)) throw new UsageError(`--data ${dir}: no such directory`);
    const logs = dataDirsOf(dir);
    const segments = (await Promise.all(logs.map((d) => listSegments(d)))).flat();
    if (segments.length === 0) throw new UsageError(`--data ${dir}: no segment log in ${resolveLogDir(dir)} nor in shard-N/ data directories (pass the data directory the proxy wrote to)`);
  }
}

type Flags = NonNullable<ReturnType<typeof parseCommand<(typeof FLAGS)["options"]>>>["values"];

/** The export's options from the command's flags, each checked (a UsageError names the flag). */
function exportOptionsOf(v: Flags, data: string): ExportOptions {
  if (v["max-staleness"] !== undefined && v["train-version"] === undefined) throw new UsageError("--max-staleness needs --train-version (the policy version the step trains from)");
  const format = v.format as ExportFormat;
  if (!["verl", "sft", "jsonl"].includes(format)) throw new UsageError(`--format must be verl, sft or jsonl, got "${format}"`);
  const policy = v["reward-policy"] as RewardPolicy;
  if (!["final", "same", "discounted"].includes(policy)) throw new UsageError(`--reward-policy must be final, same or discounted, got "${policy}"`);
  if (v.auxiliary !== "drop" && v.auxiliary !== "keep") throw new UsageError(`--auxiliary must be drop or keep, got "${v.auxiliary}"`);
  if (v.timeouts !== "score" && v.timeouts !== "exclude") throw new UsageError(`--timeouts must be score or exclude, got "${v.timeouts}"`);
  const gamma = v.gamma === undefined ? 0.9 : Number(v.gamma);
  if (!(gamma >= 0 && gamma <= 1)) throw new UsageError(`--gamma must be a number in [0, 1], got "${v.gamma}"`);
  const sftMinReward = v["sft-min-reward"] === undefined ? 1 : Number(v["sft-min-reward"]);
  if (Number.isNaN(sftMinReward)) throw new UsageError(`--sft-min-reward must be a number, got "${v["sft-min-reward"]}"`);
  let think: { thinkOpen?: number; thinkClose?: number } = { thinkOpen: -1, thinkClose: -1 };
  if (v["think-tokens"] !== "none") {
    const ids = v["think-tokens"]!.split(",").map(Number);
    if (ids.length !== 2 || !ids.every(Number.isInteger)) throw new UsageError(`--think-tokens must be OPEN,CLOSE token ids or "none", got "${v["think-tokens"]}"`);
    think = { thinkOpen: ids[0]!, thinkClose: ids[1]! };
  }
  if (v["group-rows"] !== undefined && (format !== "verl" || intFlag("group-rows", v["group-rows"], 0) < 1))
    throw new UsageError(`--group-rows needs --format verl and a count of at least 1, got "${v["group-rows"]}"`);
  // SFT goes to a subfolder: analytics' `samples` view reads DIR/exports/*.parquet as veRL batches.
  const out = v.out ?? (format === "sft" ? join(data, "exports", "sft", "batch-sft.parquet") : join(data, "exports", `batch-${format}.${format === "jsonl" ? "jsonl" : "parquet"}`));
  return {
    format,
    out,
    minGroupSize: intFlag("min-group-size", v["min-group-size"], 2),
    rewardPolicy: policy,
    gamma,
    timeouts: v.timeouts,
    auxiliary: v.auxiliary,
    ...(v["train-version"] !== undefined ? { trainVersion: intFlag("train-version", v["train-version"], 0) } : {}),
    ...(v["max-staleness"] !== undefined ? { maxStaleness: intFlag("max-staleness", v["max-staleness"], 0) } : {}),
    ...think,
    // Qwen3 renders "</think>\n\n": "\n\n" (271) and "\n" (198) go with a stripped block.
    thinkTrailing: [198, 271],
    ...(v["data-source"] ? { dataSource: v["data-source"] } : {}),
    ...(v.experiment ? { experiment: v.experiment } : {}),
    ...(v["group-rows"] !== undefined ? { groupRows: intFlag("group-rows", v["group-rows"], 0) } : {}),
    ...(v["max-group-rows"] !== undefined ? { maxGroupRows: positive("max-group-rows", v["max-group-rows"]) } : {}),
    ...(v["max-prompt-length"] !== undefined ? { maxPromptLength: positive("max-prompt-length", v["max-prompt-length"]) } : {}),
    ...(v["max-response-length"] !== undefined ? { maxResponseLength: positive("max-response-length", v["max-response-length"]) } : {}),
    ...(v.iteration !== undefined ? { iteration: intFlag("iteration", v.iteration, 0) } : {}),
    sftMinReward,
  };
}

/** The manifest (`--json`) or a one-line summary, and the damage `--skip-corrupt` skipped. */
function report(manifest: ExportManifest, skipped: readonly Corruption[], json: boolean): void {
  if (skipped.length > 0) {
    const bytes = skipped.reduce((sum, c) => sum + c.length, 0);
    const segments = [...new Set(skipped.map((c) => c.segment))];
    console.error(`export: skipped ${skipped.length} damaged byte ranges (${bytes} bytes) in ${segments.length} segments (${segments.join(", ")}); the records in them are not in the batch`);
  }
  if (json) {
    console.log(JSON.stringify(manifest, null, 2));
    return;
  }
  const excluded = Object.entries(manifest.rollouts.excluded).map(([k, n]) => `${n} ${k}`).join(", ") || "none";
  console.error(
    `\rexport: ${manifest.rows} rows → ${manifest.out} (${manifest.rollouts.valid}/${manifest.rollouts.seen} rollouts valid; excluded: ${excluded}; ` +
      `${manifest.groups.dropped.length} groups dropped below ${manifest.options.min_group_size}; ` +
      `${manifest.calls.realign} realigns, ${manifest.drift_tokens} drift tokens, ${manifest.calls.fork} forks, ${manifest.calls.broken} broken calls, ` +
      `${manifest.auxiliary.samples} auxiliary samples${manifest.auxiliary.dropped ? " dropped" : ""})\n` +
      `manifest: ${manifestPath(manifest.out)}`,
  );
}
