/**
 * Behaviour metrics on hand-written tool-call sequences in the three protocol shapes (chat plain,
 * Responses streamed, Anthropic streamed), against hand-computed values, and each keyword-era
 * misclassification of issue 20 turned around. The precision/recall evaluation over the labelled
 * set is tests/analytics/labelled.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { callRecord, episode, scored } from "../../analytics/testing.ts";
import { behaviour, queryRows, type Row } from "../../analytics/metrics.ts";
import { openAnalytics, type AnalyticsSession } from "../../analytics/session.ts";
import { fakeLog } from "../../analytics/testing.ts";
import type { Record } from "../../schemas/index.ts";

let session: AnalyticsSession;

const todos = (...statuses: string[]) => ({ todos: statuses.map((status, i) => ({ content: `item ${i}`, status })) });

// r1, chat (opencode-like: plain tool output, no exit codes): plan of 3, a failing test run
// (unknown: nothing structured says so), a patch, a passing test run, plan 2 of 3 done.
const r1 = episode("r1", "chat", ["bash", "read_file", "apply_patch", "todo_write"], [
  [{ id: "c1", name: "todo_write", args: todos("pending", "pending", "pending"), result: "ok" }],
  [{ id: "c2", name: "bash", args: { command: "pytest -q" }, result: "2 failed" }],
  [{ id: "c3", name: "apply_patch", args: { input: "*** Begin Patch\n*** Update File: a.py\n*** End Patch" }, result: "Done" }],
  [{ id: "c4", name: "bash", args: { command: "pytest -q" }, result: "3 passed" }],
  [{ id: "c5", name: "todo_write", args: todos("completed", "completed", "pending"), result: "ok" }],
]);
// r2, Responses streamed (Codex shapes: JSON output with metadata.exit_code): read via shell, a
// failing test run never retried (exit 1), a sed edit, plan 1/1, nothing checked after the edit.
const r2 = episode("r2", "responses", ["shell", "update_plan", "read_file"], [
  [{ id: "s1", name: "shell", args: { command: ["bash", "-lc", "cat src/a.py"] }, result: "x = 1", isError: false }],
  [{ id: "s2", name: "shell", args: { command: ["bash", "-lc", "pytest -q"] }, result: "1 failed", isError: true }],
  [{ id: "s3", name: "shell", args: { command: ["bash", "-lc", "sed -i 's/1/2/' src/a.py"] }, result: "", isError: false }],
  [{ id: "s4", name: "update_plan", args: { plan: [{ step: "fix", status: "completed" }] }, result: "Plan updated" }],
], true);
// r3, Anthropic streamed (Claude Code shapes): read, failed edit (is_error), edit, read-back.
const r3 = episode("r3", "anthropic", ["Bash", "Read", "Edit", "TodoWrite", "Grep"], [
  [{ id: "u1", name: "Read", args: { file_path: "/w/a.py" }, result: "x = 1" }],
  [{ id: "u2", name: "Edit", args: { file_path: "/w/a.py", old_string: "y", new_string: "z" }, result: "String not found", isError: true }],
  [{ id: "u3", name: "Edit", args: { file_path: "/w/a.py", old_string: "x", new_string: "y" }, result: "ok", isError: false }],
  [{ id: "u4", name: "Read", args: { file_path: "/w/a.py" }, result: "y = 1" }],
], true);

beforeAll(async () => {
  const log = await fakeLog();
  await log.addSegment([
    ...scored({ id: "r1", task: "T", harness: "opencode" }, "ok", 1),
    ...scored({ id: "r2", task: "T", harness: "codex" }, "failed", 0),
    ...scored({ id: "r3", task: "T", harness: "claude-code" }, "ok", 1),
    ...r1,
    ...r2,
    ...r3,
  ]);
  session = await openAnalytics(log.dir, { readSegment: log.readSegment });
});
afterAll(() => session.close());

async function perRollout(own: AnalyticsSession = session): Promise<Map<string, Row>> {
  const rows = await queryRows(own.connection, "SELECT * FROM rollout_behaviour ORDER BY rollout_id");
  return new Map(rows.map((row) => [row.rollout_id as string, row]));
}

describe("tool_calls view", () => {
  // Step i is made in call i + 1; its result comes back in the request of call i + 2.
  test("joins each tool use with its result across calls, in all three protocols, with structured error signals", async () => {
    const rows = await queryRows(
      session.connection,
      "SELECT rollout_id, tool_call_id, tool_name, kind, is_shell, has_result, is_error, error_signal, result_seq FROM tool_calls ORDER BY rollout_id, ordinal",
    );
    expect(rows.map((row) => Object.values(row))).toEqual([
      ["r1", "c1", "todo_write", "plan", false, true, null, null, 2],
      ["r1", "c2", "bash", "test", true, true, null, null, 3], // "2 failed" is words, not a signal
      ["r1", "c3", "apply_patch", "edit", false, true, null, null, 4],
      ["r1", "c4", "bash", "test", true, true, null, null, 5],
      ["r1", "c5", "todo_write", "plan", false, true, null, null, 6],
      ["r2", "s1", "shell", "read", true, true, false, "exit_code", 2],
      ["r2", "s2", "shell", "test", true, true, true, "exit_code", 3],
      ["r2", "s3", "shell", "edit", true, true, false, "exit_code", 4],
      ["r2", "s4", "update_plan", "plan", false, true, null, null, 5],
      ["r3", "u1", "Read", "read", false, true, false, "flag", 2],
      ["r3", "u2", "Edit", "edit", false, true, true, "flag", 3],
      ["r3", "u3", "Edit", "edit", false, true, false, "flag", 4],
      ["r3", "u4", "Read", "read", false, true, false, "flag", 5],
    ]);
    const files = await queryRows(session.connection, "SELECT rollout_id, ordinal, op, path FROM tool_files ORDER BY rollout_id, ordinal, op");
    expect(files.map((f) => Object.values(f))).toEqual([
      ["r1", 3, "write", "a.py"],
      ["r2", 1, "read", "src/a.py"],
      ["r2", 3, "write", "src/a.py"],
      ["r3", 1, "read", "/w/a.py"],
      // u2's edit reported an error: it wrote nothing.
      ["r3", 3, "write", "/w/a.py"],
      ["r3", 4, "read", "/w/a.py"],
    ]);
  });
});

describe("per rollout", () => {
  test("coverage, verification, recovery, plan evidence, turns, shell share", async () => {
    const rows = await perRollout();
    const pick = (id: string) => {
      const r = rows.get(id)!;
      return [r.tool_coverage, r.edited, r.self_verified, r.tool_errors, r.errors_recovered, r.plan_completion, r.turns, r.tool_calls, r.shell_calls, r.ran_checks];
    };
    // r1: 3 of 4 tools; pytest after the patch; no known error; 2 items completed after 3 actions: 2/3.
    expect(pick("r1")).toEqual([0.75, true, true, 0, 0, 2 / 3, 6, 5, 2, true]);
    // r2: 2 of 3 tools; nothing checked after the sed edit; the failed pytest never retried; the plan item has evidence.
    expect(pick("r2")).toEqual([2 / 3, true, false, 1, 0, 1, 5, 4, 3, true]);
    // r3: 2 of 5 tools; a.py read back after the last edit; the failed Edit of a.py retried successfully.
    expect(pick("r3")).toEqual([0.4, true, true, 1, 1, null, 5, 4, 0, false]);
    expect(rows.get("r1")!.total_tokens).toBe(6 * 110);
    expect([rows.get("r1")!.tool_results, rows.get("r1")!.tool_results_known]).toEqual([5, 0]);
  });
});

/** One rollout's behaviour row from its own data dir. */
async function behaviourOf(records: Record[], id: string): Promise<Row> {
  const log = await fakeLog();
  await log.addSegment([...scored({ id, task: "T" }, "ok", 1), ...records]);
  const own = await openAnalytics(log.dir, { readSegment: log.readSegment });
  try {
    return (await perRollout(own)).get(id)!;
  } finally {
    own.close();
  }
}

// forge-react's bash tool answers "exit code N" on its first line.
const bash = (id: string, command: string, code: number, output = "") => ({ id, name: "bash", args: { command }, result: `exit code ${code}\n${output}` });

describe("the keyword heuristics' misclassifications (issue 20)", () => {
  test("`echo ok` after an edit is not a verification", async () => {
    const row = await behaviourOf(episode("m1", "chat", ["bash"], [[bash("a", "echo x > a.py", 0)], [bash("b", "echo ok", 0, "ok")]]), "m1");
    expect([row.edited, row.self_verified]).toEqual([true, false]);
  });

  test("a failed pytest then `echo giving up` is not a recovery", async () => {
    const row = await behaviourOf(episode("m2", "chat", ["bash"], [[bash("a", "pytest -q", 1, "1 failed")], [bash("b", "echo giving up", 0)]]), "m2");
    expect([row.tool_errors, row.errors_recovered]).toEqual([1, 0]);
    const retried = await behaviourOf(episode("m2b", "chat", ["bash"], [[bash("a", "pytest -q", 1)], [bash("b", "sed -i 's/x/y/' a.py && pytest -q tests/", 0)]]), "m2b");
    expect([retried.tool_errors, retried.errors_recovered]).toEqual([1, 1]);
  });

  test("a plan marked all completed with nothing done scores 0", async () => {
    const row = await behaviourOf(episode("m3", "anthropic", ["TodoWrite", "Bash"], [[{ id: "p", name: "TodoWrite", args: todos("completed", "completed", "completed"), result: "ok" }]]), "m3");
    expect([row.plan_items, row.plan_items_marked, row.plan_items_evidenced, row.plan_completion]).toEqual([3, 3, 0, 0]);
  });

  test("reading a file whose text starts with \"Error:\" is no tool error", async () => {
    const row = await behaviourOf(episode("m4", "chat", ["read_file"], [[{ id: "r", name: "read_file", args: { path: "NOTES.md" }, result: "Error: handling in this module…" }]]), "m4");
    expect([row.tool_errors, row.tool_results_known]).toEqual([0, 0]);
  });

  test("`python3 -c 'print(2>1)'`, `pytest > out.txt` and the editor's view edit nothing", async () => {
    const row = await behaviourOf(
      episode("m5", "anthropic", ["bash", "str_replace_based_edit_tool"], [
        [{ id: "a", name: "bash", args: { command: "python3 -c 'print(2>1)'" }, result: "True" }],
        [{ id: "b", name: "bash", args: { command: "pytest > out.txt" }, result: "", isError: false }],
        [{ id: "c", name: "str_replace_based_edit_tool", args: { command: "view", path: "a.py" }, result: "x = 1" }],
      ]),
      "m5",
    );
    expect([row.edited, row.self_verified, row.ran_checks]).toEqual([false, null, true]);
  });

  test("a harness that reuses tool-call ids: one error, one recovery", async () => {
    // The same id "call_0" in two turns: the n-th use gets the n-th result.
    const row = await behaviourOf(episode("m6", "chat", ["bash"], [[bash("call_0", "pytest", 1, "1 failed")], [bash("call_0", "pytest", 0, "1 passed")]]), "m6");
    expect([row.tool_errors, row.errors_recovered]).toEqual([1, 1]);
  });

  test("tool coverage leaves out finish", async () => {
    const both = await behaviourOf(episode("m7", "chat", ["bash", "finish"], [[bash("a", "ls", 0)], [{ id: "f", name: "finish", args: { answer: "x" }, result: "" }]]), "m7");
    expect(both.tool_coverage).toBe(1);
    const onlyFinish = await behaviourOf(episode("m8", "chat", ["bash", "read_file", "finish"], [[{ id: "f", name: "finish", args: {}, result: "" }]]), "m8");
    expect(onlyFinish.tool_coverage).toBe(0);
  });
});

describe("grouped", () => {
  test("pooled and averaged as docs/metrics.md says, each with its n", async () => {
    const [row] = await behaviour(session.connection, []);
    expect(row!.rollouts).toBe(3);
    expect(row!.tool_coverage as number).toBeCloseTo((0.75 + 2 / 3 + 0.4) / 3, 12);
    expect(row!.tool_coverage_n).toBe(3);
    expect([row!.self_verification, row!.self_verification_n]).toEqual([2 / 3, 3]);
    expect([row!.error_recovery, row!.error_recovery_n]).toEqual([0.5, 2]);
    expect([row!.plan_completion, row!.plan_completion_n]).toEqual([(2 / 3 + 1) / 2, 2]);
    expect(row!.ran_checks).toBeCloseTo(2 / 3, 12);
    expect([row!.error_signal_share, row!.tool_results]).toEqual([7 / 13, 13]); // r2: three exit codes, r3: four flags
    expect(row!.turns).toBeCloseTo(16 / 3, 12);
    expect(row!.shell_share as number).toBeCloseTo(5 / 13, 12);
    expect(row!.tokens).toBeCloseTo((660 + 550 + 550) / 3, 12);
    expect(row!.latency_ms).toBe(50);
    const byHarness = await behaviour(session.connection, ["harness"]);
    expect(byHarness.map((r) => [r.harness, r.self_verification])).toEqual([
      ["claude-code", 1],
      ["codex", 0],
      ["opencode", 1],
    ]);
  });

  test("time to first token over streamed calls only; n/a without tools", async () => {
    const log = await fakeLog();
    const base = { rollout: "t1", protocol: "chat" as const, tools: [], history: [], calls: [] };
    await log.addSegment([
      ...scored({ id: "t1", task: "T" }, "ok", 1),
      callRecord({ ...base, seq: 1, stream: true, ttftMs: 20, latencyMs: 100 }),
      callRecord({ ...base, seq: 2, stream: true, ttftMs: 40, latencyMs: 200 }),
      callRecord({ ...base, seq: 3, stream: false, latencyMs: 300 }),
    ]);
    const own = await openAnalytics(log.dir, { readSegment: log.readSegment });
    try {
      const [row] = await behaviour(own.connection, []);
      expect(row!.ttft_ms).toBe(30);
      expect(row!.latency_ms).toBe(200);
      expect([row!.tool_coverage, row!.tool_coverage_n]).toEqual([null, 0]); // no tools offered
      expect([row!.self_verification, row!.self_verification_n]).toEqual([null, 0]); // no edit
    } finally {
      own.close();
    }
  });
});
