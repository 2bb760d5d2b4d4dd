/**
 * The training selection, one rule on both sides. Online, the veRL loop no longer selects: the
 * proxy's trajectory route applies trajectories/select.ts `selectForTraining` with the loop's
 * settings (`?select=1&…`). Replay reads an exported batch without the proxy, so the loop keeps
 * a copy (forge_verl/samples.py `select_samples`); these tests hold the copies together:
 * - the export's filter (trajectories/select.ts `selectTrainable`: the auxiliary drop and
 *   `--max-prompt-length` / `--max-response-length`) and the loop's `overlong: drop` keep the
 *   same samples and leave out the same rollouts;
 * - `selectForTraining` and `select_samples` agree under every overlong policy and trainer.
 * Runs the loop's code in the pinned veRL environment (.venv/reference), as tests/verl/python.test.ts does.
 */
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { Record as ForgeRecord } from "../../schemas/index.ts";
import { scratchDir } from "../../records/testing.ts";
import { exportTrajectories, selectForTraining, trajectoryOf, type TrainingLimits } from "../../trajectories/index.ts";
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

// Replay reads an exported batch without the proxy, so the loop keeps its own copy of the rule
// (forge_verl/samples.py `select_samples`); online it takes the trajectory route's
// (`selectForTraining`). Both must select alike under every overlong policy and trainer.
const PY_RULE = `
import json, sys
from forge_verl.samples import Limits, select_samples
given = json.load(sys.stdin)
out = []
for case in given:
    lim = case["limits"]
    vision = tuple(lim["vision"]) if lim.get("vision") else None
    limits = Limits(lim.get("maxPromptLength"), lim.get("maxResponseLength"), overlong=lim["overlong"], overlong_reward=lim["overlongReward"], vision=vision)
    samples = sorted(case["samples"], key=lambda s: (bool(s.get("is_final")), int(s.get("sample_index", 0))))
    sel = select_samples(samples, limits, several=not lim["finalOnly"])
    penalized = sel.final_overlong and limits.overlong == "penalize"
    out.append({"samples": [[s["sample_id"], s["prompt_ids"], s["response_ids"], s["response_mask"], s.get("image_refs")] for s in sel.samples], "overlong": sel.overlong, "left_out": sel.left_out, "auxiliary": sel.auxiliary, "truncated": sel.truncated, "final_overlong": sel.final_overlong, "penalized": penalized, "dropped": sel.dropped})
print(json.dumps(out))
`;

test("the route's selection (selectForTraining) and the replay loop's (select_samples) agree under every overlong policy", async () => {
  const [S, P, E] = [1, 5, 2];
  const mk = (id: string, index: number, prompt: number[], response: number[], extra: object = {}) => ({
    sample_id: `${id}#${index}`, rollout_id: id, sample_index: index, prompt_ids: prompt, response_ids: response, response_mask: response.map((_, i) => (i % 3 === 2 ? 0 : 1)),
    response_logprobs: response.map(() => -0.5), is_final: false, auxiliary: null, ...extra,
  });
  const trajectories = [
    [mk("a", 0, span(1, 4), span(100, 3)), mk("a", 1, span(1, 9), span(200, 9), { is_final: true }), mk("a", 2, [9], [8], { auxiliary: "title" })],
    [mk("b", 0, span(1, 12), span(100, 2)), mk("b", 1, span(1, 3), [], { is_final: true })],
    [mk("c", 0, span(1, 3), []), mk("c", 1, span(1, 3), span(100, 2), { is_final: true })],
    [mk("d", 0, [9, S, P, P, E, 9], [7, 7, 3, S, P, P, P, E, 7], { is_final: true, image_refs: ["x", "y"] })],
    [mk("e", 0, [9], [8], { auxiliary: "summary" })],
  ];
  const cases: { limits: object; samples: object[] }[] = [];
  for (const overlong of ["truncate", "penalize", "drop"]) {
    for (const finalOnly of [false, true]) {
      for (const t of trajectories) cases.push({ limits: { auxiliary: "drop", overlong, overlongReward: -1, maxPromptLength: 5, maxResponseLength: 5, vision: [S, P, E], finalOnly }, samples: t });
    }
  }
  const ts = cases.map(({ limits, samples }) => {
    const { samples: kept, reward: _reward, of: _of, ...rest } = selectForTraining(samples as any, 1, limits as TrainingLimits);
    return { samples: kept.map((s: any) => [s.sample_id, s.prompt_ids, s.response_ids, s.response_mask, s.image_refs ?? null]), ...rest };
  });
  const proc = Bun.spawn([oraclePython(), "-c", PY_RULE], { cwd: join(ROOT, "integrations", "verl"), env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" }, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  proc.stdin.write(JSON.stringify(cases));
  await proc.stdin.end();
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if (code !== 0) console.error(stderr.slice(-4000));
  expect(code).toBe(0);
  expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toEqual(ts);
  // The cases the fixture is for: cuts (one moved out of an image), penalties, empty finals, drops.
  expect(ts.some((t) => t.truncated > 0 && t.penalized)).toBe(true);
  expect(ts.some((t) => (t.samples as unknown[][]).some((s) => Array.isArray(s[4]) && (s[4] as string[]).length === 1))).toBe(true);
  expect(ts.some((t) => t.dropped?.includes("empty"))).toBe(true);
  expect(ts.some((t) => t.dropped?.includes("rollout.prompt_length"))).toBe(true);
});
