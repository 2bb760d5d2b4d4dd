/**
 * Training curves as one run (docs/metrics.md, "Training curves"): a local training iteration
 * (`training.localCommand`) gets forge's figures of its iteration ($FORGE_FIGURES), one
 * TensorBoard directory for the whole run ($TENSORBOARD_DIR) and the step veRL logs it at; the
 * integration's `python -m forge_verl.figures` writes them with veRL's own TensorBoard writer,
 * in the pinned reference venv (torch, tensorboard, veRL 0.9.1). Read back with TensorBoard's
 * EventAccumulator: one run, one point per iteration, each equal to forge analyze's figure.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { oraclePython } from "../reference/oracle.ts";

const ROOT = join(import.meta.dir, "..", "..");

test("two local iterations: forge's figures in one TensorBoard run at steps 1 and 2, equal to forge analyze's", async () => {
  const python = oraclePython(); // throws naming python/build-env.sh when the venv is missing: never a skip
  const dir = mkdtempSync(join(tmpdir(), "forge-curves-"));
  try {
    const harness = `curl -s -H "authorization: Bearer $OPENAI_API_KEY" -H content-type:application/json -d '{"model":"m","messages":[{"role":"user","content":"step"}]}' $OPENAI_BASE_URL/chat/completions > /dev/null; if [ $((RANDOM % 2)) = 0 ]; then echo done; else echo nope; fi`;
    // The trainer: forge's figures into TensorBoard (as a veRL step would log its own there), then a checkpoint.
    const trainer = `PYTHONPATH=${join(ROOT, "integrations", "verl")} ${python} -m forge_verl.figures && mkdir -p "$FORGE_CHECKPOINT"`;
    const experiment = join(dir, "experiment.yaml");
    writeFileSync(
      experiment,
      [
        "apiVersion: openforge.dev/v1",
        "kind: Experiment",
        "metadata: {name: curves}",
        "spec:",
        "  policy: {model: forge-sim/qwen3-sim, mode: train}",
        `  harness: {name: command, command: [bash, -c, ${JSON.stringify(harness)}]}`,
        "  environment: {tasks: [{id: a, instruction: x, expected: done}, {id: b, instruction: y, expected: done}, {id: c, instruction: z, expected: done}]}",
        "  rollouts: {k: 4, parallelism: 6, sandbox: none}",
        `  training: {iterations: 2, localCommand: [bash, -c, ${JSON.stringify(trainer)}], weightSync: {strategy: none}}`,
        "  metrics: {k: [1, 2]}",
      ].join("\n"),
    );
    const data = join(dir, "data");
    const env: Record<string, string | undefined> = { ...process.env, FORGE_ALLOW_ROOT_UNSANDBOXED: "1" };
    delete env.TENSORBOARD_DIR;
    const run = Bun.spawnSync(["bun", "bin/forge.ts", "run", experiment, "--data", data, "--json", "--quiet"], { cwd: ROOT, env });
    expect(run.exitCode, run.stderr.toString()).toBe(0);
    const runId = (JSON.parse(run.stdout.toString()) as { run: string }).run;
    for (const i of [0, 1]) expect(readFileSync(join(data, "train", `iteration-${i}.log`), "utf8")).toContain(`of iteration ${i} at step ${i + 1} in ${join(data, "tensorboard")}`);

    // forge analyze's figures per iteration.
    const analyzed = Bun.spawnSync(["bun", "bin/forge.ts", "analyze", "--data", data, "--run", runId, "--by", "iteration", "--json", "--quiet"], { cwd: ROOT });
    const pass = (JSON.parse(analyzed.stdout.toString()) as { pass: Record<string, number>[] }).pass;
    expect(pass.map((row) => row.iteration)).toEqual([0, 1]);

    // One directory (one run) with both steps' event files, read back by TensorBoard's reader.
    const logdir = join(data, "tensorboard");
    expect(readdirSync(logdir).filter((f) => f.startsWith("events.out.tfevents.")).length).toBe(2);
    const read = Bun.spawnSync(
      [python, "-c", `import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
print(json.dumps({tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}))`, logdir],
      { stdout: "pipe", stderr: "pipe" },
    );
    expect(read.exitCode, read.stderr.toString()).toBe(0);
    const scalars = JSON.parse(read.stdout.toString()) as Record<string, [number, number][]>;
    expect(Object.keys(scalars).sort()).toEqual(["forge/infra_errors", "forge/mean_reward", "forge/pass@1", "forge/pass@2", "forge/pass^1", "forge/pass^2", "forge/rollouts", "forge/samples_per_rollout"]);
    for (const [tag, column] of [["forge/pass@1", "pass@1"], ["forge/pass@2", "pass@2"], ["forge/pass^2", "pass^2"], ["forge/mean_reward", "mean_reward"], ["forge/rollouts", "rollouts"]] as const) {
      expect(scalars[tag]!.map(([step]) => step)).toEqual([1, 2]);
      // Scalars are stored as 32-bit floats.
      scalars[tag]!.forEach(([, value], i) => expect(value).toBeCloseTo(pass[i]![column]!, 6));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 240_000);
