import { expect, test } from "bun:test";
import { formatTable } from "./table.ts";

test("aligns columns, right-aligns numbers, shows nulls as n/a", () => {
  expect(formatTable([{ harness: "codex", "pass@1": 0.4, n: 3 }, { harness: "claude-code", "pass@1": null, n: 12 }])).toBe(
    ["harness      pass@1   n", "-----------  ------  --", "codex         0.400   3", "claude-code     n/a  12"].join("\n"),
  );
  expect(formatTable([])).toBe("(no rows)");
});
