/**
 * The Python side in CI: export a veRL batch from a real segment log, then run the stdlib-only
 * unittest suite of integrations/verl against it (replay returns exactly the recorded tokens,
 * online mode against a stand-in control API). Skips, saying why, when python3 is missing.
 */
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openSegmentLog, readRecords } from "../proxy/recorder/index.ts";
import { scratchDir } from "../proxy/recorder/testing.ts";
import { exportTrajectories, trajectoryOf, type TrajectorySample } from "../proxy/trajectory/index.ts";
import { scenarioRecords } from "../proxy/trajectory/testing.ts";

const scratch = scratchDir("forge-verl-py-");
afterAll(() => scratch.cleanup());
const python = Bun.which("python3");
const qwen3 = { thinkOpen: 151667, thinkClose: 151668, thinkTrailing: [198, 271] };

/** Exports the scenario; returns the batch path and the expected samples (assembled from the records), in row order. */
export async function exportScenario(dir: string, out: string): Promise<TrajectorySample[]> {
  const log = await openSegmentLog(dir);
  for (const r of scenarioRecords()) log.append(r);
  await log.close();
  const m = await exportTrajectories(readRecords(dir), { format: "verl", out, minGroupSize: 2, ...qwen3 });
  const expected: TrajectorySample[] = [];
  for (const id of ["a", "b"]) expected.push(...(await trajectoryOf(readRecords(dir), id, qwen3))!.samples);
  expect(m.rows).toBe(expected.length);
  return expected;
}

test.skipIf(!python)("python3 -m unittest integrations/verl/tests against an exported batch", async () => {
  const dir = join(scratch.dir, "data");
  const out = join(dir, "exports", "batch.parquet");
  const expected = await exportScenario(dir, out);
  const expectedPath = join(scratch.dir, "expected.json");
  writeFileSync(expectedPath, JSON.stringify(expected));
  const proc = Bun.spawn([python!, "-m", "unittest", "discover", "-s", "tests", "-t", "."], {
    cwd: join(import.meta.dir, "..", "integrations", "verl"),
    env: { ...process.env, FORGE_TEST_BATCH: out, FORGE_TEST_EXPECTED: expectedPath, PYTHONDONTWRITEBYTECODE: "1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if (code !== 0) console.error(stdout, stderr);
  expect(stderr).toContain("OK");
  expect(code).toBe(0);
}, 60_000);
