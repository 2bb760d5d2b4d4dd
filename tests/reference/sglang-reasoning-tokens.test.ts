/**
 * SGLang's reasoning-token count (meta_info.reasoning_tokens, the OpenAI usage's
 * `reasoning_tokens`) as the policy simulator's SGLang flavour writes it
 * (`sglangReasoningTokens`, simulator/flavours/sglang.ts), held to SGLang 0.5.23's scheduler
 * through the oracle's `sglang_reasoning_tokens` (its Req counters and
 * `_maybe_update_reasoning_tokens`, run per sampled token; .venv/sglang-native): after every
 * token, with and without `require_reasoning`, with the qwen3 reasoning parser and with none,
 * on the simulator's own generations (thinking then a tool call, then content; cut inside the
 * think block; thinking off) and on ids that open no think block. The chat route's choice of
 * `require_reasoning` is not held here: serving_chat imports in neither venv.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generate } from "../../simulator/generate.ts";
import { loadTokenizer } from "../../simulator/model.ts";
import { sglangReasoningTokens } from "../../simulator/flavours/sglang.ts";
import { sglangNativeSkipReason, startOracle, type Oracle } from "./oracle.ts";

const SLOW = 300_000;
const nativeSkip = sglangNativeSkipReason();
if (nativeSkip) console.log(`SGLang reasoning-token suite: ${nativeSkip}`);

let native: Oracle;
beforeAll(async () => {
  if (!nativeSkip) native = await startOracle({ venv: "sglang-native" });
}, SLOW);
afterAll(async () => {
  await native?.close();
});

describe.skipIf(Boolean(nativeSkip))("SGLang 0.5.23's scheduler reasoning-token count", () => {
  test(
    "the simulator's count after every token equals the scheduler's, with and without require_reasoning and a reasoning parser",
    async () => {
      const tokenizer = await loadTokenizer();
      const call = { name: "bash", arguments: '{"command": "ls"}' };
      const outputs = [
        generate(tokenizer, { reasoning: "Let me look.", content: "", toolCalls: [call] }, { thinking: true }).ids,
        generate(tokenizer, { reasoning: "Done, ünïcödé.", content: "All done.", toolCalls: [] }, { thinking: true }).ids,
        generate(tokenizer, { reasoning: "A long thought that gets cut.", content: "x", toolCalls: [] }, { thinking: true, maxTokens: 5 }).ids,
        generate(tokenizer, { content: "No thinking.", toolCalls: [] }, { thinking: false }).ids,
        tokenizer.encode("plain </think> then more"),
      ];
      let checked = 0;
      for (const ids of outputs) {
        for (const reasoning_parser of ["qwen3", null]) {
          for (const require_reasoning of [true, false]) {
            const ref = (await native.call({ op: "sglang_reasoning_tokens", ids, reasoning_parser, require_reasoning })) as { counts: number[] };
            const ours = ids.map((_, i) => (reasoning_parser ? sglangReasoningTokens(ids.slice(0, i + 1), require_reasoning) : 0));
            expect(ours).toEqual(ref.counts);
            checked++;
          }
        }
      }
      // The cases are not all zero: thinking counted through </think>, a cut answer wholly.
      expect(sglangReasoningTokens(outputs[0]!, true)).toBeGreaterThan(3);
      expect(sglangReasoningTokens(outputs[2]!, true)).toBe(5);
      console.log(`SGLang reasoning-token suite: ${checked} outputs held to the scheduler's count after every token`);
    },
    SLOW,
  );
});
