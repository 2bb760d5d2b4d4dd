import { describe, expect, test } from "bun:test";
import { createContentStore } from "../../records/index.ts";
import { callRecord } from "../testing.ts";
import type { ModelCall } from "../../schemas/index.ts";
import type { RolloutTrajectory } from "../../trajectories/index.ts";
import { renderRolloutPage } from "./page.ts";
import { pageName } from "./pages.ts";
import { idTexter } from "./token-text.ts";

function call(seq: number, text: string, history = 0): ModelCall {
  const steps = Array.from({ length: history }, (_, i) => ({ id: `t${i}`, name: "bash", args: { command: "ls" }, result: "a.py" }));
  const record = callRecord({ rollout: "r", seq, protocol: "chat", tools: ["bash"], history: steps, calls: [], text, tokens: { prompt: [1, 2, 3], completion: [4, 5], logprobs: [-0.05, -3] } });
  if (record.kind.case !== "modelCall") throw new Error("fixture");
  return record.kind.value;
}

const trajectory = (kinds: RolloutTrajectory["kinds"]): RolloutTrajectory => ({
  rollout_id: "r", task_id: "t", group: "g", status: "ok", reward: 1, valid: true, samples: [], broken: [],
  stats: { calls: kinds.length, clean: 0, realign: 1, fork: 0, broken: 0, auxiliary: 0, drift_tokens: 7 }, kinds,
});

describe("renderRolloutPage", () => {
  test("drift points, and labels a newer trajectory carries (auxiliary calls) are shown as they come", () => {
    const calls = [call(1, "a"), call(2, "b")];
    const html = renderRolloutPage({
      rolloutId: "r", rollout: undefined, result: undefined, calls, content: createContentStore(), text: idTexter,
      trajectory: trajectory([
        { call_id: "r-1", seq: 1, kind: "start", sample: 0, auxiliary: "title" } as RolloutTrajectory["kinds"][number],
        { call_id: "r-2", seq: 2, kind: "realign", sample: 0 },
      ]),
    });
    expect(html).toContain('<section class="call aux" id="call-1"');
    expect(html).toContain('data-label="auxiliary">auxiliary: title</span>');
    expect(html).toContain('<section class="call drift-point" id="call-2"');
    expect(html).toContain("drift 7 tokens");
    expect(html).toContain("unfinished");
    // Ids as ids without a vocabulary; sampled tokens shaded by probability.
    expect(html).toContain(">⟨4⟩</span>");
    expect(html).toMatch(/data-logprob="-3" style="background:hsl\(0,85%,57%\)"/);
  });

  test("only what is new in each request; a rewritten history is said and shown whole", () => {
    const html = renderRolloutPage({ rolloutId: "r", rollout: undefined, result: undefined, calls: [call(1, "a"), call(2, "b", 1)], content: createContentStore(), trajectory: undefined, text: idTexter });
    // Call 2's request does not begin with call 1's request and answer (the fixture's history differs).
    expect(html).toContain("history rewritten");
    expect(html).toContain("no trajectory");
    expect(html).toContain("no training sample (n/a)");
  });

  test("a body that is not JSON is reported on its call, not thrown", () => {
    const broken = { ...call(1, "a"), requestBody: new TextEncoder().encode("<html>502</html>") };
    const html = renderRolloutPage({ rolloutId: "r", rollout: undefined, result: undefined, calls: [broken], content: createContentStore(), trajectory: undefined, text: idTexter });
    expect(html).toContain("request_body is not JSON");
  });

  test("page names: plain ids as they are, others cleaned with a hash so two ids never share a page", () => {
    expect(pageName("q-1.i0.hello.0")).toBe("q-1.i0.hello.0.html");
    expect(pageName("a/b")).toMatch(/^a_b-[0-9a-f]{10}\.html$/);
    expect(pageName("a/b")).not.toBe(pageName("a_b"));
    expect(pageName("../x")).toMatch(/^\.\._x-[0-9a-f]{10}\.html$/);
  });
});
