/**
 * forge export end to end over a real segment log: the verl parquet read back by DuckDB and its
 * JSONL sidecar agree with the records token for token; exclusions and group sizes; streaming.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { openSegmentLog, readRecords } from "../../records/index.ts";
import { scratchDir } from "../../records/testing.ts";
import { exportCommand } from "../../trajectories/cli.ts";
import { exportTrajectories, trajectoryOf } from "../../trajectories/index.ts";
import { manifestPath } from "../../trajectories/testing.ts";
import { rolloutRecords, scenarioRecords as scenario } from "../../trajectories/testing.ts";
import type { Record as ForgeRecord } from "../../schemas/index.ts";

const THINK = 151667;
const END_THINK = 151668;
const scratch = scratchDir("forge-trajectory-");
afterAll(() => scratch.cleanup());

async function writeLog(dir: string, records: Iterable<ForgeRecord>): Promise<void> {
  const log = await openSegmentLog(dir);
  for (const r of records) log.append(r);
  await log.close();
}

async function query(sql: string): Promise<Record<string, unknown>[]> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    const reader = await connection.runAndReadAll(sql);
    return reader.getRowObjectsJson() as Record<string, unknown>[];
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** Two opencode rollouts of one task: a title call (no tools), then two agent calls; rewards 1 and 0. */
function opencodeRecords(): ForgeRecord[] {
  const all: ForgeRecord[] = [];
  const tools = [{ type: "function", function: { name: "bash", parameters: { type: "object" } } }];
  for (const [id, reward] of [["oc-a", 1], ["oc-b", 0]] as const) {
    const r = rolloutRecords(id, { task: "stock", group: "stock@v0", experiment: "aux", harness: "opencode" });
    r.call({
      prompt: [900, 901],
      completion: [902],
      requestBody: { model: "m", messages: [{ role: "system", content: "You are a title generator. You output ONLY a thread title. Nothing else." }, { role: "user", content: "sum stock.csv" }] },
    });
    r.call({ prompt: [1, 2, 3], completion: [10], requestBody: { model: "m", messages: [{ role: "system", content: "You are opencode." }, { role: "user", content: "sum stock.csv" }], tools } });
    r.call({ prompt: [1, 2, 3, 10, 4], completion: [11], requestBody: { model: "m", messages: [{ role: "system", content: "You are opencode." }, { role: "user", content: "sum stock.csv" }], tools } });
    r.finish(reward);
    all.push(...r.records);
  }
  return all;
}

describe("forge export: auxiliary calls", () => {
  const dir = join(scratch.dir, "aux");

  test("drop (default): the title samples are left out and counted; each rollout's one row is its agent's final answer", async () => {
    await writeLog(dir, opencodeRecords());
    const out = join(dir, "exports", "batch.parquet");
    expect(await exportCommand(["--data", dir, "--out", out])).toBe(0);
    const manifest = JSON.parse(readFileSync(manifestPath(out), "utf8"));
    expect(manifest.auxiliary).toEqual({ policy: "drop", samples: 2, dropped: 2, kinds: { title: 2 } });
    expect(manifest.calls).toMatchObject({ total: 6, auxiliary: 2, fork: 0 });
    const rows = await query(`SELECT sample_id, reward, extra_info FROM read_parquet('${out}') ORDER BY extra_info.index`);
    expect(rows.map((r) => [r.sample_id, r.reward, (r.extra_info as { is_final: boolean }).is_final, (r.extra_info as { auxiliary: string | null }).auxiliary])).toEqual([
      ["oc-a#1", 1, true, null],
      ["oc-b#1", 0, true, null],
    ]);
  });

  test("keep: the title samples are rows of their own, labelled, reward 0 even under --reward-policy same", async () => {
    const out = join(dir, "exports", "keep.parquet");
    expect(await exportCommand(["--data", dir, "--out", out, "--auxiliary", "keep", "--reward-policy", "same"])).toBe(0);
    const manifest = JSON.parse(readFileSync(manifestPath(out), "utf8"));
    expect(manifest.auxiliary).toEqual({ policy: "keep", samples: 2, dropped: 0, kinds: { title: 2 } });
    const rows = await query(`SELECT sample_id, reward, extra_info.auxiliary AS auxiliary, extra_info.is_final AS final FROM read_parquet('${out}') ORDER BY extra_info.index`);
    expect(rows).toEqual([
      { sample_id: "oc-a#0", reward: 0, auxiliary: "title", final: false },
      { sample_id: "oc-a#1", reward: 1, auxiliary: null, final: true },
      { sample_id: "oc-b#0", reward: 0, auxiliary: "title", final: false },
      { sample_id: "oc-b#1", reward: 0, auxiliary: null, final: true },
    ]);
  });
});

describe("forge export: GRPO groups with auxiliary calls and forks", () => {
  const dir = join(scratch.dir, "aux-groups");

  test("the group row names each rollout once with its agent's final answer; the per-sample batch holds its agent samples only", async () => {
    // pi-like rollouts: two agent calls that fork (history rewritten), then a compaction summary
    // after the final answer. The first rows of the group would be a's two agent samples.
    const records: ForgeRecord[] = [];
    const tools = [{ type: "function", function: { name: "bash", parameters: { type: "object" } } }];
    const agent = (turns: number) => ({ model: "m", messages: [{ role: "system", content: "You are pi." }, { role: "user", content: "sum" }, ...Array.from({ length: turns }, () => ({ role: "user", content: "more" }))], tools });
    for (const [id, reward] of [["pa", 1], ["pb", 0]] as const) {
      const r = rolloutRecords(id, { task: "stock", group: "stock@v0", experiment: "aux", harness: "pi" });
      r.call({ prompt: [1, 2, 3], completion: [10], requestBody: agent(0) });
      r.call({ prompt: [1, 9, 9], completion: [11], requestBody: agent(1) });
      r.call({
        prompt: [700],
        completion: [701],
        requestBody: { model: "m", messages: [{ role: "system", content: "You are a context summarization assistant. Your task is to read a conversation between a user and an AI coding assistant, then produce a summary." }, { role: "user", content: "<conversation>" }] },
      });
      r.finish(reward);
      records.push(...r.records);
    }
    await writeLog(dir, records);
    const out = join(dir, "exports", "batch.parquet");
    expect(await exportCommand(["--data", dir, "--out", out, "--group-rows", "2"])).toBe(0);
    const m = JSON.parse(readFileSync(manifestPath(out), "utf8"));
    expect(m.auxiliary).toEqual({ policy: "drop", samples: 2, dropped: 2, kinds: { compaction: 2 } });
    const groups = await query(`SELECT extra_info FROM read_parquet('${m.group_dataset.path}')`);
    expect(groups.map((g) => g.extra_info)).toEqual([{ index: "0", group: "stock@v0", rollout_ids: ["pa", "pb"] }]);
    // What session i replays: rollout i's rows, the final (reward-carrying) one last; no summary among them.
    const rows = await query(`SELECT sample_id, reward, extra_info.is_final AS final FROM read_parquet('${out}') ORDER BY extra_info.index`);
    expect(rows).toEqual([
      { sample_id: "pa#0", reward: 0, final: false },
      { sample_id: "pa#1", reward: 1, final: true },
      { sample_id: "pb#0", reward: 0, final: false },
      { sample_id: "pb#1", reward: 0, final: true },
    ]);
  });
});

describe("forge export", () => {
  const dir = join(scratch.dir, "data");
  const out = join(dir, "exports", "batch.parquet");

  test("verl parquet: rows agree with the assembled records exactly; infra_error excluded; small groups dropped", async () => {
    await writeLog(dir, scenario());
    const code = await exportCommand(["--data", dir, "--out", out, "--format", "verl", "--min-group-size", "2"]);
    expect(code).toBe(0);
    const manifest = JSON.parse(readFileSync(manifestPath(out), "utf8"));
    expect(manifest.rollouts.seen).toBe(5);
    expect(manifest.rollouts.valid).toBe(3);
    expect(manifest.rollouts.excluded).toEqual({ infra_error: 2 });
    expect(manifest.groups.dropped).toEqual([{ group: "g2", valid_rollouts: 1 }]);
    expect(manifest.calls).toEqual({ total: 8, clean: 1, realign: 1, fork: 1, broken: 0, auxiliary: 0 });
    expect(manifest.auxiliary).toEqual({ policy: "drop", samples: 0, dropped: 0, kinds: {} });
    expect(manifest.drift_tokens).toBe(4);

    const rows = await query(`SELECT * FROM read_parquet('${out}') ORDER BY extra_info.index`);
    expect(rows.map((r) => r.sample_id)).toEqual(["a#0", "b#0", "b#1"]);
    expect(manifest.rows).toBe(3);
    for (const row of rows) {
      const t = (await trajectoryOf(readRecords(dir), row.rollout_id as string, { thinkOpen: THINK, thinkClose: END_THINK, thinkTrailing: [198, 271] }))!;
      const s = t.samples.find((x) => x.sample_id === row.sample_id)!;
      expect(row.prompt_ids).toEqual(s.prompt_ids);
      expect(row.response_ids).toEqual(s.response_ids);
      expect(row.response_mask).toEqual(s.response_mask);
      expect(row.response_logprobs).toEqual(s.response_logprobs);
      expect(row.reward).toBe(s.reward);
      expect(row.uid).toBe("g1");
      expect(row.agent_name).toBe("forge_agent");
    }
    const a = rows[0]!;
    expect(a.response_ids).toEqual([10, 11, 4, 12, 13]);
    expect(a.response_mask).toEqual([1, 1, 0, 1, 1]);
    expect(a.prompt).toEqual([{ role: "system", content: "be brief" }, { role: "user", content: "fix it" }]);
    expect(a.data_source).toBe("demo");
    expect(rows[1]!.response_ids).toEqual([THINK, 5, END_THINK, 271, 20, 21, 6, 22]);
    // Parquet types are what veRL's loader and the analytics samples view expect.
    const types = await query(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet('${out}'))`);
    const byName = Object.fromEntries(types.map((t) => [t.column_name, t.column_type]));
    expect(byName.prompt_ids).toBe("INTEGER[]");
    expect(byName.response_logprobs).toBe("DOUBLE[]");
    expect(String(byName.extra_info)).toContain('"index" BIGINT');

    // The sidecar holds the same rows.
    const sidecar = readFileSync(join(dir, "exports", "batch.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(sidecar.map((r) => r.sample_id)).toEqual(["a#0", "b#0", "b#1"]);
    for (let i = 0; i < rows.length; i++) {
      expect(sidecar[i].response_logprobs).toEqual(rows[i]!.response_logprobs);
      expect(sidecar[i].prompt_ids).toEqual(rows[i]!.prompt_ids);
      expect(sidecar[i].extra_info.index).toBe(i);
    }
  });

  test("min group size 1 keeps g2; reward policy same puts the reward on every sample", async () => {
    const out1 = join(dir, "exports", "all.jsonl");
    const m = await exportTrajectories(readRecords(dir), { format: "jsonl", out: out1, minGroupSize: 1, rewardPolicy: "same" });
    expect(m.groups.dropped).toEqual([]);
    expect(m.rows).toBe(4);
    const rows = readFileSync(out1, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(rows.filter((r) => r.rollout_id === "b").map((r) => r.reward)).toEqual([0, 0]);
    expect(rows.filter((r) => r.rollout_id === "a").map((r) => r.reward)).toEqual([1]);
  });

  test("sft: chat messages of successful rollouts, request plus the recorded answer", async () => {
    const sft = join(dir, "exports", "sft.parquet");
    expect(await exportCommand(["--data", dir, "--out", sft, "--format", "sft", "--min-group-size", "1"])).toBe(0);
    const rows = await query(`SELECT sample_id, messages FROM read_parquet('${sft}') ORDER BY sample_id`);
    expect(rows.map((r) => r.sample_id)).toEqual(["a#0", "d#0"]);
    const messages = rows[0]!.messages as { role: string; content: string }[];
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hi"],
      ["assistant", "ok"],
    ]);
  });

  test("realign off (thinkOpen -1): b's stripped think block forks", async () => {
    const m = await exportTrajectories(readRecords(dir), { format: "jsonl", out: join(dir, "exports", "nothink.jsonl"), thinkOpen: -1, thinkClose: -1 });
    expect(m.calls.realign).toBe(0);
    expect(m.calls.fork).toBe(2);
  });

  test("--experiment / --iteration keep only that experiment's rollouts", async () => {
    const none = await exportTrajectories(readRecords(dir), { format: "jsonl", out: join(dir, "exports", "other.jsonl"), experiment: "other", minGroupSize: 1 });
    expect(none.rows).toBe(0);
    expect(none.filter.skipped_rollouts).toBe(5);
    const demo = await exportTrajectories(readRecords(dir), { format: "jsonl", out: join(dir, "exports", "demo.jsonl"), experiment: "demo", iteration: 0, minGroupSize: 1 });
    expect(demo.rows).toBe(4);
    expect(demo.filter.skipped_rollouts).toBe(0);
  });

  test("--group-rows: a GRPO dataset of one row per group naming its rollouts (all their samples replay)", async () => {
    const out2 = join(dir, "exports", "g.parquet");
    expect(await exportCommand(["--data", dir, "--out", out2, "--format", "verl", "--min-group-size", "1", "--group-rows", "2"])).toBe(0);
    const m = JSON.parse(readFileSync(manifestPath(out2), "utf8"));
    // g1 has rollouts a (a#0) and b (b#0, b#1: b forked): one row naming both rollouts, with
    // their final samples; g2 has d only: short, its one sample left out
    expect(m.group_dataset).toMatchObject({ rows: 1, samples_per_row: 2, short_groups: 1, samples_left_out: 1 });
    const rows = await query(`SELECT uid, agent_name, extra_info FROM read_parquet('${m.group_dataset.path}')`);
    expect(rows).toEqual([{ uid: "g1", agent_name: "forge_agent", extra_info: { index: "0", group: "g1", rollout_ids: ["a", "b"] } }]);
    // --max-group-rows caps the dataset at veRL's train_batch_size; the rest is counted
    const out3 = join(dir, "exports", "g3.parquet");
    expect(await exportCommand(["--data", dir, "--out", out3, "--format", "verl", "--min-group-size", "1", "--group-rows", "1", "--max-group-rows", "1"])).toBe(0);
    expect(JSON.parse(readFileSync(manifestPath(out3), "utf8")).group_dataset).toMatchObject({ rows: 1, groups_over_limit: 1, short_groups: 0 });
    await expect(exportCommand(["--data", dir, "--format", "sft", "--group-rows", "2"])).rejects.toThrow("--group-rows needs --format verl");
  });

  test("--max-prompt-length / --max-response-length leave overlong samples out (a rollout whose final sample is one: whole), counted", async () => {
    const out4 = join(dir, "exports", "len.parquet");
    expect(await exportCommand(["--data", dir, "--out", out4, "--format", "verl", "--min-group-size", "1", "--max-response-length", "4"])).toBe(0);
    const m = JSON.parse(readFileSync(manifestPath(out4), "utf8"));
    // a's only sample has a 5-token response: a goes whole; b's first sample (8 tokens) goes, its final one stays
    expect(m.length_filter).toEqual({ max_prompt_length: null, max_response_length: 4, samples_dropped: 2, rollouts_dropped: 1 });
    expect(m.rollouts.excluded.overlong).toBe(1);
    const rows = await query(`SELECT sample_id, len(response_ids) AS n FROM read_parquet('${out4}') ORDER BY sample_id`);
    expect(rows.map((r) => r.sample_id)).toEqual(["b#1", "d#0"]);
    await expect(exportCommand(["--data", dir, "--out", out4, "--max-prompt-length", "0"])).rejects.toThrow("--max-prompt-length must be at least 1");
  });

  test("usage errors exit through UsageError", async () => {
    await expect(exportCommand(["--format", "verl"])).rejects.toThrow("--data DIR is required");
    await expect(exportCommand(["--data", dir, "--format", "xml"])).rejects.toThrow("--format must be");
    await expect(exportCommand(["--data", dir, "--auxiliary", "maybe"])).rejects.toThrow("--auxiliary must be drop or keep");
  });

  test("streams: 10,000 calls in 1,000 interleaved rollouts, bounded open state", async () => {
    const big = join(scratch.dir, "big");
    const log = await openSegmentLog(big);
    const concurrent = 16;
    const turns = 10;
    const rollouts = 1000;
    let pending: ReturnType<typeof rolloutRecords>[] = [];
    let written = 0;
    const flush = (batch: ReturnType<typeof rolloutRecords>[]) => {
      const lists = batch.map((r) => [...r.records]);
      while (lists.some((l) => l.length > 0)) for (const l of lists) if (l.length > 0) log.append(l.shift()!);
    };
    for (let i = 0; i < rollouts; i++) {
      const r = rolloutRecords(`big-${i}`, { task: `t${i % 100}`, group: `g${i % 100}` });
      let prompt = Array.from({ length: 200 }, (_, k) => (k * 31 + i) % 150000);
      for (let t = 0; t < turns; t++) {
        const completion = Array.from({ length: 50 }, (_, k) => (k + t + i) % 150000);
        r.call({ prompt, completion });
        prompt = [...prompt, ...completion, 1, 2, 3];
      }
      r.finish(i % 2);
      pending.push(r);
      written += turns;
      if (pending.length === concurrent) {
        flush(pending);
        pending = [];
      }
    }
    flush(pending);
    await log.close();
    const started = performance.now();
    const m = await exportTrajectories(readRecords(big), { format: "jsonl", out: join(big, "exports", "big.jsonl") });
    const seconds = (performance.now() - started) / 1000;
    expect(m.calls.total).toBe(written);
    expect(m.rows).toBe(rollouts);
    expect(m.rollouts.max_open).toBeLessThanOrEqual(concurrent);
    expect(m.tokens.sampled).toBe(rollouts * turns * 50);
    console.log(`export of ${written} calls: ${seconds.toFixed(2)} s, peak rss ${(m.peak_rss_bytes / 2 ** 20).toFixed(0)} MiB`);
  }, 60_000);
});
