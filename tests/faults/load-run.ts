/**
 * The body of load.test.ts, run as its own process (see there why): prints one JSON line
 * { rollouts, callsPerRollout, recorded, seconds, problems[] } and exits 1 on any problem.
 */
import { CallStatus } from "../../schemas/index.ts";
import { createContentStore, requestBodyOf } from "../../records/index.ts";
import { readAll, startProxyUnderTest } from "./proxy-under-test.ts";

const ROLLOUTS = Number(process.env.FAULTS_ROLLOUTS ?? 1000);
const CALLS = 3;
const problems: string[] = [];
const started = performance.now();
const t = await startProxyUnderTest({ chunks: 4, chunkDelayMs: 1 });
let recorded = 0;
try {
  const rollouts = await Promise.all(Array.from({ length: ROLLOUTS }, (_, i) => t.register(`load-${i}`)));
  const served = new Map<string, { rollout: string; content: string }>();
  await Promise.all(
    rollouts.map(async (r, i) => {
      for (let k = 1; k <= CALLS; k++) {
        const content = `rollout ${r.rollout_id} call ${k}`;
        const res = await t.chat(r, content, { stream: (i + k) % 2 === 0 });
        const { text, error } = await readAll(res);
        if (res.status !== 200 || error) problems.push(`${r.rollout_id}#${k}: HTTP ${res.status} ${error ?? text.slice(0, 200)}`);
        if (res.headers.get("x-forge-seq") !== String(k)) problems.push(`${r.rollout_id}#${k}: x-forge-seq ${res.headers.get("x-forge-seq")}`);
        served.set(res.headers.get("x-forge-call-id")!, { rollout: r.rollout_id, content });
      }
    }),
  );
  await Bun.sleep(50);
  const calls = await t.calls();
  recorded = calls.length;
  const byId = new Map(calls.map((c) => [c.callId, c]));
  const store = createContentStore();
  const bodies = new Map(calls.map((c) => [c.callId, requestBodyOf(c, store)]));
  if (byId.size !== calls.length) problems.push(`${calls.length - byId.size} calls recorded more than once`);
  const seqs = new Map<string, number[]>();
  for (const [callId, s] of served) {
    const c = byId.get(callId);
    if (!c) {
      problems.push(`call ${callId} of ${s.rollout} was served but not recorded`);
      continue;
    }
    if (c.rolloutId !== s.rollout) problems.push(`call ${callId} recorded under ${c.rolloutId}, served to ${s.rollout}`);
    if (c.status !== CallStatus.OK) problems.push(`call ${callId}: status ${CallStatus[c.status]} ${c.error}`);
    // The stored request is this rollout's own body (no cross-rollout mixing).
    if (!new TextDecoder().decode(bodies.get(callId)!).includes(s.content)) problems.push(`call ${callId}: request body is not ${s.rollout}'s`);
    seqs.set(s.rollout, [...(seqs.get(s.rollout) ?? []), c.seq]);
  }
  for (const [id, list] of seqs) if (list.join() !== "1,2,3") problems.push(`${id}: seqs ${list.join()}`);
  if (t.upstream.requests.length !== ROLLOUTS * CALLS) problems.push(`upstream saw ${t.upstream.requests.length} calls, not ${ROLLOUTS * CALLS}`);
} catch (error) {
  problems.push(`crashed: ${(error as Error).stack}`);
} finally {
  await t.close();
}
console.log(JSON.stringify({ rollouts: ROLLOUTS, callsPerRollout: CALLS, recorded, seconds: (performance.now() - started) / 1000, problems: problems.slice(0, 20) }));
process.exit(problems.length === 0 ? 0 : 1);
