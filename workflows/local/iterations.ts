/**
 * Training iterations on this machine (`forge run` with `training.iterations` > 1 and
 * `training.localCommand`): rollouts of iteration i, then its training step (export, the local
 * trainer command, the weight sync that advances the proxy's policy version), in order.
 *
 * With `training.async` (docs/scale.md, "Async iterations") the rollouts of iteration i+1 start
 * while step i trains: iteration i's rollouts may start once the proxy serves version
 * ≥ i - maxStaleness, so no rollout is served by a policy more than `maxStaleness` versions
 * behind the step that trains on it (the step of iteration i starts from version i). Steps
 * stay in order (step i starts after step i-1 and its weight sync), and the export of step i
 * leaves out anything older than the bound (`--max-staleness`), counted in its manifest.
 */

/** What happened when, per iteration (unix ms), for the run's result and its tests. */
export type IterationTiming = {
  iteration: number;
  /** The policy version the proxy served when the iteration's rollouts started. */
  startVersion: number;
  rollouts: { start: number; end: number };
  train?: { start: number; end: number; version: number };
};

export type IterationLoopOptions = {
  iterations: number;
  async: boolean;
  maxStaleness: number;
  /** Runs the rollouts of iteration i (all of them, to the end). */
  runRollouts(iteration: number): Promise<void>;
  /** Trains iteration i (export, trainer) and syncs the weights; the proxy then serves version i + 1. */
  train(iteration: number): Promise<void>;
  log?: (line: string) => void;
  signal?: AbortSignal;
};

/**
 * Runs the iterations; resolves with their timings once the last step is done. A failing
 * rollout phase or step rejects (after the steps already started have ended).
 *
 * @example
 * await runIterations({ iterations: 3, async: true, maxStaleness: 1, runRollouts, train });
 */
export async function runIterations(options: IterationLoopOptions): Promise<IterationTiming[]> {
  const log = options.log ?? (() => {});
  const staleness = options.async ? options.maxStaleness : 0;
  const timings: IterationTiming[] = [];
  let version = 0;
  // Waiters for a version: resolved when a step's sync reaches it.
  const waiting: { version: number; resolve: () => void }[] = [];
  const reached = (v: number) => {
    version = v;
    for (const w of waiting.splice(0)) {
      if (w.version <= version) w.resolve();
      else waiting.push(w);
    }
  };
  let failure: unknown;
  const untilVersion = (v: number) =>
    new Promise<void>((resolve, reject) => {
      if (version >= v) return resolve();
      waiting.push({ version: v, resolve });
      // A failed step never reaches the version: stop waiting for it.
      steps.catch(reject);
    });
  let steps: Promise<void> = Promise.resolve();
  for (let i = 0; i < options.iterations; i++) {
    if (options.signal?.aborted) break;
    await untilVersion(i - staleness);
    const timing: IterationTiming = { iteration: i, startVersion: version, rollouts: { start: Date.now(), end: 0 } };
    timings.push(timing);
    log(`iteration ${i}: rollouts start at policy version ${version}${options.async && version < i ? ` (step ${i - 1} still training)` : ""}`);
    await options.runRollouts(i);
    timing.rollouts.end = Date.now();
    if (options.signal?.aborted) break;
    steps = steps.then(async () => {
      const start = Date.now();
      log(`iteration ${i}: training step ${i} (from policy version ${i})`);
      await options.train(i);
      timing.train = { start, end: Date.now(), version: i + 1 };
      reached(i + 1);
      log(`iteration ${i}: step done, the proxy serves policy version ${i + 1}`);
    });
    steps.catch((error: unknown) => (failure ??= error));
    if (!options.async) await steps;
  }
  await steps;
  if (failure) throw failure;
  return timings;
}
