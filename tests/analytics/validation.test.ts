/**
 * A trainer's validation rollouts (label openforge.dev/validation, veRL's `_validate` pass) are
 * reported apart: not in `rollouts` (so no pass rate or reward figure mixes them with training
 * rollouts), in `validation_rollouts`, and both in `all_rollouts` with a `validation` column.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { scored } from "../../analytics/testing.ts";
import { openAnalytics, type AnalyticsSession } from "../../analytics/session.ts";
import { fakeLog } from "../../analytics/testing.ts";
import { VALIDATION_LABEL } from "../../schemas/index.ts";

let session: AnalyticsSession;
beforeAll(async () => {
  const log = await fakeLog();
  await log.addSegment([
    ...scored({ id: "t0", task: "A", attempt: 0 }, "failed", 0),
    ...scored({ id: "t1", task: "A", attempt: 1 }, "ok", 1),
    ...scored({ id: "v0", task: "A", attempt: 2, labels: { [VALIDATION_LABEL]: "true" } }, "ok", 1),
    ...scored({ id: "v1", task: "A", attempt: 3, labels: { [VALIDATION_LABEL]: "true" } }, "ok", 1),
  ]);
  session = await openAnalytics(log.dir, { readSegment: log.readSegment });
});
afterAll(() => session.close());

async function rows(sql: string): Promise<Record<string, unknown>[]> {
  return (await session.connection.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
}

test("validation rollouts are reported apart from training rollouts", async () => {
  expect(await rows("SELECT rollout_id, validation FROM all_rollouts ORDER BY rollout_id")).toEqual([
    { rollout_id: "t0", validation: false },
    { rollout_id: "t1", validation: false },
    { rollout_id: "v0", validation: true },
    { rollout_id: "v1", validation: true },
  ]);
  expect(await rows("SELECT rollout_id FROM rollouts ORDER BY rollout_id")).toEqual([{ rollout_id: "t0" }, { rollout_id: "t1" }]);
  expect(await rows("SELECT rollout_id FROM validation_rollouts ORDER BY rollout_id")).toEqual([{ rollout_id: "v0" }, { rollout_id: "v1" }]);
  // The training success rate is 1 of 2, not 3 of 4.
  expect(await rows("SELECT avg(CASE WHEN success THEN 1 ELSE 0 END) AS rate FROM rollouts")).toEqual([{ rate: 0.5 }]);
});
