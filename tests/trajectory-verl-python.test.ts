/**
 * The Python side in CI: export a veRL batch from a real segment log, then run the stdlib-only
 * unittest suite of integrations/verl against it (replay returns exactly the recorded tokens,
 * online mode against a stand-in control API, and against the real proxy and policy simulator
 * with a stand-in harness as the orchestrator command). Skips, saying why, when python3 is missing.
 */
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openSegmentLog, readRecords } from "../records/index.ts";
import { scratchDir } from "../records/testing.ts";
import { startProxyHarness } from "../proxy/testing.ts";
import { exportTrajectories, trajectoryOf, type TrajectorySample } from "../trajectories/index.ts";
import { scenarioRecords } from "../trajectories/testing.ts";

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
  const { code, stderr } = await unittest(["discover", "-s", "tests", "-t", "."], { FORGE_TEST_BATCH: out, FORGE_TEST_EXPECTED: expectedPath });
  expect(stderr).toContain("OK");
  expect(code).toBe(0);
}, 60_000);

async function unittest(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([python!, "-m", "unittest", ...args], {
    cwd: join(import.meta.dir, "..", "integrations", "verl"),
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if (code !== 0) console.error(stdout, stderr);
  return { code, stdout, stderr };
}

test.skipIf(!python)("online mode through the real proxy: the loop returns the recorded trajectory's final sample", async () => {
  const script = {
    thinking: true,
    tasks: [{ name: "hello", match: "hello.txt", steps: [{ think: "Look first.", bash: "ls" }, { think: "Write.", bash: "echo hi > hello.txt" }, { finish: "done" }] }],
  };
  const h = await startProxyHarness({ sim: { script } });
  try {
    const outPath = join(scratch.dir, "online.json");
    const run = await unittest(["tests.test_online_proxy"], { FORGE_TEST_PROXY_URL: h.proxy.url, FORGE_ADMIN_TOKEN: h.adminToken, FORGE_TEST_ONLINE_OUT: outPath });
    expect(run.stderr).toContain("OK");
    expect(run.stderr).not.toContain("skipped");
    const out = JSON.parse(await Bun.file(outPath).text());
    const t = (await trajectoryOf(readRecords(h.dataDir), out.rollout_id))!;
    const final = t.samples.find((s) => s.is_final)!;
    expect(out.prompt_ids).toEqual(final.prompt_ids);
    expect(out.response_ids).toEqual(final.response_ids);
    expect(out.response_mask).toEqual(final.response_mask);
    expect(out.response_logprobs).toEqual(final.response_logprobs);
    expect(out.reward_score).toBe(1);
    // and the sampled tokens are the simulator's, in order
    const sampled = final.response_ids.filter((_, i) => final.response_mask[i] === 1);
    expect(sampled).toEqual(h.sims[0]!.samples.flatMap((x) => x.token_ids));
    expect(t.stats.fork).toBe(0);
  } finally {
    await h.close();
  }
}, 60_000);
