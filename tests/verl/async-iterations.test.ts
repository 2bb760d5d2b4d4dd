/**
 * Async iterations end to end (`forge run`, training.async): three iterations against the policy
 * simulator with a local trainer that takes its time. Iteration i+1's rollouts are recorded
 * while step i trains, every call records the policy version that served it and none is more
 * than `maxStaleness` (1) versions behind the step that trains on it; each step's export counts
 * the staleness it saw and carries what veRL's rollout correction reads (every sample's
 * response_logprobs and its calls' versions). The bound is enforced: the same rollouts exported
 * for a later step are left out.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readRecords } from "../../records/index.ts";
import { exportTrajectories } from "../../trajectories/index.ts";

setDefaultTimeout(240_000);
const ROOT = join(import.meta.dir, "..", "..");

test("iteration i+1's rollouts are recorded while iteration i trains, none older than the staleness bound", async () => {
  const dir = mkdtempSync(join(tmpdir(), "forge-async-"));
  try {
    // Each rollout: three calls a little apart, the last one's answer printed (the task expects "done").
    const call = `curl -s -H "authorization: Bearer $OPENAI_API_KEY" -H content-type:application/json -d '{"model":"m","messages":[{"role":"user","content":"step"}]}' $OPENAI_BASE_URL/chat/completions > /dev/null`;
    const harness = `for i in 1 2 3; do ${call}; sleep 0.4; done; echo done`;
    // The trainer: checks it got a batch, takes 4 s, notes when it ran.
    const trainer = 'test -s "$FORGE_BATCH" && test -s "$FORGE_GROUPS" && date +%s%3N > "$FORGE_DATA/train-$FORGE_ITERATION.start" && sleep 4 && mkdir -p "$FORGE_CHECKPOINT" && date +%s%3N > "$FORGE_DATA/train-$FORGE_ITERATION.end"';
    const experiment = join(dir, "experiment.yaml");
    writeFileSync(
      experiment,
      [
        "apiVersion: openforge.dev/v1",
        "kind: Experiment",
        "metadata: {name: asynchronous}",
        "spec:",
        "  policy: {model: forge-sim/qwen3-sim, mode: train}",
        `  harness: {name: command, command: [bash, -c, ${JSON.stringify(harness)}]}`,
        "  environment: {tasks: [{id: a, instruction: x, expected: done}, {id: b, instruction: y, expected: done}, {id: c, instruction: z, expected: done}]}",
        "  rollouts: {k: 2, parallelism: 6, sandbox: none}",
        `  training: {iterations: 3, async: true, maxStaleness: 1, localCommand: [bash, -c, ${JSON.stringify(trainer)}], weightSync: {strategy: none}}`,
        "  metrics: {k: [1]}",
      ].join("\n"),
    );
    const data = join(dir, "data");
    const run = Bun.spawnSync(["bun", "bin/forge.ts", "run", experiment, "--data", data, "--json", "--quiet"], { cwd: ROOT, env: { ...process.env, FORGE_ALLOW_ROOT_UNSANDBOXED: "1" } });
    expect(run.exitCode, run.stderr.toString()).toBe(0);
    const out = JSON.parse(run.stdout.toString()) as { outcomes: { status: string }[]; iterations: { iteration: number; startVersion: number; rollouts: { start: number; end: number }; train: { start: number; end: number; version: number } }[] };
    expect(out.outcomes).toHaveLength(18);
    expect(out.iterations.map((i) => i.train.version)).toEqual([1, 2, 3]);
    const trained = [0, 1, 2].map((i) => ({ start: Number(readFileSync(join(data, `train-${i}.start`), "utf8")), end: Number(readFileSync(join(data, `train-${i}.end`), "utf8")) }));

    // The log: every call of iteration i, with when it ran and the version that served it.
    const iterationOf = new Map<string, number>();
    const calls: { iteration: number; start: number; end: number; version: number }[] = [];
    for await (const { record } of readRecords(data)) {
      if (record.kind.case === "rollout") iterationOf.set(record.kind.value.rolloutId, record.kind.value.iteration);
      if (record.kind.case === "modelCall") {
        const c = record.kind.value;
        calls.push({ iteration: iterationOf.get(c.rolloutId)!, start: c.startUnixMs, end: c.endUnixMs, version: c.policyVersion });
      }
    }
    expect(calls).toHaveLength(18 * 3);
    // Iteration 1's rollouts were recorded while step 0 trained (and iteration 2's while step 1 did).
    for (const i of [1, 2]) expect(calls.filter((c) => c.iteration === i && c.end > trained[i - 1]!.start && c.start < trained[i - 1]!.end).length).toBeGreaterThan(0);
    // None is served more than one version behind the step that trains on it (step i starts from version i).
    for (const c of calls) expect(c.iteration - c.version).toBeLessThanOrEqual(1);
    expect(calls.filter((c) => c.iteration === 2).every((c) => c.version >= 1)).toBe(true);
    // Iteration 2 started only once version 1 was served (step 0 done), not before.
    expect(out.iterations[2]!.rollouts.start).toBeGreaterThanOrEqual(trained[0]!.end);
    expect(out.iterations[2]!.startVersion).toBeGreaterThanOrEqual(1);

    // Each step's export: staleness counted, nothing past the bound, logprobs and versions on every row.
    for (const i of [0, 1, 2]) {
      const manifest = JSON.parse(readFileSync(join(data, "exports", `iteration-${i}`, "batch.manifest.json"), "utf8"));
      expect(manifest.staleness).toMatchObject({ train_version: i, max_staleness: 1, rollouts_dropped: 0 });
      expect(Object.keys(manifest.staleness.histogram).every((behind) => Number(behind) <= 1)).toBe(true);
    }
    const rows: { response_logprobs: number[]; response_mask: number[]; extra_info: { policy_versions: number[]; iteration: number } }[] = [];
    const jsonl = join(dir, "iteration-1.jsonl");
    const check = await exportTrajectories(readRecords(data), { format: "jsonl", out: jsonl, iteration: 1, trainVersion: 1, maxStaleness: 1, minGroupSize: 1 });
    for (const line of readFileSync(jsonl, "utf8").trim().split("\n")) rows.push(JSON.parse(line));
    expect(rows.length).toBe(check.samples);
    for (const row of rows) {
      expect(row.response_logprobs.length).toBe(row.response_mask.length);
      expect(row.response_logprobs.some((lp, k) => row.response_mask[k] === 1 && lp < 0)).toBe(true);
      expect(row.extra_info.policy_versions.every((v) => 1 - v <= 1)).toBe(true);
    }
    // The bound is enforced: iteration 0's rollouts (served at version 0) are past it for step 2.
    const late = await exportTrajectories(readRecords(data), { format: "jsonl", out: join(dir, "late.jsonl"), iteration: 0, trainVersion: 2, maxStaleness: 1, minGroupSize: 1 });
    expect(late.staleness.rollouts_dropped).toBe(6);
    expect(late.rollouts.excluded.stale).toBe(6);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
