/**
 * Behaviour metrics on hand-written tool-call sequences in the three protocol shapes
 * (chat plain, Responses streamed, Anthropic streamed), against hand-computed values.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { callRecord, episode, scored } from "../analytics/fixtures.ts";
import { behaviour, queryRows, type Row } from "../analytics/metrics.ts";
import { openAnalytics, type AnalyticsSession } from "../analytics/session.ts";
import { fakeLog } from "../analytics/testing.ts";

let session: AnalyticsSession;

const todos = (...statuses: string[]) => ({ todos: statuses.map((status, i) => ({ content: `item ${i}`, status })) });

// r1, chat: plan (3 items), failing test, patch, passing test, plan update (2 of 3 done).
const r1 = episode("r1", "chat", ["bash", "read_file", "apply_patch", "todo_write"], [
  [{ id: "c1", name: "todo_write", args: todos("pending", "pending", "pending"), result: "ok" }],
  [{ id: "c2", name: "bash", args: { command: "pytest -q" }, result: "Error: 2 failed" }],
  [{ id: "c3", name: "apply_patch", args: { input: "*** Begin Patch" }, result: "Done" }],
  [{ id: "c4", name: "bash", args: { command: "pytest -q" }, result: "3 passed" }],
  [{ id: "c5", name: "todo_write", args: todos("completed", "completed", "pending"), result: "ok" }],
]);
// r2, Responses streamed (Codex shapes): read via shell, failing sed edit (exit 1), plan 1/1, no check after the edit.
const r2 = episode("r2", "responses", ["shell", "update_plan", "read_file"], [
  [{ id: "s1", name: "shell", args: { command: ["bash", "-lc", "cat src/a.py"] }, result: "x = 1", isError: false }],
  [{ id: "s2", name: "shell", args: { command: ["bash", "-lc", "sed -i 's/1/2/' src/a.py"] }, result: "sed: no such file", isError: true }],
  [{ id: "s3", name: "update_plan", args: { plan: [{ step: "fix", status: "completed" }] }, result: "Plan updated" }],
], true);
// r3, Anthropic streamed (Claude Code shapes): read, failed edit (is_error), edit, read-back; two tools in the last call.
const r3 = episode("r3", "anthropic", ["Bash", "Read", "Edit", "TodoWrite", "Grep"], [
  [{ id: "u1", name: "Read", args: { file_path: "a.py" }, result: "x = 1" }],
  [{ id: "u2", name: "Edit", args: { file_path: "a.py", old_string: "y", new_string: "z" }, result: "String not found", isError: true }],
  [{ id: "u3", name: "Edit", args: { file_path: "a.py", old_string: "x", new_string: "y" }, result: "ok", isError: false }],
  [{ id: "u4", name: "Read", args: { file_path: "a.py" }, result: "y = 1" }],
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

async function perRollout(): Promise<Map<string, Row>> {
  const rows = await queryRows(session.connection, "SELECT * FROM rollout_behaviour ORDER BY rollout_id");
  return new Map(rows.map((row) => [row.rollout_id as string, row]));
}

describe("tool_calls view", () => {
  // Step i is made in call i + 1; its result comes back in the request of call i + 2.
  test("joins each tool use with its result across calls, in all three protocols", async () => {
    const rows = await queryRows(
      session.connection,
      "SELECT rollout_id, tool_call_id, tool_name, kind, is_shell, has_result, is_error, result_seq FROM tool_calls ORDER BY rollout_id, ordinal",
    );
    expect(rows.map((row) => Object.values(row))).toEqual([
      ["r1", "c1", "todo_write", "plan", false, true, false, 2],
      ["r1", "c2", "bash", "test", true, true, true, 3],
      ["r1", "c3", "apply_patch", "edit", false, true, false, 4],
      ["r1", "c4", "bash", "test", true, true, false, 5],
      ["r1", "c5", "todo_write", "plan", false, true, false, 6],
      ["r2", "s1", "shell", "read", true, true, false, 2],
      ["r2", "s2", "shell", "edit", true, true, true, 3],
      ["r2", "s3", "update_plan", "plan", false, true, false, 4],
      ["r3", "u1", "Read", "read", false, true, false, 2],
      ["r3", "u2", "Edit", "edit", false, true, true, 3],
      ["r3", "u3", "Edit", "edit", false, true, false, 4],
      ["r3", "u4", "Read", "read", false, true, false, 5],
    ]);
  });
  test("streamed arguments are reassembled", async () => {
    const reader = await session.connection.runAndReadAll("SELECT arguments FROM tool_calls WHERE tool_call_id IN ('s2', 'u2') ORDER BY tool_call_id");
    expect(reader.getRowsJS().map(([args]) => JSON.parse(args as string))).toEqual([
      { command: ["bash", "-lc", "sed -i 's/1/2/' src/a.py"] },
      { file_path: "a.py", old_string: "y", new_string: "z" },
    ]);
  });
});

describe("per rollout", () => {
  test("coverage, verification, recovery, plan, turns, shell share", async () => {
    const rows = await perRollout();
    const pick = (id: string) => {
      const r = rows.get(id)!;
      return [r.tool_coverage, r.edited, r.self_verified, r.tool_errors, r.errors_recovered, r.plan_completion, r.turns, r.tool_calls, r.shell_calls];
    };
    // r1: 3 of 4 tools; pytest after the patch; bash error then bash success; plan 2/3; 6 calls.
    expect(pick("r1")).toEqual([0.75, true, true, 1, 1, 2 / 3, 6, 5, 2]);
    // r2: 2 of 3 tools; nothing checked after the sed edit; the shell error is never followed by a shell success.
    expect(pick("r2")).toEqual([2 / 3, true, false, 1, 0, 1, 4, 3, 2]);
    // r3: 2 of 5 tools; Read after the last Edit; the failed Edit is followed by a good one; no plan.
    expect(pick("r3")).toEqual([0.4, true, true, 1, 1, null, 5, 4, 0]);
    expect(rows.get("r1")!.total_tokens).toBe(6 * 110);
  });
});

describe("grouped", () => {
  test("pooled and averaged as docs/metrics.md says", async () => {
    const [row] = await behaviour(session.connection, []);
    expect(row!.rollouts).toBe(3);
    expect(row!.tool_coverage as number).toBeCloseTo((0.75 + 2 / 3 + 0.4) / 3, 12);
    expect(row!.self_verification as number).toBeCloseTo(2 / 3, 12);
    expect(row!.error_recovery as number).toBeCloseTo(2 / 3, 12);
    expect(row!.plan_completion as number).toBeCloseTo((2 / 3 + 1) / 2, 12);
    expect(row!.turns).toBe(5);
    expect(row!.shell_share as number).toBeCloseTo(4 / 12, 12);
    expect(row!.tokens).toBe(550);
    expect(row!.latency_ms).toBe(50);
    const byHarness = await behaviour(session.connection, ["harness"]);
    expect(byHarness.map((r) => [r.harness, r.self_verification])).toEqual([
      ["claude-code", 1],
      ["codex", 0],
      ["opencode", 1],
    ]);
  });

  test("time to first token over streamed calls only", async () => {
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
      expect(row!.tool_coverage).toBeNull(); // no tools offered
      expect(row!.self_verification).toBeNull(); // no edit
    } finally {
      own.close();
    }
  });
});
