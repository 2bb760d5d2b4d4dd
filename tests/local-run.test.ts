/** `forge run` on the quickstart, as a user runs it: a separate process, JSON out. */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const forge = (args: string[]) => Bun.spawnSync([process.execPath, join(root, "bin", "forge.ts"), ...args], { cwd: root, stdout: "pipe", stderr: "pipe" });

describe("forge run", () => {
  test("the quickstart end to end: 20 rollouts, veRL batch, pass@k from analytics", () => {
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
      const mean = out.pass.at(-1);
      expect(mean.task_id).toBe("(mean)");
      expect(mean.pass_at["1"]).toBeCloseTo(passed / 20);
      expect(out.pass_source).toBe("analytics");
      expect(out.export.rows).toBeGreaterThan(0);
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
});
