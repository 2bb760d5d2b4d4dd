/** `forge run` on the quickstart, as a user runs it: a separate process, JSON out. */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readRecords } from "../../records/index.ts";
import { ChainStart, TokenMode } from "../../schemas/index.ts";

const root = join(import.meta.dir, "..", "..");
const forge = (args: string[]) => Bun.spawnSync([process.execPath, join(root, "bin", "forge.ts"), ...args], { cwd: root, stdout: "pipe", stderr: "pipe" });

describe("forge run", () => {
  test("the quickstart end to end: 20 rollouts, token-in, one veRL sample each, pass@k from analytics", () => {
    const data = mkdtempSync(join(tmpdir(), "forge-run-"));
    try {
      const result = forge(["run", "examples/quickstart/experiment.yaml", "--data", data, "--json", "--quiet"]);
      expect(result.stderr.toString()).not.toContain("error");
      expect(result.exitCode).toBe(0);
      const out = JSON.parse(result.stdout.toString());
      expect(out.outcomes).toHaveLength(20);
      expect(new Set(out.outcomes.map((o: { status: string }) => o.status))).toEqual(new Set(["ok"]));
      const passed = out.outcomes.filter((o: { reward: number }) => o.reward >= 1).length;
      // The simulator's failure rates make some rollouts fail for real, most pass.
      expect(passed).toBeGreaterThan(5);
      expect(passed).toBeLessThan(20);
      // Scored by analytics over the recorded log (every task has n = 4, so pass@1 = passed / 20).
      const [run] = out.pass.pass;
      expect([run.run, run.tasks, run.tasks_scored]).toEqual([out.run, 5, 5]);
      expect(run["pass@1"]).toBeCloseTo(passed / 20);
      expect(out.pass.pass_by_task).toHaveLength(5);
      // The quickstart runs token-in (spec.policy.tokenMode): one training sample per rollout.
      expect([out.export.rows, out.export.samples]).toEqual([20, 20]);
      expect(out.rollouts_per_minute).toBeGreaterThan(0);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  }, 120_000);

  test("usage errors exit 2 and name the problem", () => {
    const none = forge(["run"]);
    expect(none.exitCode).toBe(2);
    expect(none.stderr.toString()).toContain("expected one EXPERIMENT file");
    const bad = forge(["run", "examples/quickstart/experiment.yaml", "--parallelism", "many"]);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr.toString()).toContain("--parallelism must be an integer");
    const missing = forge(["run", "no/such/experiment.yaml"]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr.toString()).toContain("no/such/experiment.yaml: cannot read the experiment file");
  });

  test("Ctrl-C: running rollouts are killed and recorded as infra_error, the log is readable, exit 130", async () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-run-int-"));
    try {
      const experiment = join(dir, "experiment.yaml");
      writeFileSync(
        experiment,
        [
          "apiVersion: openforge.dev/v1",
          "kind: Experiment",
          "metadata: {name: interrupt}",
          "spec:",
          "  policy: {model: forge-sim/qwen3-sim}",
          '  harness: {name: command, command: [bash, -c, "sleep 300 & sleep 300"]}',
          "  environment:",
          "    tasks: [{id: a, instruction: wait, test: 'true'}]",
          "  rollouts: {k: 3, parallelism: 2, sandbox: none}",
        ].join("\n"),
      );
      const child = Bun.spawn([process.execPath, join(root, "bin", "forge.ts"), "run", experiment, "--data", join(dir, "data"), "--json", "--quiet", "--allow-root-unsandboxed"], { cwd: root, stdout: "pipe", stderr: "pipe" });
      // Wait until both rollouts run (their workspaces exist), then interrupt.
      const started = performance.now();
      while (performance.now() - started < 20_000) {
        const glob = [...new Bun.Glob("data/rollouts/*/logs/harness.stdout").scanSync({ cwd: dir })];
        if (glob.length >= 2) break;
        await Bun.sleep(100);
      }
      await Bun.sleep(300);
      child.kill("SIGINT");
      expect(await child.exited).toBe(130);
      const out = JSON.parse(await new Response(child.stdout).text());
      expect(out.aborted).toBe(true);
      expect(out.outcomes.map((o: { status: string }) => o.status)).toEqual(["infra_error", "infra_error"]);
      const results: string[] = [];
      for await (const { record } of readRecords(join(dir, "data"))) {
        if (record.kind.case === "rolloutResult") results.push(record.kind.value.rolloutId);
      }
      expect(results).toHaveLength(2); // the third rollout was never started, so never registered
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  // docs/token-in.md: the proxy renders, keeps each conversation's ids canonical and sends the
  // simulator token ids; in-process (one proxy) and as `forge proxy --token-in` processes (shards).
  // And with Qwen3-Coder (its template and qwen3_coder's XML tool calls, the simulator playing that server).
  for (const [shards, modelDir] of [[1, "qwen3"], [2, "qwen3"], [1, "qwen3-coder"]] as const) {
    test(`spec.policy.tokenMode: token-in end to end (${shards} proxy shard${shards > 1 ? "s" : ""}, ${modelDir}): every call token-in, one chain and one exported row per rollout`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "forge-run-token-in-"));
      try {
        const example = join(root, "examples", "multistep");
        const experiment = join(dir, "experiment.yaml");
        // The example's successful script every time (its failing variant fails the verifier, and failed rollouts are not exported).
        writeFileSync(join(dir, "policy.yaml"), readFileSync(join(example, "policy.yaml"), "utf8").replace("failure_rate: 0.5", "failure_rate: 0"));
        writeFileSync(
          experiment,
          [
            "apiVersion: openforge.dev/v1",
            "kind: Experiment",
            "metadata: {name: token-in}",
            "spec:",
            "  policy:",
            "    model: forge-sim/qwen3-sim",
            "    mode: train",
            "    tokenMode: token-in",
            `    tokenIn: {modelDir: ${modelDir}}`,
            `    simulator: {seed: 11, script: ${join(dir, "policy.yaml")}}`,
            "  harness: {name: forge-react, options: {maxTurns: 10}}",
            `  environment: {tasks: ${join(example, "tasks")}}`,
            "  rollouts: {k: 2, parallelism: 2, timeoutSeconds: 120}",
            "  metrics: {k: [1]}",
            `  proxy: {shards: ${shards}}`,
          ].join("\n"),
        );
        const result = forge(["run", experiment, "--data", join(dir, "data"), "--json", "--quiet"]);
        expect(result.stderr.toString()).not.toContain("error");
        expect(result.exitCode).toBe(0);
        const out = JSON.parse(result.stdout.toString());
        expect(out.outcomes.map((o: { status: string }) => o.status)).toEqual(["ok", "ok"]);
        expect(out.export.rows).toBe(2);
        const starts: Record<string, number[]> = {};
        for await (const { record } of readRecords(join(dir, "data"))) {
          if (record.kind.case !== "modelCall") continue;
          const c = record.kind.value;
          expect(c.tokenMode).toBe(TokenMode.TOKEN_IN);
          (starts[c.rolloutId] ??= []).push(c.chainStart);
        }
        expect(Object.values(starts)).toEqual([
          [ChainStart.FIRST, 0, 0, 0, 0],
          [ChainStart.FIRST, 0, 0, 0, 0],
        ]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 120_000);
  }
});
