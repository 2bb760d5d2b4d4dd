/**
 * Bytes stored per rollout with delta prompts (prefix_of + prefix_len + suffix) versus full
 * prompts, on a 30-turn tool-loop rollout run through the real proxy and policy simulator.
 * Each recorded ModelCall is encoded as written and again with its full prompt inlined.
 *
 *   bun bench/delta.ts [--turns 30]
 */
import { parseArgs } from "node:util";
import { readRecords } from "../records/index.ts";
import { startProxyHarness } from "../proxy/testing.ts";
import { collectRollouts } from "../trajectories/index.ts";
import { clone } from "@bufbuild/protobuf";
import { ModelCallSchema, RecordSchema, create, toBinary } from "../schemas/index.ts";

const { values } = parseArgs({ options: { turns: { type: "string", default: "30" } } });
const turns = Number(values.turns);
const steps = Array.from({ length: turns - 1 }, (_, i) => ({ think: `Step ${i}: check the next file.`, bash: `cat src/file_${i}.ts | head -40` }));
const script = { thinking: true, tasks: [{ name: "long", match: "refactor", steps: [...steps, { finish: "refactored" }] }] };
const h = await startProxyHarness({ sim: { script } });
try {
  const r = await h.register({ task_id: "long" });
  const tools = [{ type: "function", function: { name: "bash", parameters: { type: "object", properties: { command: { type: "string" } } } } }];
  const messages: any[] = [{ role: "system", content: "You are a careful coding agent. ".repeat(40) }, { role: "user", content: "Please refactor the project." }];
  for (let i = 0; i < turns; i++) {
    const a = await h.client(r).chat.completions.create({ model: "qwen3", messages, tools } as any);
    const m = a.choices[0]!.message as any;
    messages.push({ role: "assistant", content: m.content ?? "", tool_calls: m.tool_calls?.length ? m.tool_calls : undefined, reasoning_content: m.reasoning_content });
    for (const tc of m.tool_calls ?? []) messages.push({ role: "tool", tool_call_id: tc.id, content: `// output of ${tc.function.arguments}\n${"export const x = 1;\n".repeat(30)}` });
    if (!m.tool_calls?.length) break;
  }
  await h.control(`/control/rollouts/${r.rollout_id}/finish`, { reward: 1, status: "ok" });
  let delta = 0;
  let full = 0;
  let deltaTokens = 0;
  let fullTokens = 0;
  let calls = 0;
  for await (const c of collectRollouts(readRecords(h.dataDir))) {
    if (c.rolloutId !== r.rollout_id) continue;
    for (const resolved of c.calls) {
      calls++;
      const call = resolved.call;
      const inline = clone(ModelCallSchema, call);
      inline.promptTokenIds = [...resolved.prompt!];
      inline.prefixOf = "";
      inline.prefixLen = 0;
      delta += toBinary(RecordSchema, create(RecordSchema, { kind: { case: "modelCall", value: call } })).length;
      full += toBinary(RecordSchema, create(RecordSchema, { kind: { case: "modelCall", value: inline } })).length;
      // the token view alone (what the delta rule is about): ids + logprobs + prefix fields
      const tokensOnly = (x: typeof call) =>
        toBinary(ModelCallSchema, create(ModelCallSchema, { promptTokenIds: x.promptTokenIds, completionTokenIds: x.completionTokenIds, completionLogprobs: x.completionLogprobs, prefixOf: x.prefixOf, prefixLen: x.prefixLen })).length;
      deltaTokens += tokensOnly(call);
      fullTokens += tokensOnly(inline);
    }
  }
  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  console.log(`rollout of ${calls} calls (${turns}-turn script), final prompt ${messages.length} messages`);
  console.log(`whole ModelCall records: delta ${kib(delta)}  full ${kib(full)}  full/delta ${(full / delta).toFixed(2)}x`);
  console.log(`token view only:         delta ${kib(deltaTokens)}  full ${kib(fullTokens)}  full/delta ${(fullTokens / deltaTokens).toFixed(2)}x`);
  console.log("(the request bodies, which hold the conversation as JSON text, are stored in both cases)");
} finally {
  await h.close();
}
