import { expect, test } from "bun:test";
import { runIterations } from "./iterations.ts";

/** A trace of phases, where each phase takes `ms` of real time: what overlapped with what. */
async function trace(options: { iterations: number; async: boolean; maxStaleness: number; failStep?: number }) {
  const events: string[] = [];
  let version = 0;
  const versions: number[] = [];
  const timings = await runIterations({
    ...options,
    runRollouts: async (i) => {
      versions[i] = version;
      events.push(`r${i}+`);
      await Bun.sleep(20);
      events.push(`r${i}-`);
    },
    train: async (i) => {
      events.push(`t${i}+`);
      await Bun.sleep(60);
      if (options.failStep === i) throw new Error(`step ${i} failed`);
      version = i + 1;
      events.push(`t${i}-`);
    },
  });
  return { events, versions, timings };
}

test("synchronous: each iteration's rollouts wait for the previous step", async () => {
  const { events, versions } = await trace({ iterations: 3, async: false, maxStaleness: 1 });
  expect(events).toEqual(["r0+", "r0-", "t0+", "t0-", "r1+", "r1-", "t1+", "t1-", "r2+", "r2-", "t2+", "t2-"]);
  expect(versions).toEqual([0, 1, 2]);
});

test("async, staleness 1: iteration i+1's rollouts run while step i trains, never on a policy more than one version behind", async () => {
  const { events, versions, timings } = await trace({ iterations: 4, async: true, maxStaleness: 1 });
  // r1 starts while t0 runs; r2 waits for version 1 (t0 done); steps stay in order.
  expect(events.indexOf("r1+")).toBeLessThan(events.indexOf("t0-"));
  expect(events.indexOf("r2+")).toBeGreaterThan(events.indexOf("t0-"));
  expect(events.indexOf("t1+")).toBeGreaterThan(events.indexOf("t0-"));
  versions.forEach((v, i) => expect(i - v).toBeLessThanOrEqual(1));
  expect(versions).toEqual([0, 0, 1, 2]);
  expect(timings.map((t) => t.train?.version)).toEqual([1, 2, 3, 4]);
  expect(timings[1]!.rollouts.start).toBeLessThan(timings[0]!.train!.end);
});

test("async, staleness 2: two iterations of rollouts may run ahead of the steps", async () => {
  const { versions } = await trace({ iterations: 4, async: true, maxStaleness: 2 });
  versions.forEach((v, i) => expect(i - v).toBeLessThanOrEqual(2));
  expect(versions.slice(0, 3)).toEqual([0, 0, 0]);
});

test("a failed step fails the run; rollouts waiting for its version do not start", async () => {
  await expect(trace({ iterations: 4, async: true, maxStaleness: 1, failStep: 0 })).rejects.toThrow(/step 0 failed/);
});
