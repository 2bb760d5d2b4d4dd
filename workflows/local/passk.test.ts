import { expect, test } from "bun:test";
import { passed } from "./passk.ts";

test("a rollout passes only when ok and at the threshold: the progress line counts what analytics scores", () => {
  expect(passed("ok", 1, 1)).toBe(true);
  expect(passed("ok", 0.75, 0.75)).toBe(true);
  expect(passed("ok", 0.5, 0.75)).toBe(false);
  // A high reward on a rollout that did not finish cleanly is not a pass (analytics' is_success).
  for (const status of ["failed", "timeout", "infra_error"]) expect(passed(status, 1, 1)).toBe(false);
});
