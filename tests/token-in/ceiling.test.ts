/**
 * A shard's ceiling on the token ids its open token-in rollouts hold (proxy/token-in/held.ts,
 * docs/performance.md "Memory per rollout"): past it a new rollout's first call is refused with a
 * 503 naming the ceiling, while the rollouts already open go on; once one finishes, its chains are
 * released and the refused rollout starts. Also: a rollout's ids are held once (its chain and its
 * prompt-delta history share one array).
 */
import { expect, test } from "bun:test";
import { tokenInOptions } from "../../proxy/index.ts";
import { startProxyHarness } from "../../proxy/testing.ts";
import { chatCall, echo, STOCK_TASK, STOCK_TOOLS, type Msg } from "./calls.ts";

const SLOW = 120_000;
const script = { thinking: true, failure_rate: 0, tasks: [STOCK_TASK] };
const task = "stock.csv lists items and counts. Write the total to total.txt.";

test(
  "past the ceiling a new rollout's first call gets a 503, open rollouts go on, and a finished rollout's chains make room",
  async () => {
    // One rollout's first call (~300 ids) fills a ceiling of 100 ids.
    const h = await startProxyHarness({ sim: { script }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3", maxHeldTokens: 100 }) } });
    try {
      const chat = (r: { api_key: string; openai_base_url: string }, messages: Msg[]) => chatCall(h, r, { model: "qwen3", tools: STOCK_TOOLS, messages }, false);
      const a = await h.register({ task_id: "stock" });
      const b = await h.register({ task_id: "stock" });
      const first: Msg[] = [{ role: "user", content: task }];
      const a1 = await chat(a, first);

      // b is new and the shard is at its ceiling: a clear 503, nothing recorded for b.
      const refused = await fetch(`${b.openai_base_url}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${b.api_key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "qwen3", tools: STOCK_TOOLS, messages: first }),
      });
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("30");
      const error = ((await refused.json()) as { error: { message: string; code: string; type: string } }).error;
      expect(error.code).toBe("shard_full");
      expect(error.type).toBe("service_unavailable");
      expect(error.message).toMatch(/ceiling for token-in rollouts: the chains of its 1 open rollouts hold \d+ token ids, its limit is 100 \(--max-held-tokens/);

      // a is open: it goes on, continuing its chain.
      const a2 = await chat(a, [...first, echo(a1), { role: "tool", tool_call_id: a1.toolCalls[0]!.id, content: "item,count\nbolt,40\nnut,2\n" }]);
      expect(a2.toolCalls.length + a2.content.length).toBeGreaterThan(0);
      const aCalls = await h.calls(a.rollout_id);
      expect(aCalls.map((c) => c.chainId)).toEqual([aCalls[0]!.callId, aCalls[0]!.callId]);

      // Its ids are held once: the chain's prompt and tokens are views of the array the prompt-delta history holds.
      const state = h.proxy.proxy.state.registry.get(a.rollout_id)!;
      const chain = state.chains!.list[0]!;
      const last = state.recent.at(-1)!.tokens as Uint32Array;
      expect(chain.tokens).toBe(last);
      expect((chain.prompt as Uint32Array).buffer).toBe(last.buffer);
      expect(state.recent.every((p) => (p.tokens as Uint32Array).buffer === last.buffer)).toBe(true);

      // a finishes: its chains are released, and b starts.
      expect((await h.control(`/control/rollouts/${a.rollout_id}/finish`, { reward: 1, status: "ok" })).status).toBe(200);
      expect(state.chains).toBeUndefined();
      const b1 = await chat(b, first);
      expect(b1.toolCalls.length).toBe(1);
      expect((await h.calls(b.rollout_id)).length).toBe(1);
    } finally {
      await h.close();
    }
  },
  SLOW,
);

test("--max-held-tokens must be a positive integer", () => {
  expect(() => tokenInOptions({ modelDir: "qwen3", maxHeldTokens: 0 })).toThrow(/--max-held-tokens: expected a positive integer, got 0/);
  expect(tokenInOptions({ modelDir: "qwen3", maxHeldTokens: 5 }).maxHeldTokens).toBe(5);
});
