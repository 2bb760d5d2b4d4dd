/**
 * What a rollout's calls leave in the proxy's memory once they are answered: nothing per call.
 * The registry keeps every rollout (finished ones too, for GET /control/rollouts/:id), so
 * anything a call hangs on its rollout stays for the life of the process; a call's abort
 * signal made with `AbortSignal.any` over the rollout's did (with its listener, its
 * controller and its request body: ~15 KB a call, state/cancel.ts), which a training run's
 * proxy serving millions of calls would have grown by until it ran out of memory.
 */
import { describe, expect, test } from "bun:test";
import { heapStats } from "bun:jsc";
import { startProxyHarness } from "../../proxy/testing.ts";

const TYPES = ["AbortSignal", "AbortController", "Uint8Array", "Function", "JSLexicalEnvironment"] as const;

/** Live objects of TYPES after a full collection (the proxy runs in this process). */
function liveCounts(): Record<string, number> {
  Bun.gc(true);
  const counts = heapStats().objectTypeCounts;
  return Object.fromEntries(TYPES.map((t) => [t, counts[t] ?? 0]));
}

describe("a rollout's answered calls", () => {
  test("leave no signal, listener or body behind, streamed or not, open or finished", async () => {
    const h = await startProxyHarness();
    try {
      const r = await h.register();
      const client = h.client(r);
      const calls = async (n: number) => {
        for (let i = 0; i < n; i++) {
          const messages = [{ role: "user" as const, content: `call ${i}: ${"word ".repeat(400)}` }];
          if (i % 2 === 0) await client.chat.completions.create({ model: "qwen3", messages });
          else for await (const _ of await client.chat.completions.create({ model: "qwen3", messages, stream: true }));
        }
      };
      // The code paths run once first (the first call builds what every later one shares).
      await calls(6);
      const before = liveCounts();
      await calls(40);
      const open = liveCounts();
      expect((await h.control(`/control/rollouts/${r.rollout_id}/finish`, { reward: 1, status: "ok" })).status).toBe(200);
      const finished = liveCounts();
      // 40 calls: the leak was 1-3 of each type per call; a few may be the runtime's own.
      const grown = (after: Record<string, number>) => TYPES.map((t) => [t, after[t]! - before[t]!] as const).filter(([, n]) => n >= 12);
      expect(grown(open)).toEqual([]);
      expect(grown(finished)).toEqual([]);
    } finally {
      await h.close();
    }
  });
});
