/**
 * What restoring an open rollout's token-in chains costs its first call after a restart
 * (docs/token-in.md, "Restart"): a rollout of N calls on one chain (plus a title chain) through a
 * real token-in proxy and the policy simulator, then R restarts; after each, the rollout's token
 * history rebuild (what every open rollout's first call already paid before) and the chain
 * restore (its calls read back whole, the kept chains' Chat requests prepared again) are timed
 * on their own. Prints medians and the ratio; nothing is added to the start itself.
 *
 *   bun bench/token-in-restore.ts [--calls 20] [--restarts 5] [--json]
 */
import { parseArgs } from "node:util";
import { loadModel, QWEN3 } from "../model/index.ts";
import { tokenInOptions } from "../proxy/index.ts";
import { startProxyHarness } from "../proxy/testing.ts";
import { restoreChains } from "../proxy/token-in/restore.ts";

const { values } = parseArgs({ options: { calls: { type: "string", default: "20" }, restarts: { type: "string", default: "5" }, json: { type: "boolean", default: false } } });
const calls = Number(values.calls);
const restarts = Number(values.restarts);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const h = await startProxyHarness({ proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3" }) } });
try {
  const model = await loadModel(QWEN3);
  const r = await h.register({ task_id: "bench" });
  const client = h.client(r);
  const messages: { role: string; content: string }[] = [{ role: "system", content: "You are a coding agent. ".repeat(40) }];
  for (let i = 0; i < calls; i++) {
    messages.push({ role: "user", content: `Step ${i}: ${"read the next file and say what it holds. ".repeat(8)}` });
    const a = await client.chat.completions.create({ model: "qwen3", messages: messages as never });
    messages.push({ role: "assistant", content: (a.choices[0]!.message.content ?? "").trim() });
  }
  await client.chat.completions.create({ model: "qwen3", messages: [{ role: "system", content: "Generate a title for this conversation." }, { role: "user", content: "bench" }] });
  const history: number[] = [];
  const restore: number[] = [];
  let tokens = 0;
  for (let i = 0; i < restarts; i++) {
    await h.restart();
    const state = h.proxy.proxy.state.registry.get(r.rollout_id)!;
    let t = performance.now();
    void state.recent;
    history.push(performance.now() - t);
    t = performance.now();
    await restoreChains(model, state.chains!, r.rollout_id);
    restore.push(performance.now() - t);
    if (state.chains!.list.length !== 2) throw new Error(`restored ${state.chains!.list.length} chains, not 2: ${state.chains!.lostWhy}`);
    tokens = Math.max(...state.chains!.list.map((c) => c.tokens.length));
  }
  const result = { calls: calls + 1, chain_tokens: tokens, history_ms: median(history), restore_ms: median(restore), restore_over_history: median(restore) / median(history) };
  if (values.json) console.log(JSON.stringify(result));
  else
    console.log(
      `rollout of ${result.calls} calls (main chain ${tokens} tokens), median of ${restarts} restarts: token history rebuild ${result.history_ms.toFixed(2)} ms, chain restore ${result.restore_ms.toFixed(2)} ms (${result.restore_over_history.toFixed(1)}x)`,
    );
} finally {
  await h.close();
}
