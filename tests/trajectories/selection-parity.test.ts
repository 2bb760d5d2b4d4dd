/**
 * The training selection, one rule on both sides: the export's (trajectories/select.ts: the
 * auxiliary drop and `--max-prompt-length` / `--max-response-length`) and the veRL loop's
 * (forge_verl/samples.py `select_samples` with `overlong: drop`, what online mode applies to the
 * trajectory route's samples) keep the same samples and leave out the same rollouts, on
 * trajectories with auxiliary calls, forks and overlong samples. Runs the loop's code in the
 * pinned veRL environment (.venv/reference), as tests/verl/python.test.ts does.
 */
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { Record as ForgeRecord } from "../../schemas/index.ts";
import { scratchDir } from "../../records/testing.ts";
import { exportTrajectories, trajectoryOf } from "../../trajectories/index.ts";
import { rolloutRecords } from "../../trajectories/testing.ts";
import { oraclePython } from "../reference/oracle.ts";

const scratch = scratchDir("forge-selection-");
afterAll(() => scratch.cleanup());
const ROOT = join(import.meta.dir, "..", "..");
const span = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
const MAX_PROMPT = 12;
const MAX_RESPONSE = 6;

const tools = [{ type: "function", function: { name: "bash", parameters: { type: "object" } } }];
const agentBody = (text: string) => ({ model: "m", messages: [{ role: "system", content: "You are opencode." }, { role: "user", content: text }], tools });
const titleBody = { model: "m", messages: [{ role: "system", content: "You are a title generator. You output ONLY a thread title. Nothing else." }, { role: "user", content: "task" }] };

/** Rollouts whose samples fit, do not fit, and whose final sample does not fit; each with a title call. */
function records(): { ids: string[]; all: ForgeRecord[] } {
  const shapes: [string, () => [number[], number[], object][]][] = [
    ["fits", () => [[span(1, 4), span(100, 3), agentBody("a")], [[...span(1, 4), ...span(100, 3), 7], span(200, 2), agentBody("a")]]],
    // a fork whose response is too long: that sample is left out, the rollout kept
    ["long-fork", () => [[span(1, 4), span(100, 9), agentBody("b")], [[50, 51], span(300, 2), agentBody("b2")]]],
    // the final sample's prompt is too long: the rollout is left out whole
    ["long-final", () => [[span(1, 4), span(100, 2), agentBody("c")], [[60, ...span(1, 13)], span(400, 2), agentBody("c2")]]],
    ["plain", () => [[span(1, 3), span(100, 1), agentBody("d")]]],
  ];
  const all: ForgeRecord[] = [];
  for (const [id, calls] of shapes) {
    const r = rolloutRecords(id, { task: "t", group: "g", experiment: "parity", harness: "opencode" });
    r.call({ prompt: [900, 901], completion: [902], requestBody: titleBody });
    for (const [prompt, completion, requestBody] of calls()) r.call({ prompt, completion, requestBody });
    r.finish(1);
    all.push(...r.records);
  }
  return { ids: shapes.map(([id]) => id), all };
}

const PY = `
import json, sys
from forge_verl.samples import Limits, select_samples
given = json.load(sys.stdin)
limits = Limits(given["prompt"], given["response"], overlong="drop")
out = {}
for t in given["trajectories"]:
    samples = sorted(t["samples"], key=lambda s: (bool(s.get("is_final")), int(s.get("sample_index", 0))))
    sel = select_samples(samples, limits, several=True)
    out[t["rollout_id"]] = {"kept": sorted(s["sample_id"] for s in sel.samples), "left_out": sel.dropped is not None}
print(json.dumps(out))
`;

test("the export's selection and the veRL loop's (overlong: drop) keep the same samples and leave out the same rollouts", async () => {
  const { ids, all } = records();
  const out = join(scratch.dir, "batch.jsonl");
  const manifest = await exportTrajectories((async function* () { yield* all; })(), { format: "jsonl", out, minGroupSize: 1, maxPromptLength: MAX_PROMPT, maxResponseLength: MAX_RESPONSE });
  const rows = (await Bun.file(out).text()).trim().split("\n").map((l) => JSON.parse(l) as { rollout_id: string; sample_id: string });
  const exported: { [id: string]: { kept: string[]; left_out: boolean } } = {};
  for (const id of ids) exported[id] = { kept: rows.filter((r) => r.rollout_id === id).map((r) => r.sample_id).sort(), left_out: !rows.some((r) => r.rollout_id === id) };

  // The loop's side gets what the trajectory route serves: every sample, auxiliary ones included.
  const trajectories = await Promise.all(ids.map((id) => trajectoryOf(all, id)));
  expect(trajectories.every((t) => t!.samples.some((s) => s.auxiliary === "title"))).toBe(true);
  const proc = Bun.spawn([oraclePython(), "-c", PY], { cwd: join(ROOT, "integrations", "verl"), env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" }, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  proc.stdin.write(JSON.stringify({ prompt: MAX_PROMPT, response: MAX_RESPONSE, trajectories }));
  await proc.stdin.end();
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if (code !== 0) console.error(stderr.slice(-4000));
  expect(code).toBe(0);
  const loop = JSON.parse(stdout.trim().split("\n").at(-1)!);

  expect(loop).toEqual(exported);
  // The cases the fixture is for: a sample and a rollout left out for length, titles left out everywhere.
  expect(exported["long-fork"]!.kept).toEqual(["long-fork#2"]);
  expect(exported["long-final"]!.left_out).toBe(true);
  // long-fork#1, and long-final whole (its title sample too: the length filter runs before the auxiliary drop).
  expect(manifest.length_filter).toMatchObject({ samples_dropped: 1 + 3, rollouts_dropped: 1 });
  expect(manifest.auxiliary.dropped).toBe(3);
});
