/**
 * Token-in mode for a rollout served by a trainer's own servers (online veRL: the replicas run
 * vLLM's OpenAI server, whose /v1/completions takes the token-id prompt token-in sends): the
 * calls go to the rollout's servers with its sampling, the harness dropping its reasoning does
 * not split the trajectory (one sample, 0 drift), and each call records the weight version the
 * answering server reported; on /v1/completions and on vLLM's generate route.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { tokenInOptions } from "../../proxy/index.ts";
import { startProxyHarness, upstreamRequestsOf, type ProxyHarness } from "../../proxy/testing.ts";
import { TokenMode } from "../../schemas/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { type StartedPolicySimulator } from "../../simulator/testing.ts";
import { chatCall, echo, expectOneSample, STOCK_TASK, STOCK_TOOLS, type Msg } from "./calls.ts";

const script = { thinking: true, tasks: [STOCK_TASK] };

// /v1/completions (asked for return_weight_versions), and vLLM's generate route (--token-in-route generate: its finished output carries the spans unasked);
// auto finds the generate route on the rollout's own server (its probe goes where the rollout's calls go).
for (const route of ["completions", "generate", "auto"] as const) {
  describe(`online token-in${route ? `, ${route} route` : ""}`, () => {
    let h: ProxyHarness;
    let replica: StartedPolicySimulator;
    beforeAll(async () => {
      h = await startProxyHarness({ sim: { script }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3", route }) } });
      replica = await startPolicySimulator({ seed: 21, script });
      const labelled = await fetch(`${replica.url}/update_weight_version`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ new_version: "5" }) });
      expect(labelled.status).toBe(200);
    });
    afterAll(async () => {
      await h?.close();
      await replica?.stop();
    });

    test("one sample per rollout, served by the rollout's servers, each call with their version", async () => {
      const r = await h.register({ task_id: "stock", upstreams: [`${replica.url}/v1`], policy_version: 5, sampling: { temperature: 0.7, top_p: 0.95 } });
      const messages: Msg[] = [
        { role: "system", content: "You are a coding agent." },
        { role: "user", content: "stock.csv lists items and counts. Write the total to total.txt." },
      ];
      for (let i = 0; i < 5; i++) {
        const a = await chatCall(h, r, { model: "qwen3", tools: STOCK_TOOLS, messages, temperature: 0.1 }, i % 2 === 1);
        messages.push(echo(a)); // the harness sends its turn back without the reasoning
        for (const c of a.toolCalls) messages.push({ role: "tool", tool_call_id: c.id, content: c.name === "read" ? "item,count\nbolts,12\nnuts,30\n" : "ok" });
        if (a.toolCalls.length === 0) break;
      }
      expect(h.sims[0]!.samples).toHaveLength(0); // the proxy's own upstream served nothing
      const samples = replica.samples.filter((s) => s.rollout === r.rollout_id);
      expect(samples).toHaveLength(5);
      const calls = await h.calls(r.rollout_id);
      expect(calls.map((c) => [c.tokenMode, c.upstream, c.servedWeightVersion, c.policyVersion, c.policyVersionMismatch])).toEqual(calls.map(() => [TokenMode.TOKEN_IN, replica.url, "5", 5, ""]));
      const asked = route !== "completions" ? { sampling_params: { temperature: 0.7, top_p: 0.95 } } : { temperature: 0.7, top_p: 0.95, return_weight_versions: true };
      for (const sent of calls.map((c) => JSON.parse(new TextDecoder().decode(c.engineRequest)))) expect(sent).toMatchObject(asked);
      expect(upstreamRequestsOf(calls).length).toBe(5);
      await expectOneSample(h, r.rollout_id, samples);
    }, 120_000);
  });
}
