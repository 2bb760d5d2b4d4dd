/**
 * 1,000 concurrent rollouts × 3 calls (streamed and not) through one proxy: every call is
 * recorded exactly once, under its own rollout, with seq 1..3 in order, and no rollout's
 * record holds another rollout's request or answer.
 *
 * Runs in a child process: Bun's fetch allows 256 requests in flight per process unless
 * BUN_CONFIG_MAX_HTTP_REQUESTS is set at start, and here the harnesses' fetches and the
 * proxy's upstream fetches share one process (they would wait on each other past 256).
 */
import { expect, test } from "bun:test";
import { join } from "node:path";

test("1,000 concurrent rollouts × 3 calls: each recorded once, in its own rollout, in order", async () => {
  const child = Bun.spawn(["bun", join(import.meta.dir, "load-run.ts")], {
    env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "8192" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  const line = out.trim().split("\n").pop() ?? "";
  let result: any;
  try {
    result = JSON.parse(line);
  } catch {
    throw new Error(`load-run.ts printed no result (exit ${code}):\n${out}\n${err}`);
  }
  expect(result.problems).toEqual([]);
  expect(result.recorded).toBe(result.rollouts * result.callsPerRollout);
  expect(result.rollouts).toBe(1000);
  expect(code).toBe(0);
}, 90_000);
