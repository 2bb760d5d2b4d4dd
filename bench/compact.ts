/**
 * Compaction throughput (`forge analyze`'s first step) over agent episodes written with the real
 * recorder: 12-turn episodes whose requests carry the whole history, one shell command per turn.
 * Prints records per second and the share of the time spent parsing tool calls (toolFacts,
 * tree-sitter-bash) measured on the same calls in the same run.
 *
 *   bun bench/compact.ts [--episodes 2000]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { toolFacts } from "../analytics/classify.ts";
import { episode, scored, type ToolStep } from "../analytics/testing.ts";
import { openAnalytics } from "../analytics/session.ts";
import { openSegmentLog } from "../records/index.ts";

const { values } = parseArgs({ options: { episodes: { type: "string", default: "2000" } } });
const episodes = Number(values.episodes);
// Commands as agents write them, each naming files of its own episode (no two episodes alike).
const commands = (e: number) => [
  `cat src/app${e}.py`,
  `pytest -q tests/test_${e}.py > /tmp/out${e}.txt 2>&1; tail -5 /tmp/out${e}.txt`,
  `sed -i 's/a${e}/b/' src/app${e}.py && pytest -q`,
  `grep -rn TODO${e} src | head -20`,
  `python3 -c 'print(${e}>1)'`,
  `cat <<'EOF' > notes${e}.md\nline ${e}\nEOF`,
  `git diff src/app${e}.py`,
  `cd pkg${e} && npm test -- --grep case${e}`,
];

const dir = await mkdtemp(join(tmpdir(), "forge-bench-compact-"));
const log = await openSegmentLog(join(dir, "log"));
const calls: ToolStep[] = [];
let records = 0;
for (let e = 0; e < episodes; e++) {
  const id = `bench.i0.t${e % 100}.${Math.floor(e / 100)}`;
  const steps: ToolStep[][] = Array.from({ length: 11 }, (_, turn) => {
    const all = commands(e);
    const command = all[(e + turn) % all.length]!;
    return [{ id: `${id}-${turn}`, name: "shell", args: { command: ["bash", "-lc", command] }, result: "ok\n".repeat(20), isError: turn % 5 === 0 }];
  });
  calls.push(...steps.flat());
  const [registered, finished] = scored({ id, task: `t${e % 100}`, harness: "codex", attempt: Math.floor(e / 100) }, e % 3 ? "ok" : "failed", e % 3 ? 1 : 0);
  for (const record of [registered!, ...episode(id, "responses", ["shell", "update_plan"], steps), finished!]) {
    log.append(record);
    records++;
  }
}
await log.close();

const started = performance.now();
const session = await openAnalytics(dir, {});
const compactMs = performance.now() - started;
session.close();

const parseStarted = performance.now();
for (const call of calls) toolFacts(call.name, JSON.stringify(call.args));
const parseMs = performance.now() - parseStarted;

console.log(`compaction of ${records.toLocaleString("en")} records (${episodes} 12-call episodes, ${calls.length.toLocaleString("en")} tool calls)`);
console.log(`  ${(compactMs / 1000).toFixed(2)} s, ${Math.round(records / (compactMs / 1000)).toLocaleString("en")} records/s`);
console.log(`  tool-call facts (parse every shell command): ${parseMs.toFixed(0)} ms, ${((parseMs / compactMs) * 100).toFixed(1)}% of the compaction time, ${((parseMs / calls.length) * 1000).toFixed(0)} µs a call`);
await rm(dir, { recursive: true, force: true });
